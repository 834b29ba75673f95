"""Seed 000 through the real engine: 16 free GPUs (2 nodes x 8), two jobs of
two 8-GPU pods submitted together. Without gang scheduling each job binds one
pod and both wait forever; every gang-aware policy runs them one after the
other (issue 3, section 7)."""

from __future__ import annotations

import pytest

from tide.model import Account, AccountTree
from tide.model.sched_config import SchedulerConfig
from tide.sim.engine import Engine, RunOutput
from tide.sim.metrics import compute_metrics
from tide.sim.workload.generator import generate


def _run(policy: str) -> RunOutput:
    cluster, jobs = generate("seed000", 0)
    assert not isinstance(cluster, str)
    accounts = AccountTree(accounts={a: Account(a) for a in ("team-a", "team-b")})
    return Engine(cluster, SchedulerConfig(), policy, accounts=accounts).run(jobs)


def test_k8s_default_deadlocks_holding_both_nodes() -> None:
    out = _run("k8s-default")
    assert [r.deadlocked for r in out.results] == [True, True]
    assert all(r.start is None and r.state == "PENDING" for r in out.results)
    assert [r.held_idle_gpu_seconds for r in out.results] == [8 * 7200.0, 8 * 7200.0]
    m = compute_metrics(out.results, out.capacity_gpus, out.samples)
    assert m["jobs_deadlocked"] == 2 and m["jobs_completed"] == 0
    assert m["held_idle_gpu_hours"] == pytest.approx(32.0)
    assert m["effective_utilization"] == pytest.approx(0.0)


@pytest.mark.parametrize("policy", ["volcano", "kueue", "slurm", "tide"])
def test_gang_policies_complete_both(policy: str) -> None:
    out = _run(policy)
    assert [r.state for r in out.results] == ["COMPLETED", "COMPLETED"]
    assert sorted(r.start for r in out.results) == [0.0, 3600.0]  # type: ignore[type-var]
    assert not any(r.deadlocked for r in out.results)
    assert sum(r.held_idle_gpu_seconds for r in out.results) == 0.0
    assert all(r.nodes == 2 and r.gpus == 16 for r in out.results)
