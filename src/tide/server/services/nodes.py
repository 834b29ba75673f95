"""Nodes and partitions as sinfo/scontrol show them, and node state changes.

A node's displayed state combines the administrative state (IDLE, DRAIN,
DOWN, FUTURE) with what is allocated on it, like Slurm: IDLE, MIXED,
ALLOCATED; DRAINING while jobs still run on a drained node, DRAINED after.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from sqlalchemy import select

from tide.hostlist import HostlistError, expand
from tide.model import Cluster
from tide.server.auth import Principal
from tide.server.errors import bad_request, not_found
from tide.server.services.lifecycle import LIVE
from tide.store import codec
from tide.store import nodes as noderepo
from tide.store.models import JobRow


def _usage(ctl: Any) -> dict[int, dict[str, Any]]:
    """Per node index: allocated GPUs, cores, memory and job ids."""
    out: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"gpus": 0, "cores": 0, "mem": 0, "jobs": []}
    )
    stmt = select(JobRow.id, JobRow.allocation).where(JobRow.state.in_(LIVE))
    with ctl.sessions() as s:
        rows = list(s.execute(stmt))
    for job_id, text in rows:
        alloc = codec.alloc_from_json(text)
        if alloc is None:
            continue
        for na in alloc.nodes:
            u = out[na.node]
            u["gpus"] += len(na.gpus)
            u["cores"] += len(na.cores)
            u["mem"] += na.mem
            u["jobs"].append(job_id)
    return out


def switch_paths(cluster: Cluster) -> dict[str, tuple[str, str]]:
    """node -> (leaf switch, path from the top switch to the leaf)."""
    parent: dict[str, str] = {}
    for sw in cluster.topology.switches:
        for child in sw.switches:
            parent[child] = sw.name
    out: dict[str, tuple[str, str]] = {}
    for sw in cluster.topology.switches:
        if not sw.is_leaf:
            continue
        chain = [sw.name]
        while chain[-1] in parent and parent[chain[-1]] not in chain:
            chain.append(parent[chain[-1]])
        for n in sw.nodes:
            out[n] = (sw.name, "/".join(reversed(chain)))
    for b in cluster.topology.blocks:
        for n in b.nodes:
            out.setdefault(n, (b.name, b.name))
    return out


def listing(ctl: Any) -> list[dict[str, Any]]:
    usage = _usage(ctl)
    with ctl.lock:
        states = dict(ctl.node_states)
    paths = switch_paths(ctl.cluster)
    out = []
    for i, n in enumerate(ctl.cluster.nodes):
        admin, reason = states.get(n.name, (str(n.state), n.reason))
        u = usage.get(i, {"gpus": 0, "cores": 0, "mem": 0, "jobs": []})
        cpus_alloc = u["cores"] * max(1, n.threads_per_core)
        busy = u["jobs"] != []
        full = (n.gpu_count and u["gpus"] >= n.gpu_count) or cpus_alloc >= n.cpus
        if admin == "DRAIN":
            state = "DRAINING" if busy else "DRAINED"
        elif admin in ("DOWN", "FUTURE"):
            state = admin
        else:
            state = "ALLOCATED" if busy and full else "MIXED" if busy else "IDLE"
        leaf, path = paths.get(n.name, ("", ""))
        out.append(
            {
                "name": n.name,
                "state": state,
                "admin_state": admin,
                "reason": reason,
                "cpus": n.cpus,
                "cpus_alloc": cpus_alloc,
                "gpus": n.gpu_count,
                "gpus_alloc": u["gpus"],
                "gpu_type": n.gpu_type(),
                "memory": n.real_memory,
                "mem_alloc": u["mem"],
                "partitions": list(n.partitions)
                or [p.name for p in ctl.cluster.partitions if n.name in p.nodes],
                "features": list(n.features),
                "switch": leaf,
                "switch_path": path,
                "jobs": u["jobs"],
                "address": n.address,
            }
        )
    return out


def partitions(ctl: Any) -> list[dict[str, Any]]:
    by_name = {n.name: n for n in ctl.cluster.nodes}
    return [
        {
            "name": p.name,
            "default": p.default or p is ctl.cluster.default_partition(),
            "state": p.state,
            "max_time": p.max_time,
            "default_time": p.default_time,
            "max_nodes": p.max_nodes,
            "priority_tier": p.priority_tier,
            "allow_accounts": list(p.allow_accounts),
            "allow_qos": list(p.allow_qos),
            "nodes": list(p.nodes),
            "gpus": sum(by_name[n].gpu_count for n in p.nodes if n in by_name),
        }
        for p in ctl.cluster.partitions
    ]


def set_state(ctl: Any, who: Principal, names: str, state: str, reason: str) -> list[dict]:
    """drain / resume / down, for a hostlist of nodes (operators)."""
    try:
        wanted = expand(names)
    except HostlistError as e:
        raise bad_request(str(e), "nodes", "e.g. gpu[01-04],gpu07") from e
    known = {n.name for n in ctl.cluster.nodes}
    for name in wanted:
        if name not in known:
            raise not_found("node", name, "list nodes with `tide nodes -N`")
    if state in ("DRAIN", "DOWN") and not reason.strip():
        raise bad_request(
            f"a reason is required to set {state}", "reason", 'give one, e.g. reason="bad GPU"'
        )
    now = time.time()
    with ctl.sessions.begin() as s:
        for name in wanted:
            noderepo.set_state(s, name, state, reason if state != "IDLE" else "", who.user, now)
    for name in wanted:
        ctl.set_node_state(name, state, reason if state != "IDLE" else "")
    if state == "DOWN":
        _fail_jobs_on(ctl, who, set(wanted), reason)
    if ctl.loop is not None:
        ctl.loop.wake()
    rows = {n["name"]: n for n in listing(ctl)}
    return [rows[n] for n in wanted]


def _fail_jobs_on(ctl: Any, who: Principal, names: set[str], reason: str) -> None:
    """Slurm kills the jobs of a node set DOWN: they end NODE_FAIL, or wait again
    when submitted with --requeue (tide.server.services.lifecycle)."""
    from tide.server.services.lifecycle import NODE_FAIL
    from tide.store import jobs as jobrepo

    index = {i for i, n in enumerate(ctl.cluster.nodes) if n.name in names}
    now = time.time()
    doomed = []
    with ctl.sessions.begin() as s:
        stmt = select(JobRow.id, JobRow.state, JobRow.allocation).where(JobRow.state.in_(LIVE))
        for job_id, st, text in list(s.execute(stmt)):
            alloc = codec.alloc_from_json(text)
            if alloc is None or not index & set(alloc.node_indices):
                continue
            jobrepo.transition(
                s,
                job_id,
                [st],
                "COMPLETING",
                now,
                {"cancel_requested": NODE_FAIL + who.user},
                reason=f"node down: {reason}",
                actor=who.user,
            )
            doomed.append(job_id)
    for job_id in doomed:
        if ctl.executor is not None:
            ctl.executor.cancel(job_id, grace=ctl.settings.kill_wait)
