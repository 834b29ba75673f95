"""Run one of Slurm's commands: `main("squeue", argv)` -> exit code.

Errors are one line prefixed with the command's name, as Slurm's are
(`squeue: error: ...`); a bad command line adds Slurm's "Try ... --help".
"""

from __future__ import annotations

import importlib
import sys

from tide.client.http import ClientError
from tide.slurm import COMMANDS
from tide.slurm.opts import UsageError


def main(command: str, argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if command not in COMMANDS:
        sys.stderr.write(f"tide: {command!r} is not one of Slurm's commands tide has\n")
        return 2
    module = importlib.import_module(f"tide.slurm.{command}")
    try:
        return int(module.run(args) or 0)
    except UsageError as e:
        sys.stderr.write(f"{command}: {e}\nTry \"{command} --help\" for more information\n")
        return 1
    except ClientError as e:
        fix = f"\n  fix: {e.fix}" if e.fix and e.fix not in e.error else ""  # said once
        sys.stderr.write(f"{command}: error: {e.error}{fix}\n")
        return 1
    except BrokenPipeError:  # `squeue | head`
        return 0
    except KeyboardInterrupt:
        return 130


def entry() -> None:
    """`python -m tide.slurm COMMAND ARGS...` and the shims (argv[0] names the command)."""
    name = sys.argv[0].rsplit("/", 1)[-1]
    if name in COMMANDS:
        sys.exit(main(name, sys.argv[1:]))
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.stderr.write(f"usage: python -m tide.slurm {{{','.join(COMMANDS)}}} [ARGS...]\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
