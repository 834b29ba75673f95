"""Option values of `tide sim ...` without importing pydantic.

Typer (0.2x) coerces every option value, default or given, through a
pydantic TypeAdapter built on first use: importing pydantic and building the
adapters costs about 90 ms of CPU per command, a sixth of a whole SDSC-SP2
replay. `install()` puts a plain coercion in front for the option types the
twin's commands use (str, int, float, bool, Path) and for the values whose
result is certain: a value already of the type, a plain decimal integer or number
(pydantic gives what int() and float() give for those; tests/sim/test_cli_sim.py
checks), a non-empty path string; an int or float option with a min/max
(IntRange/FloatRange, no clamp) when the value lies in the range. Anything else
goes to Typer's own coercion, with its messages. If Typer's internals are not
what this expects, nothing is installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,18}(\.[0-9]{1,18})?")


def install() -> bool:
    """Route typer.core's coercion through the plain one; False if Typer differs."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam, TypeDescriptor
        from typer._param_types import coerce_cli_path
    except ImportError:
        return False
    original: Any = getattr(core, "build_runtime_param", None)
    if original is None or getattr(original, "_tide_plain", False):
        return original is not None
    fields = getattr(TypeDescriptor, "__dataclass_fields__", {})
    if not {"annotation", "parameter_info", "file_annotation"} <= set(fields):
        return False

    @dataclass(frozen=True)
    class PlainParam(RuntimeParam):  # type: ignore[misc]
        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = self._plain(value, param, ctx)
            if out is not _FULL and _within(out, self.parameter_info):
                return out
            full = original(self.descriptor)
            return full._coerce_value(value, param=param, ctx=ctx)

        def _plain(self, value: Any, param: Any, ctx: Any) -> Any:
            ann = self.annotation
            if ann is bool and type(value) is bool:
                return value
            if ann is str and isinstance(value, str):
                return value
            if ann is int and type(value) is int:
                return value
            if ann is int and isinstance(value, str) and _INT.fullmatch(value):
                return int(value)
            if ann is float and type(value) is float:
                return value
            if ann is float and isinstance(value, str) and _FLOAT.fullmatch(value):
                return float(value)
            if ann is Path and isinstance(value, Path | str) and value != "":
                info = self.parameter_info
                path_type = info.path_type or Path
                if path_type is Path:  # what Typer does once pydantic made the Path
                    return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
            return _FULL

    def plain_runtime_param(descriptor: Any) -> Any:
        info = descriptor.parameter_info
        plain = (
            descriptor.file_annotation is None
            and descriptor.annotation in (str, int, float, bool, Path)
            and getattr(info, "parser", None) is None
            and not getattr(info, "clamp", False)
        )
        if not plain:
            return original(descriptor)
        return PlainParam(
            parameter_info=info, annotation=descriptor.annotation, descriptor=descriptor
        )

    plain_runtime_param._tide_plain = True  # type: ignore[attr-defined]
    core.build_runtime_param = plain_runtime_param
    return True


_FULL = object()  # the plain coercion does not decide: Typer's own does


def _within(value: Any, info: Any) -> bool:
    """An int or float option's min/max (Typer's ge/le, no clamp): a value out of
    range goes to Typer's coercion, which refuses it with its own message."""
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    if (low is None and high is None) or type(value) not in (int, float):
        return True
    return (low is None or value >= low) and (high is None or value <= high)
