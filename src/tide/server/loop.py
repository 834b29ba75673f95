"""The scheduling loop: Load -> Process -> Apply, on events and every bf_interval.

* Load: one short read session builds the core's Snapshot (tide.server.snapshot).
* Process: the pure core (tide.sched) decides, with no session open, so the
  store is free for the API while the core thinks.
* Apply: one write transaction of guarded updates: a start only happens if
  the job is still PENDING at the revision the core saw; then the executor
  launches the jobs that were committed as RUNNING.

The same thread polls the executor for ended jobs (ExitReports) and ends
them (tide.server.services.lifecycle). Events (a submission, a job end, a
node resumed) wake the loop; passes are at least `min_interval` apart
(Slurm's sched_min_interval), and a backfill pass runs every bf_interval.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, bindparam, update

from tide.hostlist import compress
from tide.model.job import Job
from tide.sched.isolate import JobFault, schedule_isolating
from tide.sched.types import Decisions
from tide.sched.usage import charge_all, decay
from tide.server import launch as launching
from tide.server import ray_nodes
from tide.server.pass_log import PassLog
from tide.server.schedule import PolicyDriver
from tide.server.services import faults as jobfaults
from tide.server.services import lifecycle, nodes, preemption, share_history
from tide.server.snapshot import Loaded, load
from tide.store import accounting, codec
from tide.store import jobs as jobrepo
from tide.store import usage as usagerepo
from tide.store.models import JOBS

log = logging.getLogger("tide.server")

USAGE_SAVE_EVERY = 60.0  # seconds between writes of decayed usage
PASS_SHARE = 4.0  # event passes wait at least this many times the last pass's CPU time
LAUNCH_WORKERS = 4  # jobs launched at once after a pass
PROBE_EVERY = 2.0  # seconds between looks at live jobs' step records
WATCH_EVERY = 1.0  # seconds between looks at the node agents (DOWN within 10 s)


@dataclass(slots=True)
class CycleStats:
    cycles: int = 0
    backfill_cycles: int = 0
    started: int = 0
    last_load: float = 0.0
    last_process: float = 0.0
    last_apply: float = 0.0
    last_pending: int = 0
    last_running: int = 0
    last_at: float = 0.0
    errors: int = 0
    last_error: str = ""
    held_faulty: int = 0  # jobs held because they could not be evaluated


@dataclass(slots=True, frozen=True)
class WillRun:
    """sbatch --test-only's answer: when (None: no planned start), where, why not now."""

    start: float | None
    nodes: str
    partition: str
    cpus: int
    reason: str


class SchedulingLoop:
    def __init__(self, ctl: Any, schedule_fn: Any = None) -> None:
        self.ctl = ctl
        self._own_scheduler = schedule_fn is None
        self.driver: PolicyDriver | None = None if schedule_fn else _driver(ctl)
        self._schedule = schedule_fn or self.driver
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tide-sched", daemon=True)
        self.stats = CycleStats()
        self._last_bf = 0.0
        self._last_cycle = 0.0
        self._usage_saved = time.time()
        self._dirty = True
        self._last_probe = 0.0
        self._last_watch = 0.0
        self._last_share = 0.0
        self._last_cost = 0.0  # CPU seconds of the last pass (this thread's)
        self._wake_at: float | None = None
        self.cycle_lock = threading.Lock()  # one pass at a time (tests call cycle() too)
        settings = getattr(ctl, "settings", None)
        self.pass_log = PassLog(getattr(settings, "data_dir", None))

    def start(self) -> None:
        nodes.start_agents(self.ctl)
        lifecycle.reconcile(self.ctl)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)
        stop_nodes = getattr(self.ctl.executor, "stop_nodes", None)
        if stop_nodes is not None:
            stop_nodes()

    def wake(self) -> None:
        self._dirty = True
        self._wake.set()

    def cluster_changed(self) -> None:
        """ctl.cluster gained nodes (tide.server.ray_nodes): a new core index.
        The caller holds cycle_lock, so no pass sees half of the change."""
        if self._own_scheduler:
            self.driver = _driver(self.ctl)
            self._schedule = self.driver
        self.wake()

    def _run(self) -> None:
        s = self.ctl.settings
        while not self._stop.is_set():
            self._wake.wait(timeout=s.poll_interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                ray_nodes.sync(self.ctl)  # before exits: a dead node's jobs then requeue
                if lifecycle.collect_exits(self.ctl):
                    self._dirty = True
                if self._preemption_tick():
                    self._dirty = True
                now = time.time()
                if now - self._last_watch >= WATCH_EVERY:
                    self._last_watch = now
                    nodes.watch(self.ctl)
                if now - self._last_probe >= PROBE_EVERY:
                    self._last_probe = now
                    lifecycle.probe_phases(self.ctl)
                if now - self._last_share >= share_history.fine_every(self.ctl):
                    self._last_share = now
                    self._sample_shares(now)
                due_bf = now - self._last_bf >= self.ctl.config.bf_interval
                if self._wake_at is not None and now >= self._wake_at:
                    self._wake_at = None  # the core asked for a pass by now
                    self._dirty = True
                # at least min_interval between passes, and 4x the last pass's CPU
                # time: a long pass (a huge queue) never takes more than a fifth of
                # the process from the API and the submissions. CPU, not wall time:
                # on a loaded machine a cheap pass lasts long, and 4x its wall time
                # left a burst of submissions pending for seconds
                gap = max(s.min_interval, PASS_SHARE * self._last_cost)
                if (self._dirty or due_bf) and now - self._last_cycle >= gap:
                    self._dirty = False
                    self.cycle(backfill=due_bf or self.stats.cycles == 0)
            except Exception as e:  # the loop must survive anything one pass does
                self.stats.errors += 1
                self.stats.last_error = f"{type(e).__name__}: {e}"
                log.exception("scheduling pass failed")
                time.sleep(min(1.0, s.poll_interval))

    def _sample_shares(self, now: float) -> None:
        """Fair-share over time (services.share_history), with usage charged up
        to now; a failure here must not cost the scheduling pass."""
        try:
            self._charge_usage(now)
            share_history.sample(self.ctl, now)
        except Exception:
            log.exception("fair-share sample failed")

    def _preemption_tick(self) -> bool:
        """Kills after a grace, resumes, unparking (services.preemption); a
        failure here must not cost the scheduling pass."""
        try:
            return preemption.tick(self.ctl, time.time())
        except Exception:
            log.exception("preemption timers failed")
            return False

    # --- one pass ----------------------------------------------------------------

    def cycle(self, backfill: bool = True) -> Decisions:
        with self.cycle_lock:
            now = time.time()
            self._last_cycle = now
            if backfill:
                self._last_bf = now
            t0, c0 = time.perf_counter(), time.thread_time()
            self._charge_usage(now)
            loaded = load(self.ctl, self.ctl.active, now, backfill)
            if loaded.snapshot.pending:
                self.pass_log.add(now, backfill)  # for replays (tide sim export)
            t1 = time.perf_counter()
            # a job that makes the core raise is left out and held; the rest go on
            decisions, faulty = schedule_isolating(self._schedule, loaded.snapshot)
            if self.driver is not None:
                self.driver.keep(loaded.snapshot, decisions)
            self._hold_faulty([*loaded.faults, *faulty], now)
            t2 = time.perf_counter()
            wake = decisions.wake  # a time the core wants another pass
            self._wake_at = wake if wake is not None and wake > now else None
            started = self._apply(loaded, decisions, now)
            t3 = time.perf_counter()
            self._last_cost = time.thread_time() - c0
            st = self.stats
            st.cycles += 1
            st.backfill_cycles += int(backfill)
            st.started += started
            st.last_load, st.last_process, st.last_apply = t1 - t0, t2 - t1, t3 - t2
            st.last_pending = len(loaded.snapshot.pending)
            st.last_running = len(loaded.snapshot.running)
            st.last_at = now
            return decisions

    def will_run(self, job: Job) -> WillRun:
        """What a pass now would do with `job` added to the queue (sbatch --test-only):
        start it now, or plan it for later, or leave it pending with a reason. The
        pass is run on a copy of the queue and nothing is applied or stored."""
        with self.cycle_lock:
            now = time.time()
            snap = load(self.ctl, self.ctl.active, now, True).snapshot
            snap.pending = [*snap.pending, job]
            decisions, _ = schedule_isolating(self._schedule, snap)
        names = [n.name for n in snap.cluster.nodes]
        for s in decisions.starts:
            if s.job_id == job.id:
                nodes = compress(names[na.node] for na in s.alloc.nodes)
                cpus = _cpus(snap, s.alloc)
                return WillRun(now, nodes, s.partition, cpus, "None")
        info = decisions.pending.get(job.id)
        if info is None:
            return WillRun(None, "", "", 0, "Unknown")
        nodes = compress(names[i] for i in info.planned_nodes)
        return WillRun(info.planned_start, nodes, "", 0, str(info.reason))

    def _hold_faulty(self, faults: list[JobFault], now: float) -> None:
        if faults:
            self.stats.held_faulty += len(jobfaults.hold(self.ctl, faults, now))

    def _apply(self, loaded: Loaded, d: Decisions, now: float) -> int:
        ctl = self.ctl
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
                gpu_type = _gpu_type(snap, st.alloc)
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
                        "cpus_alloc": _cpus(snap, st.alloc),
                        "gpu_type": gpu_type,
                        "reason": "None",
                        "planned_start": None,
                        "eligible_time": job.eligible if job.eligible is not None else now,
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
                    cpus=_cpus(snap, st.alloc),
                )
                launched.append((st.job_id, st.alloc, st.partition))
            self._write_pending(s, loaded, d)
            if now - self._usage_saved >= USAGE_SAVE_EVERY:
                usagerepo.save(s, dict(ctl.usage), {}, now)
                self._usage_saved = now
        if len(launched) == 1:
            self._launch(*launched[0], snap)
        elif launched:  # an executor may take a moment per job (a process to start)
            with ThreadPoolExecutor(max_workers=LAUNCH_WORKERS) as pool:
                for job_id, alloc, partition in launched:
                    pool.submit(self._launch, job_id, alloc, partition, snap)
        if preemption.apply(ctl, d, now):  # victims signalled; a kill may be due at once
            self._wake.set()
        return len(launched)

    def _write_pending(self, s: Any, loaded: Loaded, d: Decisions) -> None:
        """Reasons, priorities, planned starts and eligibility of pending jobs;
        only what changed, so a quiet 100,000-job queue costs no writes."""
        started = {st.job_id for st in d.starts}
        changes = []
        for job_id, info in d.pending.items():
            meta = loaded.meta.get(job_id)
            if meta is None or job_id in started:
                continue
            prio = _finite(d.priorities.get(job_id, info.priority))
            planned = info.planned_start
            newly_eligible = d.eligible.get(job_id)
            if (
                str(info.reason) == meta.reason
                and prio == meta.priority
                and _same_time(planned, meta.planned_start)
                and newly_eligible is None
            ):
                continue
            nodes = ""
            if info.planned_nodes:
                cl = loaded.snapshot.cluster
                nodes = compress([cl.nodes[i].name for i in info.planned_nodes])
            changes.append(
                {"jid": job_id, "r": str(info.reason), "p": prio, "ps": planned, "pn": nodes}
            )
            self.ctl.active.set_meta(
                job_id,
                reason=str(info.reason),
                priority=prio,
                planned_start=planned,
                planned_nodes=nodes,
            )
        t = JOBS
        if changes:
            stmt = (
                update(t)
                .where(and_(t.c.id == bindparam("jid"), t.c.state == "PENDING"))
                .values(
                    reason=bindparam("r"),
                    priority=bindparam("p"),
                    planned_start=bindparam("ps"),
                    planned_nodes=bindparam("pn"),
                )
            )
            s.connection().execute(stmt, changes)
        elig = [{"jid": j, "t": when} for j, when in d.eligible.items() if j not in started]
        for e in elig:
            self.ctl.active.set_eligible(e["jid"], e["t"])
        if elig:
            stmt = (
                update(t)
                .where(and_(t.c.id == bindparam("jid"), t.c.eligible_time.is_(None)))
                .values(eligible_time=bindparam("t"))
            )
            s.connection().execute(stmt, elig)

    def _launch(self, job_id: int, alloc: Any, partition: str, snap: Any) -> None:
        ctl = self.ctl
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

    def _charge_usage(self, now: float) -> None:
        """Decay usage by the time passed and charge running jobs' GPU-seconds
        for it (priority/multifactor's periodic usage update)."""
        ctl = self.ctl
        with ctl.lock:
            elapsed = now - ctl.usage_time
            if elapsed <= 0:
                return
            usage = decay(ctl.usage, elapsed, ctl.config.decay_half_life)
            ctl.usage = charge_all(usage, lifecycle.running_charges(ctl, ctl.usage_time, now))
            ctl.usage_time = now


def _driver(ctl: Any) -> PolicyDriver:
    """Schedule's adapter over the cluster's named policy (tide.server.schedule)."""
    driver = PolicyDriver(ctl.cluster, ctl.config, ctl.pools)
    ctl.pooled = driver.pooled
    return driver


def _cpus(snap: Any, alloc: Any) -> int:
    """AllocCPUS: allocated cores times each node's threads per core."""
    return sum(
        len(na.cores) * max(1, snap.cluster.nodes[na.node].threads_per_core) for na in alloc.nodes
    )


def _gpu_type(snap: Any, alloc: Any) -> str:
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
