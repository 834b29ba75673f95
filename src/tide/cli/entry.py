"""The `tide` command's entry point.

`tide sbatch`/`tide submit` and `tide queue` run often (scripts, watch loops,
job arrays of submissions): they go straight to their plain implementations
(tide.slurm.sbatch, tide.cli.queue_fast: the standard library and tide's HTTP
client only). `tide sim run` (benchmarks time whole replays) parses its own
options (tide.cli.sim_fast) where the result is certain. Everything else, and
--help, goes through the Typer app (tide.cli.main). bench/bench_cli.py
measures the difference.
"""

from __future__ import annotations

import gc
import os
import sys

HELP = ("--help", "-h")


def main() -> None:
    argv = sys.argv[1:]
    word, rest = (argv[0], argv[1:]) if argv else ("", [])
    if word in ("sbatch", "submit") and not (rest and rest[0] in HELP):
        from tide.slurm.main import main as slurm

        sys.exit(slurm("sbatch", rest))
    if word == "queue" and not any(a in (*HELP, "--json") for a in rest):
        from tide.cli.queue_fast import queue

        sys.exit(queue(rest))
    if word == "sim" and rest[:1] == ["run"]:
        # as tide.cli.main does for `tide sim`: the twin never calls BLAS
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        _keep_heap()
        # the cyclic collector's first generation every 100,000 new containers, not
        # 700: importing tide and numpy creates ~10^5 objects, and each collection of
        # the oldest generation walked them all again (~0.01 s of an SDSC-SP2 replay
        # of 0.25 s). It still runs: a long general-engine run keeps collecting.
        gc.set_threshold(100_000, 10, 10)
        from tide.cli.sim_fast import main as sim_run

        code = sim_run(rest[1:])
        if code is not None:
            _exit_now(code)
    from tide.cli.main import app

    app()


def _keep_heap() -> None:
    """A replay allocates and frees arrays of 0.1-10 MB one after another; glibc
    maps each afresh and the kernel faults and zeroes its pages every time (a
    fifth of an SDSC-SP2 replay's CPU). Kept in the heap, freed blocks are reused.
    Only for this one-shot process (the C kernel sets it; without it, nothing)."""
    try:
        from tide.sim import _countsim
    except ImportError:
        return
    keep = getattr(_countsim, "keep_heap", None)  # builds before it lack it
    if keep is not None:
        keep()


def _exit_now(code: int) -> None:
    """End the process without tearing the interpreter down: freeing every module
    and the run's ~10^5 objects one by one costs ~30 ms of CPU (a tenth of a
    whole SDSC-SP2 replay) and changes nothing. The outputs are closed files by
    now; only the standard streams may hold buffered text."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away (EPIPE), as Typer's exit status for it
        code = 1
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
