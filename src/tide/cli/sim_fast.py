"""`tide sim run` without Typer: its options parsed from the same table.

Loading Typer (with Click and its Rich help) and building the command costs
about 0.05-0.1 s of CPU, a fifth of a whole SDSC-SP2 replay. `parse` reads
the argv of `tide sim run` with tide.cli.replay's option table where the
result is certain: known options (`--name value`, `--name=value`, `-w value`),
values converted as Typer converts them (a plain decimal integer or number,
bounds met, a non-empty path). Anything else (--help, an unknown option, a
value Typer might read differently or refuse) gives None, and the command goes
through Typer, which prints its own help or error naming the option.
tests/sim/test_sim_fast.py checks both against Typer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from pathlib import Path
from typing import Any

from tide.cli.replay import REPLAY_OPTIONS, RUN_OUT, RUN_POLICY, OptionSpec, Replay

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,18}(\.[0-9]{1,18})?")
_SPECS = (RUN_POLICY, *REPLAY_OPTIONS)
_BY_FLAG = {flag: spec for spec in _SPECS for flag in spec.flags}


def parse(argv: list[str]) -> tuple[str, Replay] | None:
    """(policy, replay options) of `tide sim run ARGV`, or None: let Typer parse it."""
    values: dict[str, Any] = {s.name: s.default for s in _SPECS}
    values["out"] = RUN_OUT
    i = 0
    while i < len(argv):
        flag, eq, given = argv[i].partition("=")
        spec = _BY_FLAG.get(flag)
        if spec is None or (eq and not flag.startswith("--")):
            return None  # unknown, --help, -- or a positional, -w=x
        if spec.kind is bool:
            if eq:
                return None  # Click refuses a value for a flag
            values[spec.name] = True
            i += 1
            continue
        if not eq:
            if i + 1 >= len(argv):
                return None  # the value is missing
            given, i = argv[i + 1], i + 1
        value = _convert(spec, given)
        if value is None:
            return None
        values[spec.name] = value  # the last one wins, as in Click
        i += 1
    policy = values.pop("policy")
    return policy, Replay(**values)


def _convert(spec: OptionSpec, text: str) -> Any:
    """Typer's value for `text`, where certain; None otherwise."""
    if spec.kind is str:
        return text
    if spec.kind is Path:
        return _path(text)
    if spec.kind is int and _INT.fullmatch(text):
        value: float = int(text)
    elif spec.kind is float and _FLOAT.fullmatch(text):
        value = float(text)
    else:
        return None
    if (spec.min is not None and value < spec.min) or (spec.max is not None and value > spec.max):
        return None  # Typer refuses it, with its message
    return value


def _path(text: str) -> Path | None:
    """A path option (exists=False, readable=True): Typer refuses an existing
    path this process cannot read, and an empty one."""
    if not text or "\0" in text:
        return None
    try:
        os.stat(text)
    except OSError:
        return Path(text)
    return Path(text) if os.access(text, os.R_OK) else None


def main(argv: list[str]) -> int | None:
    """Run `tide sim run ARGV` and return its exit status, or None if Typer must
    parse ARGV. Exits as Typer's standalone mode does: SystemExit's code, 130 on
    Ctrl-C, 1 on a closed pipe."""
    parsed = parse(argv)
    if parsed is None:
        return None
    from tide.cli.sim_steps import run_one

    try:
        run_one(*parsed)
    except SystemExit as e:
        return _code(e.code)
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        _quiet_stdio()
        return 1
    return 0


def _code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # what the interpreter does with SystemExit("text")
    return 1


def _quiet_stdio() -> None:
    """The reader went away: nothing more can be written (no second error at exit)."""
    null = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(null, stream.fileno())
