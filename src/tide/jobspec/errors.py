"""The one error the sbatch readers raise: the option, the bad value, what is accepted."""

from __future__ import annotations


class JobSpecError(ValueError):
    """A job option tide cannot use. `str()` is one line a user can act on:

    --time=abc: not a time; use minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S (e.g. --time=2:00:00)

    `where` says where the option came from when that is not the command line
    ("line 4" of the batch script, or the "SBATCH_TIMELIMIT" variable).
    An empty `option` is a problem with the script as a whole.
    """

    def __init__(
        self, option: str, value: str | None, accepted: str, where: str = ""
    ) -> None:
        self.option = option
        self.value = value
        self.accepted = accepted
        self.where = where
        super().__init__(self.message)

    @property
    def message(self) -> str:
        if not self.option:
            text = self.accepted
        elif self.value is None:
            text = f"{self.option}: {self.accepted}"
        else:
            text = f"{self.option}={self.value}: {self.accepted}"
        return f"{self.where}: {text}" if self.where else text

    def located(self, where: str) -> JobSpecError:
        """The same error, saying where the option was read."""
        return JobSpecError(self.option, self.value, self.accepted, where)

    def __str__(self) -> str:
        return self.message
