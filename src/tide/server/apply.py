"""Apply: the last step of Load -> Schedule -> Apply (tide.server.loop).

One write transaction of guarded updates through the store's door
(tide.store.jobs, which also brings the in-memory queue up to date on
commit): a start only happens if the job is still PENDING at the revision
the core saw, with its accounting attempt opened; pending jobs' reasons,
priorities, planned starts and EligibleTime are written when they changed.
Then the executor launches the jobs committed as RUNNING, and the
preemptions are signalled (tide.server.services.preemption).
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tide.hostlist import compress
from tide.model.job import Job
from tide.sched.types import Decisions
from tide.server import launch as launching
from tide.server.ports import Ctl
from tide.server.services import lifecycle, preemption
from tide.server.snapshot import Loaded
from tide.store import accounting, codec
from tide.store import jobs as jobrepo
from tide.store import usage as usagerepo

log = logging.getLogger("tide.server")

LAUNCH_WORKERS = 4  # jobs launched at once after a pass


def apply(
    ctl: Ctl, loaded: Loaded, d: Decisions, now: float, save_usage: bool
) -> tuple[int, bool]:
    """Apply one pass's decisions: guarded starts with their accounting
    attempts, pending jobs' scheduler columns and (when asked) the decayed
    usage in one transaction, then launches and preemptions.
    Returns (jobs started, a victim's kill may be due at once)."""
    snap = loaded.snapshot
    by_id = {j.id: j for j in snap.pending}
    launched: list[tuple[int, Any, str]] = []
    with ctl.sessions.begin() as s:
        for st in d.starts:
            job = by_id.get(st.job_id)
            meta = loaded.meta.get(st.job_id)
            if job is None or meta is None:
                continue
            names = [snap.cluster.nodes[n.node].name for n in st.alloc.nodes]
            gpu_type = gpu_type_of(snap, st.alloc)
            ok = jobrepo.transition(
                s,
                st.job_id,
                ["PENDING"],
                "RUNNING",
                now,
                {
                    "start_time": now,
                    "run_partition": st.partition,
                    "allocation": codec.alloc_json(st.alloc),
                    "nodelist": compress(names),
                    "gpus_alloc": st.alloc.gpu_count,
                    "cpus_alloc": cpus_of(snap, st.alloc),
                    "gpu_type": gpu_type,
                    "reason": "None",
                    "planned_start": None,
                    "eligible_time": _eligible(job, d, now),
                },
                reason="backfill" if st.backfilled else "scheduled",
                actor="scheduler",
                rev=meta.rev,
            )
            if not ok:
                continue  # cancelled, held or changed since Load
            accounting.open_attempt(
                s,
                job_id=st.job_id,
                attempt=job.restarts,
                user=job.user,
                account=job.account,
                partition=st.partition,
                start_time=now,
                allocation=codec.alloc_json(st.alloc),
                nodelist=compress(names),
                gpus=st.alloc.gpu_count,
                gpu_type=gpu_type,
                cpus=cpus_of(snap, st.alloc),
            )
            launched.append((st.job_id, st.alloc, st.partition))
        _write_pending(s, loaded, d)
        if save_usage:
            usagerepo.save(s, dict(ctl.usage), {}, now)
    if len(launched) == 1:
        _launch(ctl, *launched[0], snap)
    elif launched:  # an executor may take a moment per job (a process to start)
        with ThreadPoolExecutor(max_workers=LAUNCH_WORKERS) as pool:
            for job_id, alloc, partition in launched:
                pool.submit(_launch, ctl, job_id, alloc, partition, snap)
    kill_due = preemption.apply(ctl, d, now) > 0  # victims signalled
    return len(launched), kill_due


def _write_pending(s: Any, loaded: Loaded, d: Decisions) -> None:
    """Reasons, priorities, planned starts and eligibility of pending jobs,
    through the store's door (which updates the in-memory queue on commit);
    only what changed, so a quiet 100,000-job queue costs no writes."""
    started = {st.job_id for st in d.starts}
    changes = []
    for job_id, info in d.pending.items():
        meta = loaded.meta.get(job_id)
        if meta is None or job_id in started:
            continue
        prio = _finite(d.priorities.get(job_id, info.priority))
        planned = info.planned_start
        if (
            str(info.reason) == meta.reason
            and prio == meta.priority
            and _same_time(planned, meta.planned_start)
            and job_id not in d.eligible
        ):
            continue
        nodes = ""
        if info.planned_nodes:
            cl = loaded.snapshot.cluster
            nodes = compress([cl.nodes[i].name for i in info.planned_nodes])
        changes.append({"jid": job_id, "reason": str(info.reason), "priority": prio,
                        "planned_start": planned, "planned_nodes": nodes})  # fmt: skip
    jobrepo.write_pending(s, changes)
    jobrepo.set_eligible(s, {j: t for j, t in d.eligible.items() if j not in started})


def _eligible(job: Job, d: Decisions, now: float) -> float:
    """EligibleTime of a job started now: as known, or as the core found it
    this pass (its begin time), else now."""
    if job.eligible is not None:
        return job.eligible
    return d.eligible.get(job.id, now)


def _launch(ctl: Ctl, job_id: int, alloc: Any, partition: str, snap: Any) -> None:
    with ctl.sessions() as s:
        row = jobrepo.get(s, job_id)
        if row is None:
            return
        req = codec.request_from_json(row.request)
        s.expunge(row)
    try:
        spec = launching.launch_spec(
            row, req, alloc, partition, snap.cluster, ctl.settings.url, ctl.secret,
            os_user=ctl.job_users.launch_user(row.user),
        )
        if ctl.executor is None:
            raise RuntimeError("no executor configured (server started with executor=none)")
        ctl.executor.launch(spec)
    except Exception as e:
        log.exception("launch of job %s failed", job_id)
        lifecycle.fail_launch(ctl, job_id, f"launch failed: {e}")
        return
    _cancel_if_asked_meanwhile(ctl, job_id, row.restarts)


def _cancel_if_asked_meanwhile(ctl: Ctl, job_id: int, restarts: int) -> None:
    """A cancel (scancel, a service scaling down, a preemption, a failed node)
    that committed while this launch was in flight reached an executor that
    did not know the job yet, and did nothing: the job would run on, COMPLETING
    for good. Asked after the launch, the executor knows it; a cancel that
    commits later finds it launched and needs no help."""
    with ctl.sessions() as s:
        row = jobrepo.get(s, job_id)
        if row is None or row.restarts != restarts:
            return  # ended and running again: that run is not this launch's
        asked = row.state == "COMPLETING" or bool(row.cancel_requested)
        state = row.state
    if asked and ctl.executor is not None:
        log.info("job %s was cancelled (%s) while it launched: cancelling it now", job_id, state)
        ctl.executor.cancel(job_id, grace=ctl.settings.kill_wait)


def cpus_of(snap: Any, alloc: Any) -> int:
    """AllocCPUS: allocated cores times each node's threads per core."""
    return sum(
        len(na.cores) * max(1, snap.cluster.nodes[na.node].threads_per_core) for na in alloc.nodes
    )


def gpu_type_of(snap: Any, alloc: Any) -> str:
    for na in alloc.nodes:
        node = snap.cluster.nodes[na.node]
        for g in node.gpus:
            if g.index in na.gpus and g.type:
                return g.type
    return ""


def _finite(priority: float) -> float:
    """A priority as stored: rounded, and 0 for a value no column can hold."""
    return float(round(priority)) if math.isfinite(priority) else 0.0


def _same_time(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) < 30.0  # planned starts move with the clock; write when it matters
