"""Names of a package loaded on first use (PEP 562 module __getattr__).

A package lists where each name lives; the first access imports that module
and keeps the value in the package, so later accesses cost nothing. Keep a
name different from its module's name: importing a submodule sets the
package attribute of that name to the module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str],
               namespace: dict[str, Any]) -> Callable[[str], Any]:  # fmt: skip
    """The package's `__getattr__`: `homes` maps a name to its module in the package."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__


__all__ = ["lazy_names"]
