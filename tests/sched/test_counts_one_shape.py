"""One GPU count (issue 13 item 2): what placement allocates (Shape), what
limits, quotas, priority and views count (JobRequest.total_gpus) are the same
number for every request; -N2 --ntasks=3 --gpus-per-task=1 gave 4 and 3."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model import JobRequest
from tide.sched import schedule
from tide.sched.shape import job_gpus, shape_of
from tide.testing.builders import flat_cluster, job, snapshot

CLUSTER = flat_cluster(4, 8)


def test_uneven_tasks_per_node_count_what_each_node_gets() -> None:
    req = JobRequest(nodes_min=2, nodes_max=2, ntasks=3, gpus_per_task=1)
    assert req.total_gpus(2) == shape_of(req, 60).gpus == 4  # 2 + 2: both nodes hold 2


@st.composite
def requests(draw):  # type: ignore[no-untyped-def]
    nodes = draw(st.none() | st.integers(1, 3))
    kind = draw(st.sampled_from(["per_node", "total", "per_task", "none"]))
    kw: dict[str, object] = {"nodes_min": nodes, "nodes_max": nodes, "time_limit": 60}
    if kind == "per_node":
        kw["gpus_per_node"] = draw(st.integers(0, 8))
    elif kind == "total":
        kw["gpus"] = draw(st.integers(0, 12))
    elif kind == "per_task":
        kw["gpus_per_task"] = draw(st.integers(1, 2))
        kw["ntasks"] = draw(st.none() | st.integers(1, 6))
        if kw["ntasks"] is None:
            kw["ntasks_per_node"] = draw(st.none() | st.integers(1, 3))
    return JobRequest(**kw)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(requests())
def test_the_shape_and_the_request_count_the_same_gpus(req: JobRequest) -> None:
    lo = req.node_range()[0]
    assert shape_of(req, 60).gpus == req.total_gpus(lo)


@settings(max_examples=100, deadline=None)
@given(requests())
def test_a_started_job_holds_the_gpus_it_is_counted_for(req: JobRequest) -> None:
    j = job(1)
    j.request = req
    d = schedule(snapshot(CLUSTER, [j]))
    for s in d.starts:
        assert s.alloc.gpu_count == req.total_gpus(len(s.alloc.nodes))
        if not shape_of(req, 60).spread:
            assert s.alloc.gpu_count == job_gpus(j)
