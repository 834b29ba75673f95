"""The twin against published numbers: KTH-SP2 through the strong filter,
EASY backfill in FCFS order (Gaussier et al., SC'15; shared/traces/kth-sp2).

With the pyss reference outputs at hand (shared/peers/pyss, written under
/tmp/pyss-ref by its scripts) every job's start time is compared too."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from sim_traces import traces_dir

from tide.model.sched_config import BackfillMode, QueueOrder, SchedulerConfig
from tide.sim.runner import WorkloadOptions, load_inputs, run_policy

TRACES = traces_dir("kth-sp2/KTH-SP2-1996-2.swf")
needs_traces = pytest.mark.skipif(
    TRACES is None,
    reason="shared/traces/kth-sp2 is not here (set TIDE_TRACES to the traces folder)",
)
EASY_FCFS = SchedulerConfig(
    backfill=BackfillMode.EASY,
    order=QueueOrder.FCFS,
    bf_interval=0,
    bf_resolution=1,
    bf_max_job_test=10**9,
    bf_window=10**9,
)


def _run(estimates: str, log: str = "kth-sp2/KTH-SP2-1996-2.swf"):  # type: ignore[no-untyped-def]
    assert TRACES is not None
    inputs = load_inputs(str(TRACES / log), None, None, WorkloadOptions(estimates=estimates))
    return run_policy(inputs, "slurm", EASY_FCFS)


def _reference(name: str) -> dict[int, float] | None:
    path = Path(os.environ.get("TIDE_PYSS_REF", "/tmp/pyss-ref")) / name
    if not path.is_file():
        return None
    with path.open() as f:
        return {int(r["job_id"]): float(r["start"]) for r in csv.DictReader(f)}


@needs_traces
@pytest.mark.slow
@pytest.mark.parametrize(
    ("estimates", "published", "ref"),
    [
        ("user", 92.58, "kth_easy_user.csv"),
        ("exact", 71.72, "kth_easy_exact.csv"),
    ],
)
def test_kth_easy_reproduces_the_published_bounded_slowdown(estimates, published, ref) -> None:  # type: ignore[no-untyped-def]
    run = _run(estimates)
    assert run.metrics["jobs"] == 28481
    assert run.metrics["mean_bsld"] == pytest.approx(published, rel=0.0005)
    starts = _reference(ref)
    if starts is not None:  # job for job, when pyss's outputs are at hand
        ours = {r.job_id: r.start for r in run.results}
        assert {j: ours[j] for j in starts} == starts


@needs_traces
@pytest.mark.slow
def test_sdsc_easy_matches_pyss() -> None:
    run = _run("user", "sdsc-sp2/SDSC-SP2-1998-4.2-cln.swf.gz")
    assert run.metrics["jobs"] == 53999
    assert run.metrics["mean_bsld"] == pytest.approx(87.8252, rel=0.0005)
    starts = _reference("sdsc_easy_user.csv")
    if starts is not None:
        ours = {r.job_id: r.start for r in run.results}
        assert {j: ours[j] for j in starts} == starts
