"""What each dashboard page shows, built from the same services as the API, so
permissions are the API's: a user sees their own jobs (others' GPUs show as
"other"), operators and admins see everything.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import Any

from tide.server import views as apiviews
from tide.server.auth import Principal
from tide.server.ports import Ctl
from tide.server.services import efficiency as eff
from tide.server.services import jobs as jobsvc
from tide.server.services import nodes as nodesvc
from tide.server.services import reports as reportsvc
from tide.server.services import share_history
from tide.server.services.lifecycle import LIVE
from tide.store import accounting
from tide.store import jobs as jobrepo
from tide.store.jobs import ACTIVE, JobFilter


def _gpu_owners(ctl: Ctl, who: Principal) -> dict[tuple[int, int], dict[str, Any]]:
    """(node index, GPU index) -> the live job holding it, as this user may see it."""
    with ctl.sessions() as s:
        rows = jobrepo.live_columns(s, LIVE, "user", "account", "allocation", "name")
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for job_id, user, account, text, name in rows:
        if not text:
            continue
        mine = who.operator or user == who.user
        label = {"job": job_id, "user": user, "account": account, "name": name} if mine else {}
        for na in json.loads(text)["nodes"]:
            for g in na["gpus"]:
                out[(int(na["node"]), int(g))] = label
    return out


def cluster(ctl: Ctl, who: Principal) -> dict[str, Any]:
    """Switches -> nodes -> GPUs: the switch tree (or blocks, or one flat group)
    with each node's state and each GPU's holder."""
    nodes = nodesvc.listing(ctl)
    owners = _gpu_owners(ctl, who)
    index = ctl.cluster.node_index()
    for n in nodes:
        i = index[n["name"]]
        n["gpu_slots"] = [{"index": g, "owner": owners.get((i, g))} for g in range(n["gpus"])]
        n["gpu_pct"] = round(100 * n["gpus_alloc"] / n["gpus"]) if n["gpus"] else 0
    by_name = {n["name"]: n for n in nodes}
    groups = _groups(ctl, by_name)
    total = sum(n["gpus"] for n in nodes)
    used = sum(n["gpus_alloc"] for n in nodes)
    states: dict[str, int] = defaultdict(int)
    for n in nodes:
        states[n["state"]] += 1
    return {
        "name": ctl.cluster.name,
        "groups": groups,
        "gpus_total": total,
        "gpus_alloc": used,
        "gpu_pct": round(100 * used / total) if total else 0,
        "node_states": dict(sorted(states.items())),
        "nodes": len(nodes),
    }


def _groups(ctl: Ctl, by_name: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Top switches, each with its leaves (path 'spine/leaf1') and their nodes."""
    topo = ctl.cluster.topology
    placed: set[str] = set()
    leaves: list[dict[str, Any]] = []
    for sw in topo.switches:
        if sw.is_leaf:
            members = [by_name[n] for n in sw.nodes if n in by_name]
            placed.update(n["name"] for n in members)
            leaves.append({"name": sw.name, "nodes": members})
    for b in topo.blocks:
        members = [by_name[n] for n in b.nodes if n in by_name and n not in placed]
        placed.update(n["name"] for n in members)
        leaves.append({"name": b.name, "nodes": members})
    rest = [n for name, n in by_name.items() if name not in placed]
    if rest:
        leaves.append({"name": "nodes" if not leaves else "other nodes", "nodes": rest})
    paths = nodesvc.switch_paths(ctl.cluster)
    tops: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for leaf in leaves:
        first = leaf["nodes"][0]["name"] if leaf["nodes"] else ""
        path = paths.get(first, ("", leaf["name"]))[1]
        top = path.split("/")[0] if "/" in path else ""
        leaf["path"] = path or leaf["name"]
        leaf["gpus"] = sum(n["gpus"] for n in leaf["nodes"])
        leaf["gpus_alloc"] = sum(n["gpus_alloc"] for n in leaf["nodes"])
        tops[top].append(leaf)
    return [{"name": top, "leaves": ls} for top, ls in tops.items()]


def queue(ctl: Ctl, who: Principal) -> dict[str, Any]:
    """Active jobs the caller may see, pending ones with reason and estimated start."""
    cols, rows = jobsvc.listing(ctl, who, JobFilter(states=ACTIVE))
    jobs = [dict(zip(cols, r, strict=True)) for r in rows]
    for j in jobs:
        j["job_id"] = apiviews.display_id(j["id"], j["array_job_id"], j["array_task_id"])
    pending = sorted(
        (j for j in jobs if j["state"] == "PENDING"),
        key=lambda j: (-(j["priority"] or 0), j["id"]),
    )
    running = sorted((j for j in jobs if j["state"] != "PENDING"), key=lambda j: j["id"])
    counts: dict[str, int] = defaultdict(int)
    for e in ctl.active.snapshot_entries():
        counts[e.meta.state] += 1
    return {
        "pending": pending,
        "running": running,
        "now": time.time(),
        "cluster_counts": dict(counts),
        "own_only": not who.operator,
    }


def job(ctl: Ctl, who: Principal, job_id: str) -> list[dict[str, Any]]:
    """The job(s) as `tide show job` gets them: phases, history, attempts, efficiency."""
    return jobsvc.show(ctl, who, job_id)


def accounts(ctl: Ctl, who: Principal, hours: float) -> dict[str, Any]:
    """Fair-share tree and its history over the window, GPU-hours and cost per
    account, each account's GPUs over time (binned), and training efficiency
    per account."""
    now = time.time()
    start = now - hours * 3600
    report = reportsvc.usage_report(ctl, who, start, now, "account")
    users = () if who.operator else (who.user,)
    with ctl.sessions() as s:
        attempts = accounting.attempts_between(s, start, now, users)
    return {
        "share": reportsvc.share(ctl),
        "report": report,
        "series": gpu_series(attempts, start, now, bins=48),
        "efficiency": eff.by_account(ctl, who, start),
        "share_history": share_history.history(ctl, start, now),
        "start": start,
        "now": now,
        "hours": hours,
        "own_only": not who.operator,
    }


def gpu_series(attempts: list[Any], start: float, end: float, bins: int) -> dict[str, list[float]]:
    """Per account, the mean GPUs it held in each of `bins` equal bins."""
    width = (end - start) / bins
    out: dict[str, list[float]] = defaultdict(lambda: [0.0] * bins)
    for a in attempts:
        a0, a1 = max(a.start_time, start), min(a.end_time or end, end)
        if a1 <= a0:
            continue
        first, last = int((a0 - start) // width), min(bins - 1, int((a1 - start) // width))
        for k in range(first, last + 1):
            lo, hi = start + k * width, start + (k + 1) * width
            overlap = min(hi, a1) - max(lo, a0)
            if overlap > 0:
                out[a.account][k] += a.gpus * overlap / width
    return dict(out)


def services(ctl: Ctl, who: Principal) -> dict[str, Any]:
    """Inference services as `tide service ls` lists them for the caller (their
    own, or all for operators): state, replicas ready of desired, router URL."""
    from tide.server.services import serving

    return {"items": serving.listing(ctl, who), "own_only": not who.operator, "now": time.time()}
