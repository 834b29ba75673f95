"""Results and timeline kept as columns while the engine runs (tide.sim.columns):
the same ResultTable, Timeline and jobs.csv bytes as the JobResults and Samples
they replace, and nothing kept per finished job but its row."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide.model import JobRequest
from tide.model.sched_config import SchedulerConfig
from tide.sim.columns import ResultColumns, TimelineColumns
from tide.sim.engine import Engine
from tide.sim.events import Fault
from tide.sim.metrics import JobResult, Sample
from tide.sim.outputs import write_jobs_csv
from tide.sim.table import ResultTable, Timeline
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster

words = st.sampled_from(["", "a", "alice", "b,c", 'q"x', "gpu[001-004]", "n1:0-3;n2:5"])
maybe_t = st.one_of(st.none(), st.floats(0, 1e7, allow_nan=False))
results = st.builds(
    JobResult,
    job_id=st.integers(1, 10**9),
    name=words, user=words, account=words, partition=words, qos=words, state=words,
    gpus=st.integers(0, 4096), nodes=st.integers(0, 512),
    submit=st.floats(0, 1e7, allow_nan=False), eligible=maybe_t, start=maybe_t, end=maybe_t,
    restarts=st.integers(0, 5), lost_gpu_seconds=st.floats(0, 1e9, allow_nan=False),
    leaf_switches=st.integers(0, 9), min_leaf_switches=st.integers(0, 9),
    nodelist=words, gpu_index=words, cpu_ids=words,
    held_idle_gpu_seconds=st.floats(0, 1e6, allow_nan=False), deadlocked=st.booleans(),
    preemptions=st.integers(0, 3), needed_reclaim=st.booleans(),
)  # fmt: skip


def _same(a: ResultTable, b: ResultTable) -> None:
    for f in dataclasses.fields(ResultTable):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        else:
            assert x == y, f.name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(results, max_size=30, unique_by=lambda r: r.job_id), st.integers(0, 30))
def test_result_columns_equal_the_table_of_the_results(tmp_path_factory, rs, split) -> None:  # type: ignore[no-untyped-def]
    cols = ResultColumns()
    for r in rs[:split]:  # finished in this order, the rest still live
        cols.add(r)
    got = cols.take_table(rs[split:])
    want = ResultTable.from_results(sorted(rs, key=lambda r: r.job_id))
    _same(got, want)
    folder = tmp_path_factory.mktemp("csv")
    write_jobs_csv(folder / "a.csv", got)
    write_jobs_csv(folder / "b.csv", sorted(rs, key=lambda r: r.job_id))
    assert (folder / "a.csv").read_bytes() == (folder / "b.csv").read_bytes()


samples = st.builds(
    Sample,
    t=st.floats(0, 1e6, allow_nan=False), allocated_gpus=st.integers(0, 10**5),
    blocked_idle_gpus=st.integers(0, 100), queue_len=st.integers(0, 10**5),
    by_account=st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 64)),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(samples, max_size=30))
def test_timeline_columns_equal_the_timeline_of_the_samples(ss) -> None:  # type: ignore[no-untyped-def]
    ss = sorted(ss, key=lambda s: s.t)  # the engine's times never decrease
    cols = TimelineColumns()
    for s in ss:
        cols.add(s.t, s.allocated_gpus, s.blocked_idle_gpus, s.queue_len, s.by_account)
    if ss:
        cols.repeat_last(ss[-1].t + 5)
        ss.append(dataclasses.replace(ss[-1], t=ss[-1].t + 5))
    got, want = cols.take_timeline(), Timeline.from_samples(ss)
    for f in dataclasses.fields(Timeline):
        x, y = getattr(got, f.name), getattr(want, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        else:
            assert x == y, f.name


def _jobs(n: int) -> list[SimJob]:
    out = []
    for k in range(1, n + 1):
        req = JobRequest(name=f"j{k}", nodes_min=1, nodes_max=1, gpus_per_node=1 + k % 2,
                         time_limit=400)  # fmt: skip
        out.append(SimJob(id=k, submit=60.0 * k, duration=100.0 + k % 4 * 30, request=req,
                          user=f"u{k % 3}"))  # fmt: skip
    return out


def test_engine_keeps_nothing_per_finished_job(tmp_path: Path) -> None:
    """Finished jobs leave the engine's dicts (their rows are in the columns); a
    node failure's victims too; the outputs hold every job, in job order."""
    cluster = flat_cluster(3, gpus=2)
    faults = [Fault(time=1000.0, node=n.name, repair_after=600.0) for n in cluster.nodes]
    seen: list[tuple[int, int, int]] = []
    engine = Engine(cluster, SchedulerConfig(bf_interval=0), faults=faults,
                    requeue_default=False, progress=lambda t, d, s: seen.append(
                        (len(engine.results), len(engine.sims), d)))  # fmt: skip
    out = engine.run(_jobs(300))
    assert engine.results == {} and engine.sims == {} and engine.ended == 300
    assert len(engine.done) == 0 and len(engine.samples) == 0  # handed to the output
    assert max(r for r, _, _ in seen) < 20  # only the jobs in flight, never all 300
    assert seen[-1][2] == 300
    assert out.table.job_id.tolist() == list(range(1, 301))
    assert "NODE_FAIL" in out.table.state
    assert [r.job_id for r in out.results] == list(range(1, 301))
    write_jobs_csv(tmp_path / "cols.csv", out.table)
    write_jobs_csv(tmp_path / "objs.csv", out.results)
    assert (tmp_path / "cols.csv").read_bytes() == (tmp_path / "objs.csv").read_bytes()
