"""Fault isolation in the core (tide.sched.isolate): whatever a job carries,
the other jobs are scheduled, under every policy."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide.model import Cluster, Job, JobRequest, Partition
from tide.sched.index import build_index
from tide.sched.isolate import describe, schedule_isolating
from tide.sched.policies import POLICY_NAMES, make_policy
from tide.sched.state import Usage
from tide.sched.types import Decisions, Snapshot
from tide.testing.builders import gpu_node, job, snapshot

FIELDS = [f.name for f in dataclasses.fields(JobRequest) if f.name != "partitions"]
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _cluster() -> Cluster:
    """Four nodes for the good jobs ('good') and one node the bad ones may use
    ('bad'): a bad job can fault or run, never take the good jobs' room."""
    good = [replace(gpu_node(f"g{i}"), partitions=("good",)) for i in range(1, 5)]
    bad = replace(gpu_node("b1"), partitions=("bad",))
    return Cluster(
        name="iso",
        nodes=[*good, bad],
        partitions=[
            Partition(name="good", nodes=tuple(n.name for n in good), default=True),
            Partition(name="bad", nodes=("b1",)),
        ],
    )


CLUSTER = _cluster()
IX = build_index(CLUSTER)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(POLICY_NAMES),
    bad=st.lists(st.tuples(st.sampled_from(FIELDS), ANY_VALUE), min_size=1, max_size=4),
    good_gpus=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4),
)
def test_good_jobs_start_whatever_the_others_carry(
    policy: str, bad: list[tuple[str, object]], good_gpus: list[int]
) -> None:
    good = [
        job(i + 1, nodes=1, gpus_per_node=g, partitions=("good",), account="root")
        for i, g in enumerate(good_gpus)
    ]
    bad_jobs = []
    for k, (name, value) in enumerate(bad):
        req = replace(JobRequest(name="bad", time_limit=60, partitions=("bad",)), **{name: value})
        bad_jobs.append(Job(id=100 + k, request=req, user="mallory", account="root"))
    pending = sorted([*good, *bad_jobs], key=lambda j: j.id % 7)  # bad ones in between
    snap = snapshot(CLUSTER, pending)
    pol = make_policy(policy, IX)

    decisions, faults = schedule_isolating(lambda s: pol.schedule(s, Usage.empty(IX)), snap)

    started = {s.job_id for s in decisions.starts}
    assert {j.id for j in good} <= started, (policy, faults)
    assert {f.job_id for f in faults} <= {j.id for j in bad_jobs}
    assert all(f.error for f in faults)


def test_a_faulty_job_is_named_with_its_error_and_left_out() -> None:
    good = job(1, nodes=1, gpus_per_node=8, partitions=("good",))
    bad = job(2, nodes=1, gpus_per_node=8, partitions=("good",))
    bad.request.gpus_per_node = -1  # what the API stored before it validated fields
    calls: list[int] = []

    def sched(s: Snapshot) -> Decisions:
        calls.append(len(s.pending))
        return make_policy("slurm", IX).schedule(s, Usage.empty(IX))

    decisions, faults = schedule_isolating(sched, snapshot(CLUSTER, [good, bad]))
    assert [s.job_id for s in decisions.starts] == [1]
    assert len(faults) == 1 and faults[0].job_id == 2
    assert faults[0].error.startswith("ValueError")
    assert calls[0] == 2 and calls[-1] == 1  # the last cycle runs without the bad job


def test_one_bad_job_in_a_long_queue_costs_a_few_cycles() -> None:
    jobs = [job(i, nodes=1, gpus_per_node=1, partitions=("good",)) for i in range(1, 257)]
    jobs[77].request.gpus_per_node = -1
    calls = 0

    def sched(s: Snapshot) -> Decisions:
        nonlocal calls
        calls += 1
        return make_policy("slurm", IX).schedule(s, Usage.empty(IX))

    _, faults = schedule_isolating(sched, snapshot(CLUSTER, jobs))
    assert [f.job_id for f in faults] == [78]
    assert calls <= 2 * 8 + 4  # about 2 log2(256) extra cycles


def test_jobs_that_fail_only_together_lose_the_later_one() -> None:
    a = job(1, nodes=1, gpus_per_node=1)
    b = job(2, nodes=1, gpus_per_node=1)

    def sched(s: Snapshot) -> Decisions:
        if len(s.pending) == 2:
            raise RuntimeError("these two clash")
        return Decisions()

    _, faults = schedule_isolating(sched, snapshot(CLUSTER, [a, b]))
    assert [f.job_id for f in faults] == [2]


def test_a_fault_outside_the_queue_is_raised() -> None:
    def sched(s: Snapshot) -> Decisions:
        raise KeyError("node table broken")

    with pytest.raises(KeyError):
        schedule_isolating(sched, snapshot(CLUSTER, [job(1, nodes=1, gpus_per_node=1)]))


def test_describe_is_one_bounded_line() -> None:
    text = describe(ValueError("a\nb" + "x" * 1000))
    assert "\n" not in text and len(text) <= 300 and text.startswith("ValueError: a b")
