"""Invariants of every policy over random small clusters and queues: nothing is
ever allocated twice (Usage.allocate raises on any double use), a job starts at
most once and whole, pods bound for a job are part of its start."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide.model import Account, AccountTree, JobRequest, Limits
from tide.model.sched_config import BackfillMode, SchedulerConfig
from tide.sched.index import build_index
from tide.sched.policies import POLICY_NAMES, make_policy
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc, Running
from tide.sim.engine import Engine
from tide.sim.workload.base import SimJob
from tide.testing.builders import job, running, snapshot, tree_cluster

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _request(draw, gpus: int) -> dict:  # type: ignore[no-untyped-def]
    """A multi-node fixed shape or a spread --gpus count."""
    if draw(st.booleans()):
        return {"nodes": draw(st.integers(1, 3)), "gpus_per_node": draw(st.integers(1, gpus))}
    return {"gpus": draw(st.integers(1, 2 * gpus + 1))}


@st.composite
def cycles(draw):  # type: ignore[no-untyped-def]
    leaves = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    gpus = draw(st.sampled_from([2, 4, 8]))
    cluster = tree_cluster(leaves, gpus=gpus)
    names = [n.name for n in cluster.nodes]
    free = {n: list(range(gpus)) for n in names}
    run: list[Running] = []
    for k in range(draw(st.integers(0, 4))):
        node = draw(st.sampled_from(names))
        if free[node]:
            take = draw(st.integers(1, len(free[node])))
            idx, free[node] = tuple(free[node][:take]), free[node][take:]
            j = job(900 + k, gpus_per_node=take, account=draw(st.sampled_from(["a", "b"])))
            run.append(running(j, cluster, {node: idx}, 0, cores=0))
    pending = [
        job(k + 1, time=draw(st.integers(10, 500)), submit=float(k),
            account=draw(st.sampled_from(["a", "b"])), **_request(draw, gpus))
        for k in range(draw(st.integers(1, 8)))
    ]  # fmt: skip
    bound: dict[int, Allocation] = {}
    for j in pending:  # some jobs already hold a pod (k8s-style), on GPUs still free
        per = j.request.gpus_per_node
        node = draw(st.sampled_from(names))
        if (
            per
            and (j.request.nodes_min or 1) > 1
            and len(free[node]) >= per
            and draw(st.booleans())
        ):
            idx, free[node] = tuple(free[node][:per]), free[node][per:]
            bound[j.id] = Allocation(j.id, (NodeAlloc(names.index(node), idx, (), 0),))
    cap = draw(st.sampled_from([None, 4, 8]))
    return cluster, run, pending, bound, cap, draw(st.sampled_from(list(BackfillMode)))


@SETTINGS
@given(cycles(), st.sampled_from(POLICY_NAMES))
def test_one_cycle_never_over_allocates(sc, policy: str) -> None:  # type: ignore[no-untyped-def]
    cluster, run, pending, bound, cap, mode = sc
    snap = snapshot(cluster, pending, now=0, running_jobs=run, backfill=mode)
    snap.bound = bound
    limits = Limits(grp_tres={"gres/gpu": cap} if cap else {})
    snap.accounts = AccountTree(accounts={"a": Account("a", limits=limits), "b": Account("b")})
    ix = build_index(cluster)
    usage = Usage.empty(ix)
    for r in run:
        usage.allocate(r.alloc)
    for pods in bound.values():
        usage.allocate(pods)
    d = make_policy(policy, ix).schedule(snap, usage.copy())
    held = dict(bound)
    for jid in d.unbinds:
        usage.release(held.pop(jid))
    for jid, pods in d.binds.items():
        usage.allocate(pods)  # raises OverAllocation on any double use
        old = held.get(jid)
        held[jid] = Allocation(jid, (old.nodes if old else ()) + pods.nodes)
    started = [s.job_id for s in d.starts]
    assert len(started) == len(set(started))
    assert not set(started) & set(d.binds)
    by_id = {j.id: j for j in pending}
    for s in d.starts:
        pods = held.pop(s.job_id, None)
        if pods is not None:  # the engine releases them; pod models keep them in the start
            assert policy not in ("k8s-default", "kueue") or {
                (na.node, g) for na in pods.nodes for g in na.gpus
            } <= {(na.node, g) for na in s.alloc.nodes for g in na.gpus}
            usage.release(pods)
        usage.allocate(s.alloc)
        req = by_id[s.job_id].request
        assert s.alloc.gpu_count == req.total_gpus(req.node_range()[0])
        for na in s.alloc.nodes:
            assert len(set(na.gpus)) == len(na.gpus)


@st.composite
def workloads(draw):  # type: ignore[no-untyped-def]
    gpus = draw(st.sampled_from([4, 8]))
    cluster = tree_cluster(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)), gpus=gpus)
    size = len(cluster.nodes)
    jobs, t = [], 0.0
    for k in range(draw(st.integers(1, 10))):
        t += draw(st.sampled_from([0.0, 0.0, 5.0, 60.0, 400.0]))
        shape = _request(draw, gpus)  # made to fit the whole cluster
        if "nodes" in shape:
            shape["nodes"] = min(shape["nodes"], size)
        else:
            shape["gpus"] = min(shape["gpus"], size * gpus)
        nodes = shape.get("nodes")
        req = JobRequest(name=f"j{k}", nodes_min=nodes, nodes_max=nodes,
                         gpus_per_node=shape.get("gpus_per_node"), gpus=shape.get("gpus"),
                         time_limit=draw(st.sampled_from([600, 1800, 3600])))  # fmt: skip
        dur = draw(st.sampled_from([30.0, 300.0, 900.0, 3600.0]))
        jobs.append(SimJob(k + 1, t, dur, req, user=f"u{k % 3}",
                           account=draw(st.sampled_from(["a", "b"]))))  # fmt: skip
    return cluster, jobs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.sampled_from(POLICY_NAMES))
def test_engine_runs_every_policy_without_double_use(wl, policy: str) -> None:  # type: ignore[no-untyped-def]
    cluster, jobs = wl
    accounts = AccountTree(accounts={"a": Account("a"), "b": Account("b")})
    out = Engine(cluster, SchedulerConfig(bf_resolution=1), policy, accounts=accounts).run(jobs)
    stuck = any(r.deadlocked for r in out.results)
    for r in out.results:
        if r.start is None:  # only pods held by partial gangs can stop a job for good
            assert policy == "k8s-default" and stuck
        else:
            assert r.state in ("COMPLETED", "TIMEOUT")
