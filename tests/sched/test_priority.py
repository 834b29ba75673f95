"""Multifactor priority (slurm.schedmd.com/priority_multifactor.html) against
hand-computed values, and the vectorized code against a per-job reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
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
from tide.sched.priority import (
    MAX_PRIORITY,
    PriorityResult,
    compute_priorities,
    request_amounts,
    sort_key,
)

# --- a small cluster ------------------------------------------------------------
#
# 4 nodes x 32 CPUs x 256000 MB; n0, n1 have 4 a100, n2, n3 have 4 h100:
# N = 4 nodes, C = 128 CPUs, 16 GPUs.
# partitions: gpu (all nodes, Default, tier 1, PriorityJobFactor 10)
#             prio (n0, n1: 8 a100, tier 2, PriorityJobFactor 20)
# -> partition factor gpu 10/20 = 0.5, prio 1.0
# QOS priority: normal 0, low 25, high 100 -> factor 0, 0.25, 1.0


def cluster() -> Cluster:
    nodes = [
        Node(f"n{i}", cpus=32, real_memory=256000, gpus=[Gpu(k, typ) for k in range(4)])
        for i, typ in enumerate(["a100", "a100", "h100", "h100"])
    ]
    return Cluster(
        nodes=nodes,
        partitions=[
            Partition("gpu", nodes=("n0", "n1", "n2", "n3"), default=True, priority_job_factor=10),
            Partition("prio", nodes=("n0", "n1"), priority_tier=2, priority_job_factor=20),
        ],
    )


def accounts() -> AccountTree:
    return AccountTree(
        accounts={"nlp": Account("nlp")},
        users=[UserAssoc("alice", "nlp"), UserAssoc("bob", "nlp")],
        qos={"normal": Qos("normal"), "low": Qos("low", 25), "high": Qos("high", 100)},
    )


FS = {"nlp/alice": 4 / 6, "nlp/bob": 1 / 6}


def config(**kw: object) -> SchedulerConfig:
    weights = PriorityWeights(
        age=1000, fairshare=10000, job_size=1000, partition=1000, qos=2000,
        tres={"gres/gpu": 800},
    )
    return SchedulerConfig(weights=weights, max_age=1000, **kw)  # type: ignore[arg-type]


def run(jobs: list[Job], now: float = 500.0, **kw: object) -> PriorityResult:
    return compute_priorities(jobs, cluster(), config(**kw), accounts(), FS, now)


def job_a() -> Job:
    # alice, default partition gpu, QOS high, submitted at 0, now 500:
    #   age        500/1000 = 0.5                  x 1000  = 500
    #   fairshare  4/6                             x 10000 = 6666.67
    #   job size   2 nodes, 2x4 tasks x 8 CPUs = 64: (2/4 + 64/128)/2 = 0.5 x 1000 = 500
    #   partition  0.5                             x 1000  = 500
    #   qos        1.0                             x 2000  = 2000
    #   gres/gpu   8 / 16                          x 800   = 400
    #   total 10566.67 -> 10566
    req = JobRequest(nodes_min=2, gpus_per_node=4, ntasks_per_node=4, cpus_per_task=8)
    return Job(1, req, user="alice", account="nlp", qos="high", submit=0.0)


def job_b() -> Job:
    # bob, partition prio, QOS low, eligible only at 900 (now 500), nice 100:
    #   age        0 (not yet eligible)
    #   fairshare  1/6                              x 10000 = 1666.67
    #   job size   1 node, 1 CPU: (1/4 + 1/128)/2 = 0.12890625 x 1000 = 128.906
    #   partition  1.0                              x 1000  = 1000
    #   qos        0.25                             x 2000  = 500
    #   gres/gpu   1 / 8 (prio has 8 GPUs)          x 800   = 100
    #   nice       -100
    #   total 3295.57 -> 3295
    req = JobRequest(gpus=1, partitions=("prio",), nice=100)
    return Job(2, req, user="bob", account="nlp", qos="low", submit=0.0, eligible=900.0)


def test_weighted_sum_by_hand() -> None:
    res = run([job_a(), job_b()])
    assert res.total.tolist() == [10566.0, 3295.0]
    a = res.breakdown(0)
    assert (a.job_id, a.site, a.assoc, a.nice, a.override) == (1, 0.0, 0.0, 0.0, False)
    assert a.age == pytest.approx(500)
    assert a.fairshare == pytest.approx(20000 / 3)
    assert a.job_size == pytest.approx(500)
    assert a.partition == pytest.approx(500)
    assert a.qos == pytest.approx(2000)
    assert a.tres == pytest.approx({"gres/gpu": 400})
    b = res.breakdown(1)
    assert b.age == 0.0
    assert b.fairshare == pytest.approx(10000 / 6)
    assert b.job_size == pytest.approx(128.90625)
    assert (b.partition, b.qos, b.nice) == (1000.0, 500.0, 100.0)
    assert b.tres == pytest.approx({"gres/gpu": 100})
    parts = [b.site, b.age, b.assoc, b.fairshare, b.job_size, b.partition, b.qos]
    assert math.floor(sum(parts) + sum(b.tres.values()) - b.nice) == b.total


def test_partition_tier_orders_before_priority() -> None:
    res = run([job_a(), job_b()])
    assert res.tier.tolist() == [1, 2]
    assert res.order().tolist() == [1, 0]  # b's tier 2 beats a's higher priority
    assert res.sort_key(1) < res.sort_key(0)
    # equal tier and priority: earlier submit, then lower job id
    assert sort_key(1, 5.0, 10.0, 7) < sort_key(1, 5.0, 20.0, 3)
    assert sort_key(1, 5.0, 10.0, 3) < sort_key(1, 5.0, 10.0, 7)
    assert sort_key(1, 6.0, 99.0, 9) < sort_key(1, 5.0, 10.0, 3)


@pytest.mark.parametrize(
    ("submit", "eligible", "begin", "now", "age"),
    [
        (0.0, None, None, 500.0, 0.5),  # falls back to submit
        (0.0, 300.0, None, 500.0, 0.2),  # eligible wins over submit
        (0.0, None, None, 5000.0, 1.0),  # capped at PriorityMaxAge
        (0.0, 600.0, None, 500.0, 0.0),  # not yet eligible
        (0.0, None, 800.0, 500.0, 0.0),  # --begin in the future
        (0.0, None, 200.0, 500.0, 0.5),  # --begin passed: age still from submit
        (100.0, None, None, 100.0, 0.0),  # just submitted
    ],
)
def test_age_factor(
    submit: float, eligible: float | None, begin: float | None, now: float, age: float
) -> None:
    j = Job(1, JobRequest(begin=begin), user="alice", account="nlp", submit=submit,
            eligible=eligible)
    assert run([j], now=now).factors["age"][0] == pytest.approx(age)


def test_max_age_zero_makes_every_eligible_job_one() -> None:
    cfg = config()
    cfg.max_age = 0
    jobs = [Job(1, JobRequest(), submit=0.0), Job(2, JobRequest(), submit=0.0, eligible=900.0)]
    res = compute_priorities(jobs, cluster(), cfg, accounts(), FS, 500.0)
    assert res.factors["age"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize(
    ("req", "favor_small", "flags", "size"),
    [
        # favor large: (nodes/4 + cpus/128) / 2
        (JobRequest(nodes_min=4, ntasks_per_node=32), False, (), 1.0),
        (JobRequest(nodes_min=2, ntasks_per_node=4, cpus_per_task=8), False, (), 0.5),
        (JobRequest(), False, (), (1 / 4 + 1 / 128) / 2),
        # favor small: the complements
        (JobRequest(nodes_min=4, ntasks_per_node=32), True, (), 0.0),
        (JobRequest(), True, (), (3 / 4 + 127 / 128) / 2),
        # --cpus-per-gpu counts CPUs from GPUs: 8 GPUs x 4 = 32 CPUs -> (1/4 + 32/128)/2
        (JobRequest(gpus=8, cpus_per_gpu=4), False, (), 0.25),
        # SMALL_RELATIVE_TO_TIME: max(nodes x 128/4, cpus) / minutes / 128
        (JobRequest(nodes_min=4, time_limit=60), False, ("SMALL_RELATIVE_TO_TIME",), 1.0),
        (JobRequest(nodes_min=2, time_limit=600), False, ("SMALL_RELATIVE_TO_TIME",), 0.05),
        (JobRequest(ntasks=96, time_limit=90), False, ("SMALL_RELATIVE_TO_TIME",), 0.375),
        (JobRequest(nodes_min=2, time_limit=600), True, ("SMALL_RELATIVE_TO_TIME",), 0.95),
        # no time limit and UNLIMITED partition: 0 (favor small: 1)
        (JobRequest(nodes_min=4), False, ("SMALL_RELATIVE_TO_TIME",), 0.0),
    ],
)
def test_job_size_factor(
    req: JobRequest, favor_small: bool, flags: tuple[str, ...], size: float
) -> None:
    j = Job(1, req, user="alice", account="nlp")
    res = run([j], favor_small=favor_small, priority_flags=flags)
    assert res.factors["job_size"][0] == pytest.approx(size)


def test_relative_size_takes_the_partition_time_when_the_job_has_none() -> None:
    cl = cluster()
    cl.partitions[0].default_time = 1200  # 20 minutes: 4 nodes -> 128 / 20 / 128
    j = Job(1, JobRequest(nodes_min=4), user="alice", account="nlp")
    cfg = config(priority_flags=("SMALL_RELATIVE_TO_TIME",))
    res = compute_priorities([j], cl, cfg, accounts(), FS, 0.0)
    assert res.factors["job_size"][0] == pytest.approx(1 / 20)
    cl.partitions[0].default_time, cl.partitions[0].max_time = None, 600
    res = compute_priorities([j], cl, cfg, accounts(), FS, 0.0)
    assert res.factors["job_size"][0] == pytest.approx(1 / 10)


def test_partition_qos_and_unknown_names() -> None:
    jobs = [
        Job(1, JobRequest(), qos="normal"),  # default partition gpu
        Job(2, JobRequest(partitions=("prio", "gpu")), qos="high"),  # first requested
        Job(3, JobRequest(partitions=("gpu",)), partition="prio", qos="low"),  # decided wins
        Job(4, JobRequest(), partition="nosuch", qos="nosuch"),
        Job(5, JobRequest(qos="high"), qos=""),  # the request's QOS when the job has none
    ]
    res = run(jobs)
    assert res.factors["partition"].tolist() == [0.5, 1.0, 1.0, 0.0, 0.5]
    assert res.factors["qos"].tolist() == [0.0, 1.0, 0.25, 0.0, 1.0]
    assert res.tier.tolist() == [1, 2, 2, 0, 1]


def test_no_normal_flags_use_raw_values() -> None:
    jobs = [Job(1, JobRequest(gpus=2, partitions=("prio",)), qos="low")]
    res = run(jobs, priority_flags=("NO_NORMAL_PART", "NO_NORMAL_QOS", "NO_NORMAL_TRES"))
    assert res.factors["partition"][0] == 20.0
    assert res.factors["qos"][0] == 25.0
    assert res.tres_factors["gres/gpu"][0] == 2.0


def test_tres_factors_by_partition() -> None:
    cfg = config()
    cfg.weights.tres = {"CPU": 100, "Mem": 100, "node": 100, "GRES/gpu:a100": 100, "lic/x": 9}
    req = JobRequest(nodes_min=1, gpus=2, gpu_type="a100", ntasks=16, mem_per_gpu=64000)
    jobs = [
        Job(1, req, partition="prio"),  # 2 nodes, 64 CPUs, 512000 MB, 8 a100
        Job(2, req, partition="gpu"),  # 4 nodes, 128 CPUs, 1024000 MB, 8 a100
        Job(3, JobRequest(gpus=2, gpu_type="h100"), partition="gpu"),
    ]
    res = compute_priorities(jobs, cluster(), cfg, accounts(), FS, 0.0)
    f = res.tres_factors
    assert f["CPU"].tolist() == [16 / 64, 16 / 128, 1 / 128]
    assert f["Mem"].tolist() == [128000 / 512000, 128000 / 1024000, 0.0]
    assert f["node"].tolist() == [1 / 2, 1 / 4, 1 / 4]
    assert f["GRES/gpu:a100"].tolist() == [2 / 8, 2 / 8, 0.0]
    assert f["lic/x"].tolist() == [0.0, 0.0, 0.0]  # unknown TRES
    assert res.breakdown(0).tres["CPU"] == pytest.approx(25.0)


def test_assoc_factor_inherits_down_the_tree() -> None:
    tree = accounts()
    tree.accounts["nlp"].priority = 50
    tree.users.append(UserAssoc("carol", "nlp", priority=200))
    cfg = config()
    cfg.weights.assoc = 1000
    jobs = [
        Job(1, JobRequest(), user="alice", account="nlp"),  # inherits 50 -> 50/200
        Job(2, JobRequest(), user="carol", account="nlp"),  # 200/200
        Job(3, JobRequest(), user="zed", account="none"),  # unknown association
    ]
    res = compute_priorities(jobs, cluster(), cfg, tree, FS, 0.0)
    assert res.factors["assoc"].tolist() == [0.25, 1.0, 0.0]
    assert res.factors["fairshare"].tolist() == [pytest.approx(4 / 6), 0.0, 0.0]


def test_nice_site_override_hold_and_clamping() -> None:
    base = dict(user="alice", account="nlp", submit=500.0)  # age 0 at now=500
    jobs = [
        Job(1, JobRequest(nice=-3000), **base),  # type: ignore[arg-type]
        Job(2, JobRequest(nice=100000), **base),  # type: ignore[arg-type]
        Job(3, JobRequest(), site_factor=1234, **base),  # type: ignore[arg-type]
        Job(4, JobRequest(nice=5), priority_override=42, **base),  # type: ignore[arg-type]
        Job(5, JobRequest(priority=77), **base),  # type: ignore[arg-type]
        Job(6, JobRequest(), held="user", **base),  # type: ignore[arg-type]
    ]
    res = run(jobs)
    # alice, 1 node x 1 CPU, default partition, QOS normal, 0 GPUs:
    #   fs 6666.67 + size 128.906 + partition 500 = 7295.57
    common = 20000 / 3 + 128.90625 + 500
    assert res.total.tolist() == [
        math.floor(common + 3000),
        1.0,  # Slurm keeps priority >= 1 (0 means held)
        math.floor(common + 1234),
        42.0,
        77.0,
        0.0,
    ]
    assert res.override.tolist() == [False, False, False, True, True, False]
    o = res.breakdown(3)
    assert (o.total, o.override, o.fairshare, o.nice) == (42.0, True, 0.0, 0.0)
    assert res.breakdown(2).site == 1234.0


def test_zero_weights_give_zero_factors_and_priority_one() -> None:
    res = compute_priorities([job_a(), job_b()], cluster(), SchedulerConfig(), accounts(), FS, 0)
    assert res.total.tolist() == [1.0, 1.0]
    assert all(not f.any() for f in res.factors.values())
    assert res.order().tolist() == [1, 0]  # tier 2 first, then submit, then id


def test_empty_queue_and_empty_cluster() -> None:
    res = run([])
    assert len(res.total) == 0 and len(res.order()) == 0
    res = compute_priorities([job_a()], Cluster(), config(), accounts(), FS, 500.0)
    assert res.factors["job_size"][0] == 0.0 and res.factors["partition"][0] == 0.0


# --- the vectorized code against a straightforward per-job version ------------------


def reference(
    job: Job, cl: Cluster, cfg: SchedulerConfig, tree: AccountTree, fs: dict[str, float],
    now: float,
) -> float:
    """Slurm's formula, one job at a time, written for clarity not speed."""
    if job.held:
        return 0.0
    ovr = job.priority_override if job.priority_override is not None else job.request.priority
    if ovr is not None:
        return float(ovr)
    req = job.request
    pname = job.partition or (req.partitions[0] if req.partitions else "")
    part = cl.partition(pname) if pname else cl.default_partition()
    w = cfg.weights
    start = job.eligible if job.eligible is not None else job.submit
    age = 0.0
    if now >= start and not (req.begin is not None and req.begin > now):
        age = min(now - start, cfg.max_age) / cfg.max_age
    nodes, gpus, cpus, _mem, _t, _typ = request_amounts(req)
    n_nodes, n_cpus = len(cl.nodes), sum(n.cpus for n in cl.nodes)
    size = (nodes / n_nodes + cpus / n_cpus) / 2
    if cfg.favor_small:
        size = ((n_nodes - nodes) / n_nodes + (n_cpus - cpus) / n_cpus) / 2
    top_part = max(p.priority_job_factor for p in cl.partitions)
    part_f = part.priority_job_factor / top_part if part else 0.0
    q = tree.qos.get(job.qos or req.qos or "normal")
    qos_f = (q.priority if q else 0) / max(x.priority for x in tree.qos.values())
    fs_f = fs.get(f"{job.account}/{job.user}", 0.0)
    tres = 0.0
    if part is not None and "gres/gpu" in w.tres:
        members = [n for n in cl.nodes if n.name in part.nodes]
        tres = w.tres["gres/gpu"] * min(1.0, gpus / sum(n.gpu_count for n in members))
    total = (
        job.site_factor + w.age * age + w.fairshare * fs_f + w.job_size * min(1.0, size)
        + w.partition * part_f + w.qos * qos_f + tres - req.nice
    )
    return float(min(max(math.floor(total), 1), MAX_PRIORITY))


@st.composite
def jobs(draw: st.DrawFn) -> list[Job]:
    out = []
    for i in range(draw(st.integers(1, 25))):
        req = JobRequest(
            nodes_min=draw(st.sampled_from([None, 1, 2, 4])),
            gpus_per_node=draw(st.sampled_from([None, 1, 4])),
            gpus=draw(st.sampled_from([None, 2])),
            ntasks=draw(st.sampled_from([None, 8])),
            ntasks_per_node=draw(st.sampled_from([None, 2])),
            cpus_per_task=draw(st.sampled_from([1, 4])),
            partitions=draw(st.sampled_from([(), ("gpu",), ("prio",), ("prio", "gpu")])),
            nice=draw(st.sampled_from([0, 0, 50, -50, 10**6])),
            begin=draw(st.sampled_from([None, None, 100.0, 900.0])),
            priority=draw(st.sampled_from([None, None, None, 5])),
        )
        out.append(Job(
            i,
            req,
            user=draw(st.sampled_from(["alice", "bob", "zed"])),
            account="nlp",
            partition=draw(st.sampled_from(["", "", "gpu", "prio"])),
            qos=draw(st.sampled_from(["normal", "low", "high", "nosuch"])),
            submit=draw(st.floats(0, 1000)),
            eligible=draw(st.sampled_from([None, 50.0, 700.0])),
            held=draw(st.sampled_from(["", "", "", "user"])),
            priority_override=draw(st.sampled_from([None, None, None, 9])),
            site_factor=draw(st.sampled_from([0, 0, 300])),
        ))
    return out


@settings(max_examples=200, deadline=None)
@given(jobs(), st.booleans(), st.floats(0, 2000))
def test_vectorized_equals_reference(js: list[Job], favor_small: bool, now: float) -> None:
    cl, tree, cfg = cluster(), accounts(), config(favor_small=favor_small)
    res = compute_priorities(js, cl, cfg, tree, FS, now)
    assert res.total.tolist() == [reference(j, cl, cfg, tree, FS, now) for j in js]
    assert res.job_ids.tolist() == [j.id for j in js]
    for f in (*res.factors.values(), *res.tres_factors.values()):
        assert ((f >= 0) & (f <= 1)).all()
    order = res.order().tolist()
    assert order == sorted(range(len(js)), key=res.sort_key)


def test_100k_pending_jobs() -> None:
    """A queue of platform size goes through (speed is measured by
    bench/bench_core.py, not by a timed test)."""
    rng = np.random.default_rng(7)
    cl = cluster()
    tree = AccountTree(
        accounts={f"a{i}": Account(f"a{i}") for i in range(20)},
        users=[UserAssoc(f"u{k}", f"a{k % 20}") for k in range(500)],
        qos=accounts().qos,
    )
    fs = {f"a{k % 20}/u{k}": float(rng.random()) for k in range(500)}
    shapes = [JobRequest(nodes_min=n, gpus_per_node=g, time_limit=t, partitions=p)
              for n in (None, 1, 2, 4) for g in (None, 1, 4) for t in (None, 3600)
              for p in ((), ("prio",))]
    js = []
    for i in range(100_000):
        k = int(rng.integers(500))
        base = shapes[int(rng.integers(len(shapes)))]
        req = JobRequest(nodes_min=base.nodes_min, gpus_per_node=base.gpus_per_node,
                         time_limit=base.time_limit, partitions=base.partitions)
        js.append(Job(i, req, user=f"u{k}", account=f"a{k % 20}",
                      qos=("normal", "high")[i % 2], submit=float(rng.random() * 1e5)))
    cfg = config()
    compute_priorities(js[:10], cl, cfg, tree, fs, 2e5)
    res = compute_priorities(js, cl, cfg, tree, fs, 2e5)
    assert len(res.total) == 100_000
    assert np.isfinite(res.total).all() and (res.total >= 1).all()
    sample = [0, 1, 99_999]  # the vectorised result equals a one-job computation
    for i in sample:
        assert res.total[i] == compute_priorities([js[i]], cl, cfg, tree, fs, 2e5).total[0]
