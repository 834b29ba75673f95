"""Nodes and partitions as sinfo/scontrol show them, and node state changes.

A node's displayed state combines the administrative state (IDLE, DRAIN,
DOWN, FUTURE) with what is allocated on it, like Slurm: IDLE, MIXED,
ALLOCATED; DRAINING while jobs still run on a drained node, DRAINED after.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from typing import Any

from tide.hostlist import HostlistError, expand
from tide.model import Cluster
from tide.server.auth import Principal
from tide.server.errors import bad_request, not_found
from tide.server.ports import Ctl
from tide.server.services.lifecycle import LIVE
from tide.store import codec
from tide.store import jobs as jobrepo
from tide.store import nodes as noderepo

log = logging.getLogger("tide.server")


def _usage(ctl: Ctl) -> dict[int, dict[str, Any]]:
    """Per node index: allocated GPUs, cores, memory and job ids."""
    out: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"gpus": 0, "cores": 0, "mem": 0, "jobs": []}
    )
    with ctl.sessions() as s:
        rows = jobrepo.live_columns(s, LIVE, "allocation")
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


def listing(ctl: Ctl) -> list[dict[str, Any]]:
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
        full = cpus_alloc >= n.cpus  # Slurm: ALLOCATED only with every CPU taken, else MIXED
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
                "sockets": n.sockets,
                "cores_per_socket": n.cores_per_socket,
                "threads_per_core": n.threads_per_core,
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


def partitions(ctl: Ctl) -> list[dict[str, Any]]:
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
            "deny_accounts": list(p.deny_accounts),
            "deny_qos": list(p.deny_qos),
            "nodes": list(p.nodes),
            "gpus": sum(by_name[n].gpu_count for n in p.nodes if n in by_name),
        }
        for p in ctl.cluster.partitions
    ]


def set_state(ctl: Ctl, who: Principal, names: str, state: str, reason: str) -> list[dict]:
    """drain / resume / down / fail, for a hostlist of nodes (operators). "FAIL"
    simulates a node failure (the local executor kills the node's agent), so
    the node goes DOWN the way a dead machine does."""
    wanted = _names(ctl, names)
    if state in ("DRAIN", "DOWN") and not reason.strip():
        raise bad_request(
            f"a reason is required to set {state}", "reason", 'give one, e.g. reason="bad GPU"'
        )
    if state == "FAIL":
        fail = getattr(ctl.executor, "fail_node", None)
        if fail is None:
            raise bad_request(
                "this executor cannot simulate a node failure", "nodes", "use `tide node down`"
            )
        for name in wanted:
            fail(name)
            down_and_fence(ctl, name, reason or "failed (tide node fail)", who.user)
    else:
        resume = getattr(ctl.executor, "resume_node", None)
        if state == "IDLE" and resume is not None:
            for name in wanted:  # a new agent first, or the watcher sees none and fails it
                resume(name)
        _store_state(ctl, wanted, state, reason, who.user)
        if state == "DOWN":
            _fail_jobs_on(ctl, set(wanted), reason, who.user)
    if ctl.loop is not None:
        ctl.loop.wake()
    rows = {n["name"]: n for n in listing(ctl)}
    return [rows[n] for n in wanted]


def _names(ctl: Ctl, names: str) -> list[str]:
    try:
        wanted = expand(names)
    except HostlistError as e:
        raise bad_request(str(e), "nodes", "e.g. gpu[01-04],gpu07") from e
    known = {n.name for n in ctl.cluster.nodes}
    for name in wanted:
        if name not in known:
            raise not_found("node", name, "list nodes with `tide nodes -N`")
    return wanted


def _store_state(ctl: Ctl, names: list[str], state: str, reason: str, actor: str) -> None:
    now = time.time()
    text = reason if state != "IDLE" else ""
    with ctl.sessions.begin() as s:
        for name in names:
            noderepo.set_state(s, name, state, text, actor, now)
    for name in names:
        ctl.set_node_state(name, state, text)


def mark_down(ctl: Ctl, names: list[str], reason: str, actor: str) -> None:
    """A node failed: DOWN (out of scheduling until resumed), its jobs lose it."""
    _store_state(ctl, names, "DOWN", reason, actor)
    _fail_jobs_on(ctl, set(names), reason, actor)
    if ctl.loop is not None:
        ctl.loop.wake()
    if ctl.services is not None:  # routers learn now that the node's replicas are lost
        ctl.services.wake()


def down_and_fence(ctl: Ctl, name: str, reason: str, actor: str) -> None:
    """A failed node: DOWN and its jobs marked lost first, then fenced. In this
    order an end the fence causes (a killed supervisor) is read as NODE_FAIL, not
    as the job's own failure (a loaded machine collected such ends in between)."""
    mark_down(ctl, [name], reason, actor)
    words = _fence(ctl, name)
    if words:
        _store_state(ctl, [name], "DOWN", reason + words, actor)


def _fail_jobs_on(ctl: Ctl, names: set[str], reason: str, actor: str) -> None:
    """The jobs of a node gone DOWN lose it: its processes die, the rest of each
    job is torn down (tide.exec.supervisor.fail_node), and the job ends
    NODE_FAIL or, requeueable, waits again (tide.server.services.lifecycle)."""
    from tide.server.services.lifecycle import NODE_FAIL

    index = {i: n.name for i, n in enumerate(ctl.cluster.nodes) if n.name in names}
    now = time.time()
    doomed: list[tuple[int, str]] = []
    with ctl.sessions.begin() as s:
        rows = jobrepo.live_columns(s, LIVE, "state", "allocation", "cancel_requested")
        for job_id, st, text, asked in rows:
            alloc = codec.alloc_from_json(text)
            lost = [index[i] for i in alloc.node_indices if i in index] if alloc else []
            if not lost:
                continue
            doomed.append((job_id, lost[0]))
            if asked:
                continue  # already being stopped (cancel, requeue): that decides its end
            jobrepo.transition(
                s,
                job_id,
                [st],
                "COMPLETING",
                now,
                {"cancel_requested": NODE_FAIL + actor},
                reason=f"node {lost[0]} down: {reason}",
                actor=actor,
            )
    for job_id, node in doomed:
        _stop_for_node(ctl, job_id, node, f"node {node} failed: {reason}")


def _fence(ctl: Ctl, name: str) -> str:
    """Power a failed node off before its jobs are failed and requeued, so none runs
    twice because the node was only slow (tide.exec.fence); words for the reason."""
    fence = getattr(ctl.executor, "fence_node", None)
    if fence is None:
        return ""
    killed = fence(name)
    log.warning("node %s fenced: its agent and %d job processes killed", name, len(killed))
    return f"; fenced ({len(killed)} job processes killed)" if killed else "; fenced"


def _stop_for_node(ctl: Ctl, job_id: int, node: str, message: str) -> None:
    ex = ctl.executor
    if ex is None:
        return
    if hasattr(ex, "node_failed"):
        ex.node_failed(job_id, node, message)
    else:
        ex.cancel(job_id, grace=ctl.settings.kill_wait)


# --- the node watcher (tide.exec.agent) --------------------------------------------


def start_agents(ctl: Ctl) -> None:
    """Start (or adopt) the executor's node agents, with the cluster's
    HealthCheckProgram and HealthCheckInterval (slurm.conf keys)."""
    from tide.server.services.recovery import policy_errors

    problems = policy_errors(ctl.config)
    extra = {k.lower(): v for k, v in ctl.config.extra.items()}
    program = extra.get("healthcheckprogram", "").strip()
    try:
        interval = float(extra.get("healthcheckinterval", "") or 30)
    except ValueError:
        interval = 30.0
        problems.append(
            f"HealthCheckInterval={extra['healthcheckinterval']!r}: write seconds; using 30"
        )
    if program and not os.access(program, os.X_OK):
        problems.append(f"HealthCheckProgram={program!r} is not an executable file; not run")
        program = ""
    for p in problems:
        log.warning("recovery settings: %s", p)
        ctl.warnings.append(p)
    start = getattr(ctl.executor, "start_nodes", None)
    if start is not None:
        start([n.name for n in ctl.cluster.nodes], program, max(1.0, interval))


def watch(ctl: Ctl) -> None:
    """Nodes whose agent stopped answering go DOWN; a failed health check drains
    its node with the check's output as the reason (the loop calls this often)."""
    health = getattr(ctl.executor, "node_health", None)
    if health is None:
        return
    with ctl.lock:
        states = dict(ctl.node_states)
    for n in ctl.cluster.nodes:
        admin = states.get(n.name, (str(n.state), ""))[0]
        if admin in ("DOWN", "FUTURE"):
            continue
        h = health(n.name)
        if not h.alive:
            log.warning("node %s is not responding: %s", n.name, h.why)
            down_and_fence(ctl, n.name, f"not responding: {h.why}", "tide")
        elif h.failed_check is not None and admin != "DRAIN":
            log.warning("node %s failed its health check: %s", n.name, h.failed_check)
            _store_state(ctl, [n.name], "DRAIN", f"health check: {h.failed_check}", "tide")
            if ctl.loop is not None:
                ctl.loop.wake()
