"""The one error the config readers raise: where, what, and how to fix it."""

from __future__ import annotations


class ConfigError(ValueError):
    """A config input tide cannot use. `str()` is one line a user can act on:

    slurm.conf:12: CPUs='abc' is not a number; write a positive integer such as CPUs=64
    """

    def __init__(self, file: str, line: int | None, problem: str, fix: str = "") -> None:
        self.file = file
        self.line = line
        self.problem = problem
        self.fix = fix
        super().__init__(self.message)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def message(self) -> str:
        text = f"{self.where}: {self.problem}"
        return f"{text}; {self.fix}" if self.fix else text

    def __str__(self) -> str:
        return self.message


class Warnings(list[str]):
    """Warnings collected while reading; never fatal. Adds the file:line prefix."""

    def add(self, file: str, line: int | None, text: str) -> None:
        where = f"{file}:{line}" if line else file
        self.append(f"{where}: {text}")
