"""Fair-share (sshare), priority breakdown (sprio) and usage reports (sreport)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from tide.sched.fairshare import fair_tree_factors, sshare_rows
from tide.sched.priority import compute_priorities
from tide.server.auth import Principal
from tide.server.errors import bad_request
from tide.server.ports import Ctl
from tide.server.snapshot import load
from tide.store import accounting


def share(ctl: Ctl) -> list[dict[str, Any]]:
    with ctl.lock:
        tree, usage = ctl.tree, dict(ctl.usage)
    return [asdict(r) for r in sshare_rows(tree, usage)]


def quota_share(ctl: Ctl) -> list[dict[str, Any]]:
    """Kueue-style quota per account and cohort and GPU type: nominal, in use,
    borrowed, lent (tide.sched.quota.share_rows); [] without quotas."""
    if ctl.quotas is None:
        return []
    from tide.sched.quota import share_rows

    with ctl.sessions() as s:
        entries = ctl.active.refresh(s, time.time(), wait=False)
    running = [e.running for e in entries.values() if e.running is not None]
    types = {g.type for n in ctl.cluster.nodes for g in n.gpus}
    with ctl.lock:
        tree = ctl.tree
    return [asdict(r) for r in share_rows(ctl.quotas, running, tree, sorted(types))]


def priorities(
    ctl: Ctl, who: Principal, job_ids: list[str], users: list[str]
) -> list[dict[str, Any]]:
    snap = load(ctl, ctl.active, time.time(), False).snapshot
    jobs = list(snap.pending)
    if not who.operator:
        users = [who.user]
    if users:
        jobs = [j for j in jobs if j.user in users]
    if job_ids:
        wanted = set(job_ids)
        jobs = [
            j
            for j in jobs
            if j.display_id in wanted or str(j.id) in wanted or str(j.array_job_id) in wanted
        ]
    fs = fair_tree_factors(snap.accounts, snap.usage)
    result = compute_priorities(jobs, snap.cluster, snap.config, snap.accounts, fs, snap.now)
    out = []
    for i, j in enumerate(jobs):
        b = result.breakdown(i)
        d = asdict(b)
        d["partition_factor"] = d.pop("partition")
        d.update(
            {
                "job_id": j.display_id,
                "user": j.user,
                "account": j.account,
                "partition": j.request.partitions[0] if j.request.partitions else "",
            }
        )
        out.append(d)
    out.sort(key=lambda d: -d["total"])
    return out


def usage_report(ctl: Ctl, who: Principal, start: float, end: float, by: str) -> dict[str, Any]:
    if end <= start:
        raise bad_request("the period ends before it starts", "end", "give end > start")
    if by not in ("user", "account"):
        raise bad_request(f"by={by!r}", "by", "use 'user' or 'account'")
    now = time.time()
    with ctl.sessions() as s:
        lines = accounting.report(s, start, end, now)
        prices = accounting.prices(s)
    if not who.operator:
        lines = [x for x in lines if x.user == who.user]
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for x in lines:
        key = (x.account, x.user if by == "user" else "", x.gpu_type)
        r = rows.setdefault(
            key,
            {"account": key[0], "user": key[1], "gpu_type": key[2], "jobs": 0, "gpu_seconds": 0.0},
        )
        r["jobs"] += x.jobs
        r["gpu_seconds"] += x.gpu_seconds
        r["lost_gpu_seconds"] = r.get("lost_gpu_seconds", 0.0) + x.lost_gpu_seconds
    out = []
    for r in rows.values():
        price = prices.get(r["gpu_type"], prices.get("", 0.0))
        r["gpu_hours"] = r["gpu_seconds"] / 3600.0
        r["price_per_gpu_hour"] = price
        r["cost"] = r["gpu_hours"] * price
        out.append(r)
    out.sort(key=lambda r: (r["account"], r["user"], r["gpu_type"]))
    return {
        "start": start,
        "end": end,
        "by": by,
        "prices": prices,
        "lines": out,
        "total_gpu_hours": sum(r["gpu_hours"] for r in out),
        "total_cost": sum(r["cost"] for r in out),
        "total_lost_gpu_hours": sum(r["lost_gpu_seconds"] for r in out) / 3600.0,
    }
