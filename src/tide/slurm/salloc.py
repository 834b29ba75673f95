"""salloc: get an allocation, run a command in it (default: your shell), release
it when the command ends. `srun` inside runs steps on the allocation's nodes.

    salloc -N2 --gpus-per-node=8 -t 1:00:00          # a shell in the allocation
    salloc -N1 -n4 srun -l hostname
"""

from __future__ import annotations

import os
import subprocess
import sys

from tide.slurm.alloc import allocation
from tide.slurm.common import connect_api
from tide.slurm.opts import UsageError
from tide.slurm.srun import split_command


def run(argv: list[str]) -> int:
    if argv[:1] in (["--help"], ["-h"], ["--usage"]):
        sys.stdout.write(__doc__ or "")
        return 0
    options, command = split_command(argv)
    command = command or [os.environ.get("SHELL", "/bin/sh")]
    with connect_api() as c, allocation(c, options, "salloc") as env:
        try:
            return subprocess.call(command, env=env)
        except OSError as e:
            raise UsageError(f"error: {command[0]}: {e.strerror}") from None
