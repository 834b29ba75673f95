"""One job's priority in plain Python (tide.sched.priority_one) is, bit for
bit, what the vectorised compute_priorities gives that job: random jobs,
weights (age, association, fair-share, job size, partition, QOS, TRES by
count and by GPU type, an unknown TRES), PriorityFlags, PriorityMaxAge 0,
PriorityFavorSmall, partitions with and without time limits, association
priorities inherited down the tree, fair-share factors outside [0, 1]."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model import (
    Account,
    AccountTree,
    Cluster,
    Gpu,
    Job,
    JobRequest,
    Node,
    Partition,
    Qos,
    UserAssoc,
)
from tide.model.sched_config import PriorityWeights, SchedulerConfig
from tide.sched.priority import compute_priorities, partition_table
from tide.sched.priority_one import PriorityBasis, job_factors, job_priority


def cluster(gpu_prio: int, default_time: int | None, max_time: int | None, n: int = 5) -> Cluster:
    nodes = [
        Node(f"n{i}", cpus=32 - 2 * (i % 3), real_memory=256000,
             gpus=[Gpu(k, "a100" if i < 2 else "h100") for k in range(4)])
        for i in range(n)
    ]  # fmt: skip
    return Cluster(
        nodes=nodes,
        partitions=[
            Partition("gpu", nodes=tuple(n.name for n in nodes), default=True,
                      priority_job_factor=gpu_prio, default_time=default_time,
                      max_time=max_time),
            Partition("prio", nodes=("n0", "n1"), priority_tier=2, priority_job_factor=20),
        ],
    )  # fmt: skip


def accounts(assoc_prio: int | None, user_prio: int | None) -> AccountTree:
    return AccountTree(
        accounts={"nlp": Account("nlp", priority=assoc_prio), "cv": Account("cv")},
        users=[UserAssoc("alice", "nlp", priority=user_prio), UserAssoc("bob", "nlp"),
               UserAssoc("carol", "cv")],
        qos={"normal": Qos("normal"), "low": Qos("low", 25), "high": Qos("high", 100)},
    )  # fmt: skip


TRES = ["gres/gpu", "cpu", "mem", "node", "gres/gpu:a100", "GRES/GPU:H100", "license/x"]
FLAGS = ["NO_NORMAL_ALL", "NO_NORMAL_TRES", "NO_NORMAL_QOS", "NO_NORMAL_PART", "NO_NORMAL_ASSOC"]
weight = st.sampled_from([0, 0, 1, 1000, 12345])


@st.composite
def configs(draw: st.DrawFn) -> SchedulerConfig:
    tres = {t: draw(st.sampled_from([0, 7, 800])) for t in draw(st.lists(st.sampled_from(TRES),
                                                                         unique=True))}  # fmt: skip
    weights = PriorityWeights(age=draw(weight), fairshare=draw(weight), job_size=draw(weight),
                              partition=draw(weight), qos=draw(weight), assoc=draw(weight),
                              tres=tres)  # fmt: skip
    return SchedulerConfig(
        weights=weights,
        max_age=draw(st.sampled_from([0, 1000, 7 * 86400])),
        favor_small=draw(st.booleans()),
        priority_flags=(
            *draw(st.lists(st.sampled_from(FLAGS), unique=True, max_size=2)),
            *draw(st.sampled_from([(), ("SMALL_RELATIVE_TO_TIME",)])),
        ),
    )


@st.composite
def one_job(draw: st.DrawFn, i: int) -> Job:
    req = JobRequest(
        nodes_min=draw(st.sampled_from([None, 1, 2, 3, 5])),
        gpus_per_node=draw(st.sampled_from([None, 1, 4])),
        gpus=draw(st.sampled_from([None, 3])),
        ntasks=draw(st.sampled_from([None, 8])),
        cpus_per_task=draw(st.sampled_from([1, 3])),
        cpus_per_gpu=draw(st.sampled_from([None, None, 6])),
        mem_per_node=draw(st.sampled_from([None, 1000])),
        mem_per_gpu=draw(st.sampled_from([None, 7000])),
        time_limit=draw(st.sampled_from([None, 59, 3600, 10**6])),
        gpu_type=draw(st.sampled_from(["", "a100", "H100"])),
        partitions=draw(st.sampled_from([(), ("gpu",), ("prio",), ("nosuch",), ("prio", "gpu")])),
        nice=draw(st.sampled_from([0, 50, -50, 10**6])),
        begin=draw(st.sampled_from([None, 100.0, 900.5, 1e9])),
        priority=draw(st.sampled_from([None] * 6 + [5, 2**40])),
        qos=draw(st.sampled_from(["", "high"])),
        account=draw(st.sampled_from(["", "cv"])),
    )
    return Job(
        i,
        req,
        user=draw(st.sampled_from(["alice", "bob", "carol", "zed"])),
        account=draw(st.sampled_from(["nlp", "", "cv"])),
        partition=draw(st.sampled_from(["", "", "gpu", "prio"])),
        qos=draw(st.sampled_from(["normal", "low", "high", "nosuch", ""])),
        submit=draw(st.floats(0, 1000) | st.integers(0, 1000)),
        eligible=draw(st.sampled_from([None, 50.0, 700.25, 1500])),
        held=draw(st.sampled_from([""] * 7 + ["user"])),
        priority_override=draw(st.sampled_from([None] * 7 + [9, -3])),
        site_factor=draw(st.sampled_from([0, 0, 300, -(10**6)])),
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple:
    n = draw(st.integers(1, 8))
    jobs = [draw(one_job(i)) for i in range(n)]
    fs = {k: draw(st.floats(-0.5, 1.5)) for k in ("nlp/alice", "nlp/bob", "cv/carol")}
    cl = cluster(
        draw(st.sampled_from([0, 10, 40])),
        draw(st.sampled_from([None, 600])),
        draw(st.sampled_from([None, 86400])),
        draw(st.sampled_from([3, 5, 7])),
    )
    tree = accounts(draw(st.sampled_from([None, 0, 5])), draw(st.sampled_from([None, 9])))
    now = draw(st.floats(0, 2000) | st.integers(0, 2000))
    return jobs, cl, draw(configs()), tree, fs, now


@settings(max_examples=400, deadline=None)
@given(cases())
def test_one_job_equals_the_vectorised_priority(case: tuple) -> None:
    jobs, cl, cfg, tree, fs, now = case
    table = partition_table(cl)
    res = compute_priorities(jobs, cl, cfg, tree, fs, now, table)
    basis = PriorityBasis.of(cl, cfg, tree, fs, table)
    one = [job_priority(j, basis, now) for j in jobs]
    # float.hex tells -0.0 from 0.0 and compares the bits
    assert [(t.hex(), k) for t, k in one] == [
        (t.hex(), k) for t, k in zip(res.total.tolist(), res.tier.tolist(), strict=True)
    ]
    assert all(type(t) is float and type(k) is int for t, k in one)
    for i, job in enumerate(jobs):  # every factor too, each bit (a floor hides most)
        factors, tres = job_factors(job, basis, now)
        assert {k: v.hex() for k, v in factors.items()} == {
            k: float(v[i]).hex() for k, v in res.factors.items()
        }
        assert {k: v.hex() for k, v in tres.items()} == {
            k: float(v[i]).hex() for k, v in res.tres_factors.items()
        }


def test_a_job_with_the_cluster_s_whole_size_and_every_weight() -> None:
    """A hand-checked point the property covers: alice, partition gpu (job
    factor 10 of 20), QOS high, 2 nodes x 4 GPUs, at 500 s of a 1000 s max age."""
    cl, tree = cluster(10, None, None), accounts(None, None)
    weights = PriorityWeights(age=1000, fairshare=10000, job_size=1000, partition=1000,
                              qos=2000, tres={"gres/gpu": 800})  # fmt: skip
    cfg = SchedulerConfig(weights=weights, max_age=1000)
    req = JobRequest(nodes_min=2, gpus_per_node=4, ntasks_per_node=4, cpus_per_task=8)
    job = Job(1, req, user="alice", account="nlp", qos="high", submit=0.0)
    fs = {"nlp/alice": 0.5}
    # age 500 + fs 5000 + size (2/5 + 64/152)/2 x 1000 = 410.5 + part 500 + qos 2000
    # + gpu 8/20 x 800 = 320 -> 8730
    assert job_priority(job, PriorityBasis.of(cl, cfg, tree, fs), 500.0) == (8730.0, 1)
    assert compute_priorities([job], cl, cfg, tree, fs, 500.0).total.tolist() == [8730.0]
