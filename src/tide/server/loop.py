"""The scheduling loop: Load -> Schedule -> Apply, on events, every bf_interval
and at the time the core asks for (Decisions.wake).

* Load (tide.server.snapshot): one short read session builds the core's
  Snapshot from the in-memory queue.
* Schedule (tide.server.schedule): the named policy the twin runs decides,
  with no session open, so the store is free for the API while it thinks.
* Apply (tide.server.apply): one write transaction of guarded updates: a
  start only happens if the job is still PENDING at the revision the core
  saw; then the executor launches the jobs that were committed as RUNNING.

The same thread polls the executor for ended jobs (ExitReports) and ends
them (tide.server.services.lifecycle). Events (a submission, a job end, a
node resumed) wake the loop; passes are at least `min_interval` apart (and
the configuration's sched_min_interval, tide.sched.triggers.min_gap: events
in between are served by one pass, as in the twin), and a backfill pass runs
every bf_interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tide.hostlist import compress
from tide.model.job import Job
from tide.sched import triggers
from tide.sched.isolate import JobFault, schedule_isolating
from tide.sched.types import Decisions, Snapshot
from tide.sched.usage import charge_all, decay
from tide.server import ray_nodes
from tide.server.apply import apply, cpus_of
from tide.server.pass_log import PassLog
from tide.server.ports import Ctl
from tide.server.schedule import PolicyDriver
from tide.server.services import faults as jobfaults
from tide.server.services import lifecycle, nodes, preemption, share_history
from tide.server.services.completing import CompletingWatch
from tide.server.snapshot import Loaded, load

log = logging.getLogger("tide.server")

USAGE_SAVE_EVERY = 60.0  # seconds between writes of decayed usage
PASS_SHARE = 4.0  # event passes wait at least this many times the last pass's CPU time
DEFER_CAP = 3.0  # under submissions, a pass waits for the API's share at most this many gaps
BUSY_CORES = 0.1  # the rest of the process using this much CPU is busy (submissions pour in)
PROBE_EVERY = 2.0  # seconds between looks at live jobs' step records
WATCH_EVERY = 1.0  # seconds between looks at the node agents (DOWN within 10 s)
COMPLETING_EVERY = 5.0  # seconds between looks for jobs stuck COMPLETING


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
    cpu: float = 0.0  # CPU seconds of the loop's thread so far (passes, polling, timers)


@dataclass(slots=True, frozen=True)
class WillRun:
    """sbatch --test-only's answer: when (None: no planned start), where, why not now."""

    start: float | None
    nodes: str
    partition: str
    cpus: int
    reason: str


class SchedulingLoop:
    def __init__(
        self, ctl: Ctl, schedule_fn: Callable[[Snapshot], Decisions] | None = None
    ) -> None:
        self.ctl = ctl
        self._own_scheduler = schedule_fn is None
        self.driver: PolicyDriver | None = None
        self._schedule: Callable[[Snapshot], Decisions]
        if schedule_fn is None:
            self.driver = self._schedule = _driver(ctl)
        else:
            self._schedule = schedule_fn
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
        self._last_completing = 0.0
        self.completing = CompletingWatch()
        self._last_share = 0.0
        self._last_cost = 0.0  # CPU seconds of the last pass (this thread's)
        self._cpu_seen = (0.0, 0.0, 0.0)  # process and loop CPU, wall time after a pass
        self._jobs_seen = 0  # jobs the writer had stored by then
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
                if now - self._last_completing >= COMPLETING_EVERY:
                    self._last_completing = now
                    self.completing.check(self.ctl, time.monotonic())
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
                if (self._dirty or due_bf) and self._pass_due(now):
                    backfill = due_bf or self.stats.cycles == 0
                    # a backfill tick no event asked for is Slurm's backfill thread
                    # alone (Snapshot.main_pass), as the twin's engine tells them apart
                    event, self._dirty = self._dirty, False
                    self.cycle(backfill=backfill, main_pass=event or not backfill)
                    self._after_pass()
            except Exception as e:  # the loop must survive anything one pass does
                self.stats.errors += 1
                self.stats.last_error = f"{type(e).__name__}: {e}"
                log.exception("scheduling pass failed")
                time.sleep(min(1.0, s.poll_interval))
            self.stats.cpu = time.thread_time()

    def _pass_due(self, now: float) -> bool:
        """At least min_interval between passes, and 4x the last pass's CPU time:
        a long pass (a huge queue) never takes more than a fifth of the process
        from the API and the submissions. CPU, not wall time: on a loaded machine
        a cheap pass lasts long, and 4x its wall time left a burst of submissions
        pending for seconds. And while submissions pour in (the rest of the
        process busy), it must also have had 4x that CPU since the last pass: on
        a machine where the process gets half a core, 4x in wall time gave the
        passes two fifths of its CPU. That wait is bounded (DEFER_CAP gaps), so a
        starved API cannot hold the queue still; a lone submission waits for
        nothing more."""
        s = self.ctl.settings
        gap = max(s.min_interval, triggers.min_gap(self.ctl.config), PASS_SHARE * self._last_cost)
        waited = now - self._last_cycle
        if waited < gap:
            return False
        writer = self.ctl.writer
        if writer is None or writer.jobs == self._jobs_seen or waited >= DEFER_CAP * gap:
            return True
        process, mine, at = self._cpu_seen
        rest = (time.process_time() - process) - (time.thread_time() - mine)
        busy = rest >= BUSY_CORES * max(1e-3, now - at)
        return not busy or rest >= PASS_SHARE * self._last_cost

    def _after_pass(self) -> None:
        """What _pass_due compares with: CPU times, wall time and submissions now."""
        self._cpu_seen = (time.process_time(), time.thread_time(), time.time())
        writer = self.ctl.writer
        self._jobs_seen = writer.jobs if writer is not None else 0

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

    def cycle(self, backfill: bool = True, main_pass: bool = True) -> Decisions:
        """One pass; main_pass=False: a backfill tick that no event asked for."""
        with self.cycle_lock:
            now = time.time()
            self._last_cycle = now
            if backfill:
                self._last_bf = now
            t0, c0 = time.perf_counter(), time.thread_time()
            self._charge_usage(now)
            loaded = load(self.ctl, self.ctl.active, now, backfill, main_pass=main_pass)
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
                cpus = cpus_of(snap, s.alloc)
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
        save_usage = now - self._usage_saved >= USAGE_SAVE_EVERY
        if save_usage:
            self._usage_saved = now
        started, kill_due = apply(self.ctl, loaded, d, now, save_usage)
        if kill_due:  # victims signalled; a kill may be due at once
            self._wake.set()
        return started

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


def _driver(ctl: Ctl) -> PolicyDriver:
    """Schedule's adapter over the cluster's named policy (tide.server.schedule)."""
    driver = PolicyDriver(ctl.cluster, ctl.config, ctl.pools)
    ctl.pooled = driver.pooled
    return driver
