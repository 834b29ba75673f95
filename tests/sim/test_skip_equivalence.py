"""The engine that skips quiet passes and stops backfill once nothing can start
(issue 12, item 1) gives byte-identical jobs.csv to the engine that runs
every pass in full, on random slurm.conf clusters (topology, fair-share,
association limits, small and large bf_interval) and random workloads
(multi-node jobs, --gpus spread, dependencies, --begin, --switches, jobs
killed at their limit) and node failures. Preemption turns skipping off
(tide.sim.engine), so it needs no case here."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from engine_cases import confs, faults, load_conf, node_faults, rows, sim_jobs
from hypothesis import given, settings

from tide.config.loaded import LoadedCluster
from tide.sim.engine import Engine
from tide.sim.outputs import write_jobs_csv
from tide.sim.workload.base import SimJob


def _csv(
    loaded: LoadedCluster, backfill: str, jobs: list[SimJob], lean: bool, down: list | None = None
) -> tuple[bytes, int]:
    import copy

    from tide.model.sched_config import BackfillMode

    cfg = copy.deepcopy(loaded.config)
    cfg.backfill = BackfillMode(backfill)
    eng = Engine(copy.deepcopy(loaded.cluster), cfg, "slurm", loaded.accounts, down or [],
                 skip_quiet=lean, starts_only=lean, skip_futile=lean)  # fmt: skip
    out = eng.run(jobs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "jobs.csv"
        write_jobs_csv(path, out.results)
        return path.read_bytes(), eng.cycles


@settings(max_examples=60)
@given(confs, rows, faults)
def test_skipping_engine_equals_every_pass(c: dict, data: list[tuple], fail: list) -> None:
    loaded = load_conf(c)
    jobs = sim_jobs(data, c["gpus"])
    down = node_faults(fail, c["nodes"])
    full, cycles_full = _csv(loaded, c["backfill"], jobs, lean=False, down=down)
    lean, cycles_lean = _csv(loaded, c["backfill"], jobs, lean=True, down=down)
    assert lean == full, io.StringIO(full.decode()).getvalue()
    assert cycles_lean <= cycles_full


def test_quiet_passes_are_skipped() -> None:
    """A queue that waits behind long jobs with bf_interval=1: the lean engine
    runs a handful of passes where the full one runs one per second."""
    c = {"nodes": 2, "gpus": 4, "leaf": 1, "interval": 1, "res": 60, "window": 1440,
         "test": 1000, "calc": 5, "age": 1000, "fs": 10000, "backfill": "conservative",
         "limits": False}  # fmt: skip
    loaded = load_conf(c)
    data = [(0, 2000, 1, 4, 3600, 9, k % 2 == 0) for k in range(8)]
    jobs = sim_jobs(data, 4)
    full, cycles_full = _csv(loaded, "conservative", jobs, lean=False)
    lean, cycles_lean = _csv(loaded, "conservative", jobs, lean=True)
    assert lean == full
    assert cycles_full > 4000  # a pass every second for 4 x 2000 s
    assert cycles_lean < cycles_full // 10
