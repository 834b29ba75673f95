"""Preemption in the twin (docs/preemption.md): grace, requeue with lost work,
cancel, suspend and resume, quota reclaim, the policy models, the scenario."""

from __future__ import annotations

import os

import pytest

from tide.model import Account, AccountTree, JobRequest, Qos
from tide.model.quota import AccountQuota, Cohort, QuotaTree
from tide.model.sched_config import QueueOrder, SchedulerConfig
from tide.sim.engine import Engine
from tide.sim.metrics import compute_metrics
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster


def config(**kw: object) -> SchedulerConfig:
    cfg = SchedulerConfig(preempt_type="preempt/qos", preempt_mode="REQUEUE", bf_interval=0,
                          bf_resolution=1, order=QueueOrder.FCFS)  # fmt: skip
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def qos(**low: object) -> AccountTree:
    tree = AccountTree(qos={
        "normal": Qos("normal"),
        "low": Qos("low", **low),  # type: ignore[arg-type]
        "high": Qos("high", priority=100, preempt=("low",)),
    })  # fmt: skip
    for name in ("lender", "borrower"):
        tree.accounts[name] = Account(name)
    return tree


def sim(job_id: int, submit: float, work: float, gpus: int, qos_name: str = "normal",
        checkpoint: float | None = None, account: str = "root", cpus: int = 1,
        requeue: bool | None = None) -> SimJob:  # fmt: skip
    req = JobRequest(nodes_min=1, nodes_max=1, gpus_per_node=gpus, time_limit=20000,
                     qos=qos_name, cpus_per_task=cpus, requeue=requeue)  # fmt: skip
    return SimJob(id=job_id, submit=submit, duration=work, request=req, account=account,
                  checkpoint_interval=checkpoint)  # fmt: skip


def results(out):  # type: ignore[no-untyped-def]
    return {r.job_id: r for r in out.results}


def test_grace_time_is_honoured_and_work_since_the_checkpoint_is_lost() -> None:
    # Job 1 (low, checkpoints every 100 s) fills the node; job 2 (high) comes at
    # 1050. The victim keeps running through its 120 s grace and is killed at
    # 1170, losing 8 x (1170 - 1100); job 2 starts then. Job 1 restarts at 1670
    # with 3000 - 1100 s of work left: it ends at 3570.
    jobs = [sim(1, 0, 3000, 8, "low", checkpoint=100), sim(2, 1050, 500, 8, "high")]
    out = Engine(flat_cluster(1), config(), "tide", qos(grace_time=120)).run(jobs)
    r = results(out)
    assert r[2].start == 1170 and r[2].end == 1670
    assert (r[1].restarts, r[1].preemptions, r[1].end) == (1, 1, 3570)
    assert r[1].lost_gpu_seconds == r[1].preempt_lost_gpu_seconds == 8 * 70
    m = compute_metrics(out.results, out.capacity_gpus, out.samples)
    assert (m["preemptions"], m["preempted_jobs"]) == (1, 1)
    assert m["preempt_lost_gpu_hours"] == pytest.approx(560 / 3600)


def test_a_victim_that_ends_during_its_grace_is_not_killed() -> None:
    jobs = [sim(1, 0, 1100, 8, "low"), sim(2, 1050, 500, 8, "high")]
    r = results(Engine(flat_cluster(1), config(), "tide", qos(grace_time=120)).run(jobs))
    assert (r[1].state, r[1].preemptions, r[1].end) == ("COMPLETED", 0, 1100)
    assert r[2].start == 1100


def test_cancel_ends_the_victim_preempted() -> None:
    jobs = [sim(1, 0, 3000, 8, "low"), sim(2, 1000, 500, 8, "high")]
    r = results(Engine(flat_cluster(1), config(preempt_mode="CANCEL"), "tide", qos()).run(jobs))
    assert (r[1].state, r[1].end, r[1].restarts, r[1].lost_gpu_seconds) == ("PREEMPTED", 1000, 0,
                                                                             8000)  # fmt: skip
    assert r[2].start == 1000


def test_a_suspended_job_resumes_and_finishes_with_its_gpus_held_throughout() -> None:
    # One node, 8 GPUs, 32 cores. Job 1 (low, SUSPEND) holds GPUs 0-1 and 31
    # cores; job 2 (high) needs 4 GPUs and 8 cores: job 1 is suspended at 100,
    # job 2 runs 100-600 on its cores. Job 3 (3 GPUs, 1 core) arrives at 200:
    # with job 1's GPUs still held only 2 are free, so it waits for job 2. At
    # 600 job 1 resumes (its 500 s pause added) and ends at 1000 + 500.
    jobs = [sim(1, 0, 1000, 2, "low", cpus=31), sim(2, 100, 500, 4, "high", cpus=8),
            sim(3, 200, 100, 3)]  # fmt: skip
    out = Engine(flat_cluster(1), config(), "tide", qos(preempt_mode="SUSPEND")).run(jobs)
    r = results(out)
    assert r[2].start == 100 and r[2].end == 600
    assert (r[1].state, r[1].end, r[1].restarts, r[1].lost_gpu_seconds) == ("COMPLETED", 1500, 0, 0)
    assert (r[1].preemptions, r[1].suspended_seconds) == (1, 500)
    assert r[1].gpu_index == "n001:0-1"
    assert not set(r[2].gpu_index.split(":")[1].split("-")) & {"0", "1"}
    assert r[3].start == 600
    assert max(s.allocated_gpus for s in out.samples) == 6  # 1's 2 + 2's 4, never freed


def quota_engine(policy: str = "tide", grace: int = 45) -> Engine:
    c = flat_cluster(2)
    tree = QuotaTree(
        accounts={"lender": AccountQuota("lender", {"": 8}, "pool"),
                  "borrower": AccountQuota("borrower", {"": 8}, "pool")},
        cohorts={"pool": Cohort("pool")},
    )  # fmt: skip
    return Engine(c, config(preempt_type="preempt/none"), policy, qos(grace_time=grace),
                  quotas=tree)  # fmt: skip


def test_idle_quota_is_borrowed_and_reclaimed_within_the_grace() -> None:
    # The borrower runs two 8-GPU jobs on 16 GPUs (8 of them the lender's).
    # The lender submits at 1000: one borrowed job is requeued after its 45 s
    # grace and the lender runs from 1045; the reclaim took 45 s.
    jobs = [sim(1, 0, 5000, 8, "low", checkpoint=300, account="borrower"),
            sim(2, 10, 5000, 8, "low", checkpoint=300, account="borrower"),
            sim(3, 1000, 600, 8, "normal", account="lender")]  # fmt: skip
    out = quota_engine().run(jobs)
    r = results(out)
    assert r[1].start == 0 and r[2].start == 10  # borrowing while the lender is idle
    assert r[3].start == 1045 and r[3].needed_reclaim
    assert sum(x.preemptions for x in r.values()) == 1
    m = compute_metrics(out.results, out.capacity_gpus, out.samples)
    assert m["reclaim_latency"]["jobs"] == 1 and m["reclaim_latency"]["max"] <= 45


def test_kueue_reclaims_by_priority_and_recency_volcano_by_its_queue() -> None:
    # Each account's queue deserves 8 of the 16 GPUs; the borrower uses all 16.
    # Kueue evicts its most recently started workload (job 2); Volcano's
    # reclaim evicts on the first node (by score, then name) that then fits
    # the lender's pod: job 1 on n001.
    jobs = [sim(1, 0, 5000, 8, "low", checkpoint=300, account="borrower"),
            sim(2, 10, 5000, 8, "low", checkpoint=300, account="borrower"),
            sim(3, 1000, 600, 8, "normal", account="lender")]  # fmt: skip
    for policy, victim in (("kueue", 2), ("volcano", 1)):
        r = results(Engine(flat_cluster(2), config(), policy, qos()).run(jobs))
        assert r[3].start == 1000, policy
        assert [j for j in (1, 2) if r[j].preemptions] == [victim], policy
        assert r[victim].restarts == 1 and r[victim].state == "COMPLETED"


@pytest.mark.parametrize(
    ("policy", "youngest", "lost"),
    [
        ("slurm", False, {1: 8 * 1000}),  # QOS and node count equal: the job list's first
        ("slurm", True, {2: 8 * 20}),  # preempt_youngest_first: the later start
        ("tide", False, {2: 8 * 20}),  # the least work lost
    ],
)
def test_slurm_takes_its_plugins_order_tide_the_least_lost_work(
    policy: str, youngest: bool, lost: dict[int, float]
) -> None:
    # Two low jobs fill 16 GPUs; job 1 (older) never checkpointed, job 2 (younger)
    # checkpointed 20 s before the high job arrives at 1000.
    jobs = [sim(1, 0, 9000, 8, "low"), sim(2, 300, 9000, 8, "low", checkpoint=340),
            sim(3, 1000, 500, 8, "high")]  # fmt: skip
    cfg = config(preempt_youngest_first=youngest)
    r = results(Engine(flat_cluster(2), cfg, policy, qos()).run(jobs))
    assert {j: x.preempt_lost_gpu_seconds for j, x in r.items() if x.preemptions} == lost


@pytest.mark.skipif(os.environ.get("TIDE_SKIP_SLOW") == "1", reason="TIDE_SKIP_SLOW=1")
def test_the_preempt_scenario_tide_loses_less_work_than_priority_order() -> None:
    from tide.sim.runner import WorkloadOptions, load_inputs, run_policy

    inputs = load_inputs(None, "preempt", None, WorkloadOptions())
    m = {p: run_policy(inputs, p, inputs.config).metrics for p in ("slurm", "tide")}
    for p in m:
        assert m[p]["jobs_completed"] == m[p]["jobs"] and m[p]["preemptions"] > 10
    assert m["tide"]["preempt_lost_gpu_hours"] < 0.5 * m["slurm"]["preempt_lost_gpu_hours"]


def test_volcano_reclaim_ends_when_a_higher_priority_job_takes_the_freed_place() -> None:
    # The borrower fills 16 GPUs and has a high-priority job waiting; the lender's
    # reclaim frees 8 GPUs, which the borrower's waiting job takes first (Volcano
    # allocates by priority). The evicted job stays out of the queue while the
    # lender waits, so the lender's next reclaim succeeds instead of evicting
    # the same jobs forever.
    jobs = [sim(1, 0, 5000, 8, "low", checkpoint=300, account="borrower"),
            sim(2, 10, 5000, 8, "low", checkpoint=300, account="borrower"),
            sim(3, 20, 3000, 8, "high", account="borrower"),
            sim(4, 1000, 600, 8, "normal", account="lender")]  # fmt: skip
    out = Engine(flat_cluster(2), config(), "volcano", qos()).run(jobs)
    r = results(out)
    assert all(x.state == "COMPLETED" for x in r.values())
    assert r[4].start is not None and r[4].start < 1000 + 3000
    assert sum(x.preemptions for x in r.values()) <= 3


@pytest.mark.parametrize(
    ("completing", "start", "node"),
    [
        ((0.0, 0.0), 1000.0, "n001"),  # nodes free at the kill: the lowest one
        ((3.0, 0.5), 1000.5, "n002"),  # the batch host (n001) completes last
        ((0.5, 3.0), 1000.5, "n001"),
    ],
)
def test_a_killed_jobs_nodes_complete_before_the_preemptor_gets_them(
    completing: tuple[float, float], start: float, node: str
) -> None:
    # Job 1 (low, two nodes) is cancelled for job 2 (high, one node) at 1000; its
    # batch host and its other node stay COMPLETING for the configured times.
    req = JobRequest(nodes_min=2, nodes_max=2, gpus_per_node=8, time_limit=20000, qos="low")
    jobs = [SimJob(id=1, submit=0, duration=3000, request=req), sim(2, 1000, 500, 8, "high")]
    cfg = config(preempt_mode="CANCEL", kill_completing=completing)
    r = results(Engine(flat_cluster(2), cfg, "slurm", qos()).run(jobs))
    assert (r[1].state, r[1].end) == ("PREEMPTED", 1000)
    assert (r[2].start, r[2].nodelist) == (start, node)


@pytest.mark.parametrize(
    ("header", "expect"),
    [
        ("# kill_completing: 3.35,0.4", (3.35, 0.4)),
        ("# kill_completing: soon", "two numbers of seconds"),
        ("# kill_completing: 1,-1", "negative"),
    ],
)
def test_a_workload_header_sets_the_completing_times(tmp_path, header: str,
                                                    expect: object) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    from pathlib import Path

    from tide.sim.runner import WorkloadOptions, load_inputs
    from tide.sim.workload.base import WorkloadError

    conf = str(Path(__file__).resolve().parents[2] / "tests/data/slurm_corpus/preempt/conf")
    path = tmp_path / "w.jsonl"
    path.write_text(header + '\n{"id": 1, "submit": 0, "duration": 5, "sbatch": "-N 1"}\n')
    if isinstance(expect, tuple):
        inputs = load_inputs(str(path), None, conf, WorkloadOptions())
        assert inputs.config.kill_completing == expect
    else:
        with pytest.raises(WorkloadError, match=str(expect)):
            load_inputs(str(path), None, conf, WorkloadOptions())
