"""The count driver in C (tide.sim._countsim via tide.sim.count_fast) against the
Python CountDriver: the same JobResults, Samples, per-account GPU-seconds,
event and cycle counts, value for value, on random workloads and real logs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sim_traces import TRACES, needs_traces

pytest.importorskip(
    "tide.sim._countsim",
    reason="tide.sim._countsim is not built: `pip install -e .` compiles it (needs a C "
    "compiler and the Python headers); without it tide runs the Python count driver",
)

from tide.hostlist import compress
from tide.model import JobRequest
from tide.model.sched_config import BackfillMode, QueueOrder, SchedulerConfig
from tide.sched.index import ClusterIndex, build_index
from tide.sim import count_fast, runner
from tide.sim.count_driver import CountDriver, count_applicable
from tide.sim.count_fast import CountRun, count_input, node_strings
from tide.sim.fastswf import read_swf_fast
from tide.sim.metrics import JobResult, Sample
from tide.sim.records import make_many
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster


def python_run(jobs: list[SimJob], ix: ClusterIndex, cfg: SchedulerConfig) -> CountRun:
    """What runner.run_policy does with TIDE_NO_C=1."""
    d = CountDriver(ix, cfg, "gpu")
    d.run(jobs)
    results = [d.results[k] for k in sorted(d.results)]
    runner._fill_nodelists(ix.names, d, results)
    return CountRun(results, d.samples, d.account_seconds, d.events, d.cycles)


def c_run(jobs: list[SimJob], ix: ClusterIndex, cfg: SchedulerConfig) -> CountRun:
    run = count_fast.simulate(count_input(jobs, ix), ix, cfg, "gpu")
    assert run is not None
    return run


def _timeline(samples: list[Sample]) -> list[tuple[object, ...]]:
    return [(s.t, s.allocated_gpus, s.blocked_idle_gpus, s.queue_len,
             list(s.by_account.items())) for s in samples]  # fmt: skip


def assert_same(c: CountRun, py: CountRun) -> None:
    assert len(c.results) == len(py.results)
    for a, b in zip(c.results, py.results, strict=True):
        assert a == b, (a, b)
    assert _timeline(c.samples) == _timeline(py.samples)
    assert list(c.account_seconds.items()) == list(py.account_seconds.items())
    assert (c.events, c.cycles) == (py.events, py.cycles)


def config(backfill: str, order: str, bf_interval: int) -> SchedulerConfig:
    return SchedulerConfig(
        backfill=BackfillMode(backfill), order=QueueOrder(order), bf_interval=bf_interval
    )


# ------------------------------------------------------------------ random workloads


@st.composite
def workloads(draw: st.DrawFn) -> tuple[int, int, list[SimJob]]:
    nodes = draw(st.integers(1, 10))
    gpn = draw(st.sampled_from([1, 8]))
    n = draw(st.integers(1, 45))
    ids = draw(st.permutations(range(1, n + 1))) if draw(st.booleans()) else range(1, n + 1)
    monotone = draw(st.integers(0, 9)) > 0  # sometimes a log out of submit order
    t, jobs = 0.0, []
    for k, jid in enumerate(ids):
        if monotone:
            t += draw(st.sampled_from([0, 0, 1, 7, 60, 450, 1000]))  # ties, plot periods
        else:
            t = float(draw(st.integers(0, 3000)))
        need = draw(st.integers(1, nodes + 1))  # nodes + 1 never fits
        limit = draw(st.sampled_from([0, 1, 30, 100, 900, 2000, 5000]))
        run = draw(st.sampled_from([0.0, 0.5, 10.0, 99.0, 100.0, 1000.0, 4999.5, 6000.0]))
        account = draw(st.sampled_from(["a", "b", "c", ""]))
        req = JobRequest(name=f"j{k}", nodes_min=need, nodes_max=need, gpus_per_node=gpn,
                         time_limit=limit, account=account or "acct", qos=draw(
                             st.sampled_from(["", "high"])))  # fmt: skip
        jobs.append(SimJob(id=jid, submit=t, duration=run, request=req, user=f"u{k % 3}",
                           account=account))  # fmt: skip
    return nodes, gpn, jobs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    wl=workloads(),
    backfill=st.sampled_from(["none", "easy", "conservative"]),
    order=st.sampled_from(["fcfs", "sjf"]),
    bf_interval=st.sampled_from([0, 0, 25, 600]),
)
def test_random_workloads_same_as_python(
    wl: tuple[int, int, list[SimJob]], backfill: str, order: str, bf_interval: int
) -> None:
    nodes, gpn, jobs = wl
    ix = build_index(flat_cluster(nodes, gpus=gpn))
    cfg = config(backfill, order, bf_interval)
    assert count_applicable(ix, cfg, has_limits=False)
    assert_same(c_run(jobs, ix, cfg), python_run(jobs, ix, cfg))


@pytest.mark.parametrize("nodes", [63, 64, 65, 4097, 5000])
def test_wide_clusters_same_as_python(nodes: int) -> None:
    """The free node ids across word and summary-word bounds (the C kernel keeps
    them as a two-level bitmap, the Python driver as a heap): jobs of up to all
    nodes, ending out of start order, so low ids come back while high ones are held."""
    import random

    rng = random.Random(nodes)
    jobs, t = [], 0.0
    for k in range(1, 160):
        t += rng.choice([0, 1, 5, 40])
        need = rng.choice([1, 2, 3, 63, 64, 65, nodes // 3, nodes // 2, nodes])
        limit = rng.choice([10, 100, 1000])
        req = JobRequest(name=f"j{k}", nodes_min=need, nodes_max=need, gpus_per_node=1,
                         time_limit=limit, account="a")  # fmt: skip
        jobs.append(SimJob(id=k, submit=t, duration=float(rng.randint(1, limit)), request=req,
                           user="u", account="a"))  # fmt: skip
    ix = build_index(flat_cluster(nodes, gpus=1))
    for backfill in ("easy", "conservative"):
        cfg = config(backfill, "fcfs", 0)
        assert_same(c_run(jobs, ix, cfg), python_run(jobs, ix, cfg))


def test_hand_case_easy_backfill() -> None:
    """3 nodes: job 1 holds 2 until 100, job 2 (3 nodes) waits for it, job 3
    (1 node, 50 s) backfills at once, job 4 (1 node, 500 s) does not (it would
    delay job 2), and starts after job 2 ends."""
    ix = build_index(flat_cluster(3, gpus=1))

    def job(jid: int, submit: float, need: int, limit: int) -> SimJob:
        req = JobRequest(name=f"job{jid}", nodes_min=need, nodes_max=need, gpus_per_node=1,
                         time_limit=limit)  # fmt: skip
        return SimJob(id=jid, submit=submit, duration=float(limit), request=req)

    jobs = [job(1, 0, 2, 100), job(2, 1, 3, 10), job(3, 2, 1, 50), job(4, 3, 1, 500)]
    run = c_run(jobs, ix, config("easy", "fcfs", 0))
    assert [(r.start, r.end, r.nodelist) for r in run.results] == [
        (0.0, 100.0, "n[001-002]"),
        (100.0, 110.0, "n[001-003]"),
        (2.0, 52.0, "n003"),
        (110.0, 610.0, "n001"),
    ]
    assert_same(run, python_run(jobs, ix, config("easy", "fcfs", 0)))


def test_repeated_ids_go_to_python() -> None:
    ix = build_index(flat_cluster(2, gpus=1))
    req = JobRequest(name="x", nodes_min=1, nodes_max=1, gpus_per_node=1, time_limit=10)
    jobs = [SimJob(id=1, submit=0.0, duration=5.0, request=req)] * 2
    assert count_fast.simulate(count_input(jobs, ix), ix, config("easy", "fcfs", 0), "") is None


# ------------------------------------------------------------------ output helpers


@settings(max_examples=100, deadline=None)
@given(
    names=st.lists(
        st.from_regex(r"[a-c]{0,2}[0-9]{1,3}(-[a-z])?|[a-z]{1,3}", fullmatch=True),
        min_size=1, max_size=12, unique=True,
    ),
    data=st.data(),
)  # fmt: skip
def test_node_strings_match_compress(names: list[str], data: st.DataObject) -> None:
    n = len(names)
    sets = data.draw(st.lists(st.sets(st.integers(0, n - 1)), min_size=1, max_size=6))
    need = np.array([len(s) for s in sets], dtype=np.int64)
    ids = np.array([i for s in sets for i in sorted(s)], dtype=np.int32)
    started = np.array(data.draw(st.lists(st.booleans(), min_size=len(sets),
                                          max_size=len(sets))))  # fmt: skip
    gpn = data.draw(st.sampled_from([0, 1, 4]))
    nodelist, gpu_index = node_strings(names, gpn, ids, need, started)
    rng = "0" if gpn == 1 else f"0-{gpn - 1}"
    for s, on, got, idx in zip(sets, started.tolist(), nodelist, gpu_index, strict=True):
        held = sorted(s) if on else []
        assert got == (compress(names[i] for i in held) if held else "")
        assert idx == (f"{compress(names[i] for i in held)}:{rng}" if held and gpn else "")


def test_node_strings_padded_names() -> None:
    names = [f"gpu{i:03d}" for i in range(1, 13)]
    ids = np.array([0, 1, 2, 4, 9, 10, 11, 7], dtype=np.int32)
    need = np.array([4, 3, 1], dtype=np.int64)
    got, _ = node_strings(names, 8, ids, need, np.array([True, True, True]))
    assert got == ["gpu[001-003,005]", "gpu[010-012]", "gpu008"]


def test_make_many_equals_the_constructor() -> None:
    rows = [{"job_id": 3, "name": "a", "start": 1.5, "nodelist": "n1"},
            {"job_id": 4, "name": "b", "start": None, "nodelist": ""}]  # fmt: skip
    cols = {k: [r[k] for r in rows] for k in rows[0]} | {"partition": "p"}
    built = make_many(JobResult, cols, 2)
    assert built == [JobResult(**r, partition="p") for r in rows]  # type: ignore[arg-type]
    samples = make_many(Sample, {"t": [1.0], "allocated_gpus": [2], "blocked_idle_gpus": 0,
                                 "queue_len": [3]}, 1)  # fmt: skip
    assert samples == [Sample(1.0, 2, 0, 3, {})]
    assert samples[0].by_account == {}
    with pytest.raises(TypeError, match="no field"):
        make_many(Sample, {"bogus": [1]}, 1)


# ------------------------------------------------------------------ real logs




@needs_traces
@pytest.mark.slow
def test_kth_run_policy_same_with_and_without_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole count branch of run_policy: columns from the SWF, C, results, metrics
    (conservative and SJF runs: test_sdsc_prefix_same_as_python)."""
    assert TRACES is not None
    inputs = runner.load_inputs(str(TRACES / "kth-sp2" / "KTH-SP2-1996-2.swf"), None, None,
                                runner.WorkloadOptions())  # fmt: skip
    cfg = runner.configure(inputs.config, "easy", "fcfs", 0)
    monkeypatch.delenv("TIDE_NO_C", raising=False)
    fast = runner.run_policy(inputs, "slurm", cfg)
    monkeypatch.setenv("TIDE_NO_C", "1")
    slow = runner.run_policy(inputs, "slurm", cfg)
    assert fast.driver == slow.driver == "count"
    assert fast.results == slow.results
    assert _timeline(fast.samples) == _timeline(slow.samples)
    assert fast.metrics == slow.metrics
    assert round(fast.metrics["mean_bsld"], 4) == 92.5765  # pyss (SC'15), published


@needs_traces
@pytest.mark.slow
@pytest.mark.parametrize(
    "backfill, order, bf_interval",
    [("easy", "fcfs", 0), ("conservative", "fcfs", 0), ("easy", "sjf", 300),
     ("conservative", "sjf", 300)],
)  # fmt: skip
def test_sdsc_prefix_same_as_python(backfill: str, order: str, bf_interval: int) -> None:
    """The first 6,000 SDSC-SP2 jobs: a long queue, full machine, fragmentation."""
    assert TRACES is not None
    wl = read_swf_fast(TRACES / "sdsc-sp2" / "SDSC-SP2-1998-4.2-cln.swf.gz")
    jobs = list(itertools.islice(wl, 6000))
    ix = build_index(wl.info.flat_cluster())  # type: ignore[attr-defined]
    cfg = config(backfill, order, bf_interval)
    assert_same(c_run(jobs, ix, cfg), python_run(jobs, ix, cfg))


def test_join_groups_and_group_dicts() -> None:
    from tide.sim import _countsim

    idx = np.array([2, 0, 1, 1], dtype=np.int64)
    got = _countsim.join_groups(["a", "b", "c"], idx, np.array([0, 2, 2, 3, 4]), ";")
    assert got == ["c;a", "", "b", "b"]
    with pytest.raises(ValueError, match="out of range"):
        _countsim.join_groups(["a"], idx, np.array([0, 2]), ";")
    keys, values = np.array([1, 0, 1], dtype=np.int64), np.array([8, 16, 0], dtype=np.int64)
    dicts = _countsim.group_dicts(np.array([0, 0, 2, 3]), keys, values, ["x", "y"])
    assert dicts == [{}, {"y": 8, "x": 16}, {"y": 0}]
    assert list(dicts[1]) == ["y", "x"]
    with pytest.raises(ValueError, match="out of range"):
        _countsim.group_dicts(np.array([0, 3]), keys, values, ["x"])


def test_swf_columns_same_as_its_jobs(tmp_path: object) -> None:
    """An SWF log taken as columns (account codes, names built in C) runs as its
    SimJobs do through count_input's general branch: the same results and timeline."""
    import random
    from pathlib import Path

    rng = random.Random(4)
    rows = []
    for k in range(1, 400):
        procs, run = rng.randint(1, 16), rng.randint(1, 5000)
        uid, gid = rng.choice([-1, 3, 8, 41]), rng.choice([-1, -2, 0, 5, 9, 17])
        rows.append(f"{k} {k * 37} 0 {run} {procs} -1 -1 {procs} {run + rng.randint(0, 900)} "
                    f"-1 1 {uid} {gid} -1 -1 -1 -1 -1")  # fmt: skip
    path = Path(str(tmp_path)) / "log.swf"
    path.write_text("; MaxProcs: 16\n; UnixStartTime: 0\n" + "\n".join(rows) + "\n")
    wl = read_swf_fast(path)
    ix = build_index(wl.info.flat_cluster())  # type: ignore[attr-defined]
    cfg = config("easy", "fcfs", 0)
    cols = count_input(wl, ix)
    assert cols.account_codes is not None  # the columns' branch
    from_cols = count_fast.simulate(cols, ix, cfg, "gpu")
    assert from_cols is not None
    assert_same(from_cols, c_run(list(wl), ix, cfg))
