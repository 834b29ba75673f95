"""What the options said so far, layer by layer (script, environment, command
line), before they become a JobRequest.

Each option's value is kept with where it came from, because sbatch's
cross-option rules depend on it: two of --mem/--mem-per-cpu/--mem-per-gpu
given in the script or on the command line are an error, while one given in
the environment simply loses to one given in the script or on the command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Origin(StrEnum):
    SCRIPT = "script"  # an #SBATCH line
    ENV = "env"  # an SBATCH_* variable
    CLI = "cli"  # the command line


@dataclass(slots=True)
class Setting:
    value: Any
    origin: Origin
    seq: int  # order of setting, across all layers


@dataclass(slots=True)
class State:
    now: float = 0.0
    max_array_size: int = 4_000_001  # the site's MaxArraySize (task ids below it)
    settings: dict[str, Setting] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    _seq: int = 0

    def put(self, key: str, value: Any, origin: Origin) -> None:
        self._seq += 1
        self.settings[key] = Setting(value, origin, self._seq)

    def drop(self, key: str) -> None:
        self.settings.pop(key, None)

    def get(self, key: str, default: Any = None) -> Any:
        found = self.settings.get(key)
        return default if found is None else found.value

    def has(self, key: str) -> bool:
        return key in self.settings

    def given(self, key: str) -> bool:
        """Set in the script or on the command line (sbatch's "set by cli")."""
        found = self.settings.get(key)
        return found is not None and found.origin is not Origin.ENV

    def from_env(self, key: str) -> bool:
        found = self.settings.get(key)
        return found is not None and found.origin is Origin.ENV

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)
