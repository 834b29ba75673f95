"""The twin's discrete-event engine: it drives the scheduling core under a
virtual clock. There is no second scheduler here: every decision comes from
the policy (tide.sched.policies), exactly as in the live controller.

Time advances only by events, popped from a heap keyed (time, kind order,
sequence); the sequence is the insertion counter, so runs are reproducible
byte for byte. At equal times submissions come before terminations (the
order of pyss, SC'15). Each event that can change a decision runs a cycle:
a submission (only when the new job could fit the free GPUs now, since
otherwise nothing changes), an end, a node repair, a begin time reached.
With sched_min_interval an end followed by another end within it leaves its
cycle to that one, and where slurmctld's background phase is known
submissions wait for that thread (tide.sched.triggers).
Backfill runs in every cycle when bf_interval is 0, else every bf_interval
seconds of virtual time. Policies that model a scheduler looking at the
cluster in sessions (Capabilities.coalesce_ties: the Kubernetes-style ones) get
one cycle after all the events at one time instead: jobs submitted together
are in their queue together (seed 000's deadlock needs exactly that).
"""

from __future__ import annotations

import bisect
import copy
import heapq
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache

from tide.hostlist import compress
from tide.model import AccountTree, Cluster, Job, JobState, NodeState
from tide.model.quota import QuotaTree
from tide.model.sched_config import SchedulerConfig
from tide.sched import triggers
from tide.sched.futile import pass_is_futile
from tide.sched.index import ClusterIndex, build_index
from tide.sched.isolate import describe, schedule_isolating
from tide.sched.policies import Policy, policy_for
from tide.sched.predict import RuntimeModel, job_info
from tide.sched.requeue import requeue_policy
from tide.sched.state import Usage
from tide.sched.types import (
    Allocation,
    Decisions,
    NodeAlloc,
    Preemption,
    Reason,
    Running,
    RunningDelta,
    Snapshot,
    Start,
)
from tide.sim.active import Active, ActiveJobs
from tide.sim.columns import ResultColumns, TimelineColumns
from tide.sim.events import (
    BACKFILL,
    BACKGROUND,
    COMPLETE,
    END,
    FAIL,
    PREEMPT,
    REPAIR,
    SUBMIT,
    WAKE,
    Fault,
    Suspension,
)
from tide.sim.metrics import JobResult, Sample
from tide.sim.outputs import node_indices
from tide.sim.pending import PendingJobs
from tide.sim.progress import ProgressFn
from tide.sim.table import ResultTable, RowsOrColumns, Timeline
from tide.sim.training import Ledger
from tide.sim.workload.base import SimJob


class RunOutput(RowsOrColumns):
    """A run's results and timeline (as columns; `results` and `samples` build
    the JobResults and Samples on first use), and what else the engine counted."""

    def __init__(
        self,
        results: list[JobResult] | ResultTable,
        samples: list[Sample] | Timeline,
        capacity_gpus: int,
        cycles: int = 0,
        events: int = 0,
        job_faults: dict[int, str] | None = None,  # left out: could not evaluate
        training: dict[int, Ledger] | None = None,  # training jobs' device time
    ) -> None:
        self._hold(results, samples)
        self.capacity_gpus = capacity_gpus
        self.cycles = cycles
        self.events = events
        self.job_faults = job_faults if job_faults is not None else {}
        self.training = training if training is not None else {}


@dataclass
class Engine:
    cluster: Cluster
    config: SchedulerConfig
    policy_name: str = "slurm"
    accounts: AccountTree = field(default_factory=AccountTree)
    faults: list[Fault] = field(default_factory=list)
    requeue_default: bool = True
    index: ClusterIndex | None = None
    progress: ProgressFn | None = None  # (virtual time, jobs ended, jobs submitted)
    quotas: QuotaTree | None = None  # Kueue-style quotas (Snapshot.quotas)
    # a checkpointing victim whose grace covers its checkpoint cost saves on the
    # preemption warning and leaves, losing nothing (docs/services.md); off: it is
    # killed at the end of its grace and loses the work since its last checkpoint
    save_on_warning: bool = False
    # skip backfill passes that cannot decide anything new (docs/twin.md, "Passes
    # skipped"); off: a pass every bf_interval, as before (the property tests
    # compare both)
    skip_quiet: bool = True
    # the twin reads starts, not planned starts: backfill stops once nothing
    # left can start (Snapshot.starts_only); off: every job planned, as before
    starts_only: bool = True
    # tell the core what changed in the queue and among the running jobs since
    # the last snapshot (Snapshot.pending_delta, running_delta), so it keeps its
    # priority order and limit counts; off: None, the full sort and count every
    # cycle, as the live server (the property tests compare both)
    deltas: bool = True
    # let the core take its exact shortcuts (Snapshot.shortcuts: one new job's
    # priority without numpy, no limit counts without limits...), and give no
    # checkpoint times to a policy that cannot preempt; off: the general path
    # (the property tests compare both)
    shortcuts: bool = True
    # leave out a cycle with no job pending where the policy says such a cycle
    # decides nothing (Capabilities.idle_quiet): an end on a cluster without a
    # queue; off: every cycle runs (the property tests compare both)
    skip_idle: bool = True
    # skip a pass that can decide nothing: no GPU free and every pending job
    # waiting for GPUs alone (tide.sched.futile; the priority recalculation
    # still runs); off: the pass runs (the property tests compare both)
    skip_futile: bool = True

    def __post_init__(self) -> None:
        if self.faults:  # failures change node states: work on a copy
            self.cluster = copy.deepcopy(self.cluster)
        self.ix = self.index or build_index(self.cluster)
        self.policy: Policy = policy_for(self.config, self.ix, self.policy_name)
        self.usage = Usage.empty(self.ix)
        self._queue = PendingJobs()  # the same dict: it also says what changed
        self.pending: dict[int, Job] = self._queue
        self.sims: dict[int, SimJob] = {}
        self.active = ActiveJobs()
        self.results: dict[int, JobResult] = {}  # jobs submitted and not yet finished
        self.done = ResultColumns()  # finished jobs' results (Engine.retire_result)
        self.ended = 0  # jobs finished (for progress)
        self.finished: dict[str, str] = {}
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.token = 0
        self.samples = TimelineColumns()
        self.cycles = 0
        self.events = 0
        self._jobs: Iterator[SimJob] | None = None
        self._next_bf: float | None = None
        self._last_alloc: tuple[int, int, int] | None = None
        self._retired: set[int] = set()
        self.fs_usage: dict[str, float] = {}  # decayed billing-seconds per "account/user"
        self._prio_time: float | None = None
        # usage of jobs that ended since the last recalculation: Slurm charges a job at its
        # end; pending priorities see it at the next PriorityCalcPeriod
        self._ended_charges: list[tuple[str, float]] = []
        self.bound: dict[int, Allocation] = {}  # pods bound for jobs not running
        self.bound_since: dict[int, float] = {}
        self._wakes: set[float] = set()  # cycles the policy asked for (Decisions.wake)
        # when main passes run (tide.sched.triggers): an end's pass left to the next
        # event; submissions waiting for the background thread, and its last main pass
        self._owed = False
        self._background_due = False
        self._background_last: float | None = None
        self.job_faults: dict[int, str] = {}  # jobs the core could not evaluate -> why
        self.training: dict[int, Ledger] = {}  # jobs with a model: paid time, work done
        # run-time predictions, only for policies that plan with them (tide's)
        caps = self.policy.capabilities
        self.predictor = RuntimeModel(caps.predictor) if caps.predictions else None
        self.predicted: dict[int, float] = {}  # pending or running job -> its prediction
        # preemption: victims in their grace -> (preemptor, attempt token, mode, kill time)
        self.preempting: dict[int, tuple[int, int, str, float]] = {}
        self.warned: dict[int, float] = {}  # victims saving on the warning -> signal time
        self.suspended: dict[int, Suspension] = {}
        self._resumed = False  # a suspended job was resumed (its limit moved) once
        self.parked: dict[int, tuple[int, Job]] = {}  # requeued victim -> (preemptor, job)
        self.completing: dict[int, Allocation] = {}  # COMPLETE event -> what it frees
        self._by_event = False  # the cycle due is asked for by an event, not only a tick
        # the times a live controller ran its passes (a replayed history): cycles owed
        # in between wait for the next one; after the last, the twin runs on events
        self.passes: list[float] | None = None
        self.pass_backfill: dict[float, bool] = {}  # a pass -> it ran backfill, where known
        self._last_bf_pass: float | None = None
        self.requeue_rules = requeue_policy(self.config)[0]  # JobRequeue, MaxBatchRequeue...
        if not self.requeue_default:
            self.requeue_rules = replace(self.requeue_rules, job_requeue=False)
        self._preemptive = (
            self.config.preempt_type not in ("", "preempt/none") or self.quotas is not None
        )
        # Skipping quiet passes: `_version` counts every change a pass reads (an
        # event, a start, an end, a recalculation); `_quiet` is (version, until)
        # after a backfill pass that changed nothing: until the version moves or
        # the time reaches `until` (the next priority recalculation), the ticks
        # in between are skipped, `_dormant` while the tick chain is suspended.
        self._version = 0
        self._quiet: tuple[int, float] | None = None
        self._dormant = False
        self._ticks = 0  # BACKFILL events in the heap (live or stale)
        self._skips = (
            self.skip_quiet and self.policy.capabilities.time_invariant and not self._preemptive
        )
        self.skipped = 0  # backfill passes skipped
        self._idle_quiet = self.skip_idle and self.policy.capabilities.idle_quiet
        self.idle_skipped = 0  # cycles left out with no job pending (_idle)
        self._capacity = int(self.ix.gpus.sum())  # GPUs (the index never changes)
        self._node_gen = 0  # node state changes (set_node_state)
        # only preemption reads the running jobs' checkpoints (Snapshot.last_checkpoint):
        # a policy that cannot preempt here gets none (a walk over them every cycle)
        kind = self.policy.capabilities.preemption
        may_preempt = kind == "own" or (kind == "config" and self._preemptive)
        self._victims_read = may_preempt or not self.shortcuts
        # futile passes (tide.sched.futile): skipped only where no GPU comes free
        # without a pass after them, since the pass names the job waiting for
        # Resources, which the timeline reads for idle GPUs (`_blocked`): no end
        # whose pass waits (sched_min_interval), no preemption, Slurm's semantics
        self._futile_ok = (
            self.skip_futile
            and caps.time_invariant
            and not self._preemptive
            and triggers.min_gap(self.config) == 0
        )
        self.futile = 0  # futile passes skipped

    # -- events --------------------------------------------------------------

    def _push(self, t: float, kind: int, data: int) -> None:
        self.seq += 1
        self._ticks += kind == BACKFILL
        heapq.heappush(self.heap, (t, kind, self.seq, data))

    def _real_events(self) -> bool:
        """Whether any event but backfill ticks is left."""
        return len(self.heap) > self._ticks

    def run(self, jobs: Iterable[SimJob]) -> RunOutput:
        self._jobs = iter(jobs)
        self._feed()
        for f in self.faults:
            self._push(f.time, FAIL, self.ix.pos[f.node])
        for p in self.passes or ():
            self._push(p, WAKE, -1)
        coalesce = self.policy.capabilities.coalesce_ties
        due = (False, False)  # a cycle owed once the events at this time are handled
        t = 0.0  # the time of the last event handled
        while self.heap or self._unpark_all(t):
            t, kind, _, data = heapq.heappop(self.heap)
            self.events += 1
            if kind == BACKFILL:
                self._ticks -= 1
            else:
                self._version += 1
            if kind == SUBMIT:
                self._feed()
            run_cycle, backfill = self._handle(t, kind, data)
            self._by_event |= run_cycle and kind != BACKFILL
            if self._owed:  # an end left its pass to this event
                run_cycle, self._owed = True, False
            if run_cycle and kind == END and not backfill and self._end_pass_waits(t):
                run_cycle, self._owed = False, True
            if coalesce:
                due = (due[0] or run_cycle, due[1] or backfill)
                if self.heap and self.heap[0][0] == t:
                    continue
                (run_cycle, backfill), due = due, (False, False)
            if run_cycle and self.passes:
                run_cycle = not self._deferred(t)
                backfill = run_cycle and self._live_backfill(t)
            if run_cycle:
                self._cycle(t, backfill)
                self._by_event = False
            self._sample(t)
            if self.progress is not None and (backfill or not self.events & 1023):
                self.progress(t, self.ended, self.ended + len(self.results))
        if self.progress is not None:
            self.progress(t, self.ended, self.ended + len(self.results))
        return self._output()

    def _end_pass_waits(self, t: float) -> bool:
        """An end's pass is left to the next end when that comes within
        sched_min_interval (tide.sched.triggers.end_pass_waits). Not while
        replaying a controller's history: its own pass times rule there."""
        if self.passes or not self.heap or self.heap[0][1] != END:
            return False
        return triggers.end_pass_waits(self.config, t, self.heap[0][0])

    def _submission_pass(self, t: float, wanted: bool) -> bool:
        """Whether a submission gets a main pass now; where submissions wait for
        slurmctld's background thread, its next wake-up is queued instead."""
        if not triggers.submissions_wait(self.config):
            return wanted
        if wanted and not self._background_due:
            self._background_due = True
            self._push(triggers.background_tick(self.config, t), WAKE, BACKGROUND)
        return False

    def _background(self, t: float) -> bool:
        """A wake-up of the background thread with submissions counted: the main
        pass now, or the next wake-up (batch_sched_delay)."""
        if not triggers.background_may_run(self.config, t, self._background_last):
            self._push(triggers.background_tick(self.config, t), WAKE, BACKGROUND)
            return False
        self._background_due, self._background_last = False, t
        return True

    def _deferred(self, t: float) -> bool:
        """With a controller's pass times: the twin runs a cycle at each of them
        (each is a wake in the heap), as the live loop did, and none in between;
        after the last one it runs on events."""
        if not self.passes:
            return False
        i = bisect.bisect_left(self.passes, t - 1e-6)
        return i < len(self.passes) and self.passes[i] > t + 1e-6

    def _live_backfill(self, t: float) -> bool:
        """Whether the live loop's pass at t ran backfill: as its pass log says,
        else at least bf_interval after its last backfill pass (the loop's rule)."""
        i = bisect.bisect_left(self.passes or [], t - 1e-6)
        if self.passes and i < len(self.passes) and self.passes[i] <= t + 1e-6:
            known = self.pass_backfill.get(self.passes[i])
            if known is not None:
                return known
        if self._last_bf_pass is not None and t - self._last_bf_pass < self.config.bf_interval:
            return False
        self._last_bf_pass = t
        return True

    def _unpark_all(self, now: float) -> bool:
        """The heap ran dry at `now` with victims still parked: bring them back."""
        if not self.parked:
            return False
        from tide.sim.preemption import release_all

        release_all(self, now)
        return bool(self.heap)

    def _feed(self) -> None:
        """Keep exactly one not-yet-submitted job in the heap (streams the trace)."""
        assert self._jobs is not None
        sim = next(self._jobs, None)
        if sim is not None:
            self.sims[sim.id] = sim
            self._push(sim.submit, SUBMIT, sim.id)

    def _handle(self, t: float, kind: int, data: int) -> tuple[bool, bool]:
        if kind == SUBMIT:
            return self._submission_pass(t, self._submit(t, data)), self._bf_due(t, kind)
        if kind == END:
            return self._end(t, data), self._bf_due(t, kind)
        if kind == BACKFILL:
            if t != self._next_bf:  # a tick replaced while the chain slept
                return False, False
            self._next_bf = None
            if self._quiet_at(t):
                return False, False
            if self.pending and self._real_events():  # keep the period while anything can change
                self._bf_due(t, kind)
            return bool(self.pending), True
        if kind == WAKE and data == BACKGROUND:
            return self._background(t), self._bf_due(t, kind)
        if kind == WAKE:
            self._wakes.discard(t)
            return True, self._bf_due(t, kind)
        if kind == FAIL:
            return self._fail(t, data), self._bf_due(t, kind)
        if kind == REPAIR:
            self.set_node_state(data, NodeState.IDLE)
            return True, self._bf_due(t, kind)
        if kind == PREEMPT:
            return self._kill(t, data), self._bf_due(t, kind)
        if kind == COMPLETE:  # nodes free: Slurm's epilog-complete message asks for a pass
            self.usage.release(self.completing.pop(data))
            return True, self._bf_due(t, kind)
        return False, False

    def _bf_due(self, t: float, kind: int) -> bool:
        interval = self.config.bf_interval
        if interval <= 0:
            return True
        if self._dormant:  # the chain slept through quiet ticks: its next one
            self._dormant = False
            self._next_bf = self._bf_tick(t, at_or_after=kind < BACKFILL)
            self._push(self._next_bf, BACKFILL, 0)
        elif self._next_bf is None:  # Slurm's backfill thread wakes on a fixed period
            self._next_bf = self._bf_tick(t, at_or_after=False)
            self._push(self._next_bf, BACKFILL, 0)
        return False

    def _bf_tick(self, t: float, at_or_after: bool) -> float:
        """The backfill thread's tick at or after t (or strictly after): multiples of
        bf_interval past its phase (bf_phase, when the recorded thread ran)."""
        interval, phase = self.config.bf_interval, self.config.bf_phase
        k = math.ceil((t - phase) / interval - 1e-9) if at_or_after else (t - phase) // interval + 1
        nxt = k * interval + phase
        if nxt < t - 1e-9 or (not at_or_after and nxt <= t + 1e-9):  # float edges
            nxt += interval
        return float(nxt)

    def _quiet_at(self, t: float) -> bool:
        """At a tick: skip the pass when nothing it reads changed since the last
        backfill pass, which decided nothing new. Starts come from resources
        released (ends: events) and from the order (priorities: recalculated
        at `until`); between them a pass decides what the last one did. The
        chain then sleeps to the first tick at or after `until`."""
        quiet = self._quiet
        if quiet is None or quiet[0] != self._version or t >= quiet[1]:
            return False
        self.skipped += 1
        if self.pending and self._real_events():
            interval = self.config.bf_interval
            self._dormant = True
            if quiet[1] < math.inf:
                self._next_bf = math.ceil(quiet[1] / interval) * interval
                self._push(self._next_bf, BACKFILL, 0)
        return True

    # -- job lifecycle -------------------------------------------------------

    def _submit(self, t: float, job_id: int) -> bool:
        sim = self.sims[job_id]
        req = sim.request
        job = Job(
            id=sim.id,
            request=req,
            user=sim.user,
            account=sim.account or req.account or "root",
            submit=t,
            qos=req.qos or "normal",
            array_job_id=sim.array[0] if sim.array else None,
            array_task_id=sim.array[1] if sim.array else None,
        )
        self.pending[job.id] = job
        if self.predictor is not None:
            self._predict(job, t)
        self.results[job.id] = JobResult(
            job_id=job.id,
            name=sim.name or req.name,
            user=job.user,
            account=job.account,
            qos=job.qos,
            submit=t,
        )
        try:
            return self._arrive(t, job)
        except Exception as e:  # a value no reader checks (a hand-built workload)
            self._fault(job.id, describe(e))
            return False

    def set_node_state(self, node: int, state: NodeState) -> None:
        """Every node state change goes through here: the core reads no
        node's state while the count is the same (Snapshot.node_states_gen)."""
        self.cluster.nodes[node].state = state
        self._node_gen += 1

    def _fault(self, job_id: int, error: str) -> None:
        """A job the twin cannot evaluate: reported and left out; the run goes on."""
        self.job_faults[job_id] = error
        self.pending.pop(job_id, None)
        self._version += 1

    def _arrive(self, t: float, job: Job) -> bool:
        """Eligibility, timers, and whether the new job may change a decision now."""
        req = job.request
        if req.dependency is None and not req.hold and (req.begin is None or req.begin <= t):
            job.eligible = t  # eligible on arrival; otherwise the core says when
            self.results[job.id].eligible = t
        # begin times and --switches waits: the core says when (Decisions.wake)
        if self._preemptive and self._may_preempt(job):  # it may preempt its way in
            return True
        gpus = req.total_gpus(req.node_range()[0])
        active = self.active
        ending = sum(active[j].alloc.gpu_count for j in active.past_limit(t)
                     if active[j].limit_end <= t)  # fmt: skip
        return gpus <= int(self.usage.free_gpus[self.usage.usable].sum()) + ending

    def _end(self, t: float, job_id: int) -> bool:
        act = self.active.get(job_id)
        if act is None and job_id in self._retired:
            self._retired.discard(job_id)  # ended already; its event still schedules
            return True
        if act is None or act.end != t:
            return False
        self._version += 1
        del self.active[job_id]
        self.usage.release(act.alloc)
        if self.config.weights.fairshare and self._prio_time is not None:
            self._ended_charges.append(self._charge(act, max(act.start, self._prio_time), t))
        if self.predictor is not None:
            self.predictor.observe(job_info(act.job, act.alloc.gpu_count), t - act.start, t)
            self.predicted.pop(job_id, None)
        res = self.results[job_id]
        res.end = t
        timed_out = act.work_left > act.limit_end - act.start + 1e-9
        res.state = JobState.TIMEOUT.value if timed_out else act.sim.end_state
        if act.sim.train is not None:
            from tide.sim.faults import work_done

            self.close_training(act, t, work_done(act, t) if timed_out else act.work_left)
        self.finished[act.job.display_id] = res.state
        self.retire_result(job_id)
        return True

    def retire_result(self, job_id: int) -> None:
        """The job has finished for good: its result moves to the columns and
        its workload record goes (memory stays with the jobs in flight)."""
        self.done.add(self.results.pop(job_id))
        self.sims.pop(job_id, None)
        self.ended += 1

    def _fail(self, t: float, node: int) -> bool:
        from tide.sim.faults import fail_node

        return fail_node(self, t, node)

    # -- the cycle -----------------------------------------------------------

    def _retire(self, now: float) -> None:
        """Jobs whose time limit is up at `now` end at this very instant,
        whatever order same-time events are handled in (as in pyss, SC'15)."""
        active = self.active
        for jid in [j for j in active.past_limit(now) if active[j].end <= now]:
            self._end(now, jid)
            self._retired.add(jid)

    def _recalc_priorities(self, now: float) -> None:
        """Every PriorityCalcPeriod, as Slurm: decay the fair-share usage,
        charge what running jobs used since the last time, and move the time
        at which ages are measured."""
        cfg = self.config
        period = cfg.priority_calc_period
        if cfg.priority_phase is not None and period > 0:  # on Slurm's own grid
            due = cfg.priority_phase + (now - cfg.priority_phase) // period * period
            if self._prio_time is not None and due <= self._prio_time:
                return
        elif self._prio_time is not None and now - self._prio_time < period:
            return
        last = self._prio_time if self._prio_time is not None else now
        if cfg.weights.fairshare and now > last:
            from tide.sched.usage import charge_all, decay

            used = decay(self.fs_usage, now - last, cfg.decay_half_life)
            running = [self._charge(a, max(a.start, last), now) for a in self.active.values()]
            self.fs_usage = charge_all(used, [*self._ended_charges, *running])
        self._ended_charges = []
        self._prio_time = now
        self._version += 1

    def _charge(self, a: Active, since: float, until: float) -> tuple[str, float]:
        """Fair-share usage of a running job between two times: the core's rule
        (tide.sched.usage.job_charge: billing units x UsageFactor)."""
        from tide.sched.usage import job_charge

        amount = job_charge(
            sum(len(n.cores) * int(self.ix.tpc[n.node]) for n in a.alloc.nodes),
            a.alloc.gpu_count,
            sum(n.mem for n in a.alloc.nodes),
            until - since,
            a.job.qos,
            self.config,
            self.accounts,
        )
        return f"{a.job.account}/{a.job.user}", amount

    def _cycle(self, now: float, backfill: bool) -> None:
        self._retire(now)
        self._resume(now)
        self._recalc_priorities(now)
        version = self._version  # what the pass reads, changes made just now included
        if self._futile_now():
            self.futile += 1
        else:
            self._pass(now, backfill)
        if backfill and self._skips and not (self.suspended or self.preempting or self.passes):
            self._quiet = None
            if self._version == version:  # quiet; the grid walks the running jobs: only then
                self._quiet = (version, min(self._next_recalc(), self._next_grid(now)))

    def _next_grid(self, now: float) -> float:
        """The first time >= now at which a release time lies on now's
        bf_resolution grid (now itself when one does). The plan rounds each
        future time t to now + ceil((t - now) / res) * res (plan._round_up):
        t itself on the grid, t + (a part of res) just past it, and will-run
        batches move that to the next batch end; a pass there plans other
        reservations than the quiet one, so the quiet stops there."""
        res = self.config.bf_resolution
        if res <= 1:
            return math.inf
        gap = math.inf
        for run in self.active.runs.values():  # the ends the core plans with
            if now < run.end < math.inf:
                gap = min(gap, (run.end - now) % res)
        return now + gap

    def _futile_now(self) -> bool:
        """Whether the pass due now can decide nothing (tide.sched.futile):
        free GPUs first, the cheap test that fails whenever jobs can start."""
        return (
            self._futile_ok
            and not self.usage.free_gpus.any()
            and not self.passes
            and pass_is_futile(self.config, 0, self._queue.others())
        )

    def _next_recalc(self) -> float:
        """When `_recalc_priorities` will next move the priority time."""
        cfg, last = self.config, self._prio_time
        period = cfg.priority_calc_period
        if last is None:
            return -math.inf
        if cfg.priority_phase is not None and period > 0:
            return cfg.priority_phase + ((last - cfg.priority_phase) // period + 1) * period
        return last + period

    def _pass(self, now: float, backfill: bool) -> None:
        if self._idle():
            self._blocked = False  # what _apply makes of the empty decisions
            self.idle_skipped += 1
            return
        running = self._running(now)
        # after _running: a resume gives new views
        running_delta: RunningDelta | None = self.active.delta()
        if self.preempting or self.suspended or not self.deltas:  # fresh views, not kept ones
            running_delta = None
        snap = Snapshot(
            cluster=self.cluster,
            config=self.config,
            now=now,
            pending=self._queue.view(),
            running=running,
            running_delta=running_delta,
            accounts=self.accounts,
            usage=self.fs_usage,
            finished=self.finished,
            backfill=backfill,
            priority_time=self._prio_time,
            bound=dict(self.bound),
            predicted=self._predictions(),
            last_checkpoint=self._checkpoints(now) if self._victims_read else {},
            preempting={v: e[0] for v, e in self.preempting.items()},
            completing=tuple(self.completing.values()),
            main_pass=self._by_event or not backfill,
            quotas=self.quotas,
            starts_only=self.starts_only,
            pending_delta=self._queue.delta() if self.deltas else None,
            shortcuts=self.shortcuts,
            node_states_gen=self._node_gen if self.shortcuts else None,
        )
        decisions, faulty = schedule_isolating(lambda s: self.policy.schedule(s, self.usage), snap)
        for f in faulty:
            self._fault(f.job_id, f.error)
        self.cycles += 1
        self._apply(now, decisions)
        if self.parked:
            from tide.sim.preemption import unpark

            unpark(self, now)

    def _idle(self) -> bool:
        """Whether the cycle due can be left out: no job pending, none being
        preempted, suspended or parked, and a policy whose cycles then decide
        nothing. The deltas the core would have taken now go with the next
        snapshot, which then carries these changes too."""
        return (
            self._idle_quiet
            and not self.pending
            and not (self.preempting or self.suspended or self.parked)
        )

    # -- preemption (tide.sim.preemption) -------------------------------------

    def _preempt(self, now: float, p: Preemption) -> None:
        from tide.sim.preemption import apply

        apply(self, now, p)

    def _may_preempt(self, job: Job) -> bool:
        """Whether the new job might preempt its way in (else a cycle for it
        can only help when it fits what is free)."""
        kind = self.policy.capabilities.preemption
        if kind == "none":
            return False
        if self.quotas is not None or self.config.preempt_type != "preempt/qos":
            return True
        if kind == "own":
            return True  # the policy reclaims by its own queues, not by QOS
        qos = self.accounts.qos.get(job.qos)
        return qos is not None and bool(qos.preempt)

    def _kill(self, t: float, victim: int) -> bool:
        from tide.sim.preemption import kill

        return kill(self, t, victim)

    def _resume(self, now: float) -> None:
        if self.suspended:
            self._resumed = True
            from tide.sim.preemption import resume_ready

            resume_ready(self, now)

    def _lend_cores(self, job_id: int, alloc: Allocation) -> None:
        if self.suspended:
            from tide.sim.preemption import preemptor_started

            preemptor_started(self, job_id, alloc)

    def held(self, act: Active) -> Allocation:
        """What the attempt holds now: all of it, or GPUs and memory if suspended."""
        sus = self.suspended.get(act.job.id)
        if sus is None:
            return act.alloc
        lent = {(na.node, c) for na in sus.cores.nodes for c in na.cores}
        return Allocation(act.alloc.job_id, tuple(
            NodeAlloc(n.node, n.gpus, tuple(c for c in n.cores if (n.node, c) not in lent), n.mem)
            for n in act.alloc.nodes))  # fmt: skip

    def paused_at(self, act: Active) -> float:
        """When the attempt was suspended (it works no more since); inf if running."""
        sus = self.suspended.get(act.job.id)
        return sus.since if sus is not None else math.inf

    def _running(self, now: float) -> list[Running]:
        """The running jobs as the core sees them. Without preemption under way
        each is the same as at the last cycle unless its limit moved (a resume):
        kept from its start (ActiveJobs.runs), not built again every cycle."""
        if self.preempting or self.suspended:
            return [
                Running(a.job, a.alloc, a.start, self._planned_end(a, now))
                for a in self.active.values()
            ]
        runs = self.active.runs
        if self._resumed:  # a resume moves a job's limit in place: its view follows
            for jid, a in self.active.items():
                if runs[jid].end != a.limit_end:
                    self.active.set_run(jid, Running(a.job, a.alloc, a.start, a.limit_end))
        return list(runs.values())

    def _planned_end(self, act: Active, now: float) -> float:
        """The end the core plans with: the limit, the kill time of a victim in
        its grace, the limit pushed back by the suspension of a suspended job."""
        entry = self.preempting.get(act.job.id)
        if entry is not None:
            return min(act.limit_end, entry[3])
        sus = self.suspended.get(act.job.id)
        if sus is not None:
            return act.limit_end + (now - sus.since)
        return act.limit_end

    def _checkpoints(self, now: float) -> dict[int, float]:
        """Time of every running job's last completed checkpoint (Snapshot.last_checkpoint)."""
        from tide.sim.faults import saved_work

        return {
            jid: saved_work(a, min(now, self.paused_at(a)))[1]
            for jid, a in self.active.checkpointing.items()
        }

    def _predictions(self) -> dict[int, float]:
        return dict(self.predicted) if self.predictor is not None else {}

    def _predict(self, job: Job, now: float) -> None:
        """The job's run time predicted at its submission (kept while it waits and runs)."""
        assert self.predictor is not None
        running = [job_info(a.job, a.alloc.gpu_count) for a in self.active.values()]
        p = self.predictor.predict(job_info(job), now, running)
        if p is not None:
            self.predicted[job.id] = p

    def _apply(self, now: float, d: Decisions) -> None:
        if d.eligible or d.meta or d.binds or d.unbinds or d.starts or d.preemptions:
            self._version += 1
        for jid, t in d.eligible.items():
            self.pending[jid].eligible = t
            self._queue.touch(jid)
            self.results[jid].eligible = t
        for jid, meta in d.meta.items():  # policy bookkeeping kept with the job
            job = self.pending.get(jid)
            if job is not None:
                job.meta.update(meta)
                for key in [k for k, v in meta.items() if v is None]:
                    del job.meta[key]
        if d.wake is not None and d.wake > now and d.wake not in self._wakes and self.pending:
            self._wakes.add(d.wake)
            self._push(d.wake, WAKE, -1)
        for jid in d.unbinds:
            self._unbind(now, jid)
        for jid, pods in d.binds.items():
            self._bind(now, jid, pods)
        for start in d.starts:
            self._start(now, start)
        for p in d.preemptions:
            self._preempt(now, p)
        top = self._queue.first()
        self._blocked = bool(
            top is not None
            and d.pending.get(top.id) is not None
            and d.pending[top.id].reason is Reason.RESOURCES
        )

    def _bind(self, now: float, jid: int, pods: Allocation) -> None:
        """Pods bound before their job runs hold their GPUs idle (no gang)."""
        self.usage.allocate(pods)
        old = self.bound.get(jid)
        self._charge_held(now, jid)
        merged = (old.nodes if old else ()) + pods.nodes
        self.bound[jid] = Allocation(jid, merged)
        self.bound_since[jid] = now

    def _unbind(self, now: float, jid: int) -> None:
        if jid in self.bound:
            self._charge_held(now, jid)  # while still bound: the held time counts
            pods = self.bound.pop(jid)
            self.bound_since.pop(jid, None)
            self.usage.release(pods)

    def _charge_held(self, now: float, jid: int) -> None:
        pods = self.bound.get(jid)
        if pods is not None:
            since = self.bound_since.get(jid, now)
            self.results[jid].held_idle_gpu_seconds += pods.gpu_count * (now - since)
            self.bound_since[jid] = now

    def _start(self, now: float, s: Start) -> None:
        job = self.pending.pop(s.job_id)
        sim = self.sims[s.job_id]
        self._unbind(now, s.job_id)  # the full allocation includes the bound pods
        self.usage.allocate(s.alloc)
        limit = job.request.time_limit
        limit_end = now + limit if limit is not None else math.inf
        work = self._work_left(job, sim)
        end = min(now + _wall(work, sim), limit_end)
        self.token += 1
        self.active[job.id] = Active(job, sim, s.alloc, now, limit_end, end, self.token, work)
        self._push(end, END, job.id)
        job.state = JobState.RUNNING
        self._lend_cores(job.id, s.alloc)
        res = self.results[job.id]
        if res.start is None:
            res.start = now
        res.state = JobState.RUNNING.value
        res.partition = s.partition
        res.gpus = s.alloc.gpu_count
        res.nodes = len(s.alloc.nodes)
        res.leaf_switches = s.leaf_switches if self.ix.n_leaves > 1 else 0
        self._describe(res, s.alloc)

    def _work_left(self, job: Job, sim: SimJob) -> float:
        done = float(job.meta.get("work_done", 0.0))  # type: ignore[arg-type]
        return max(0.0, sim.duration - done)

    def close_training(self, act: Active, t: float, work: float, lost: float = 0.0) -> None:
        """A training job's attempt ended at t having done `work` seconds that
        survive and thrown `lost` GPU-seconds away (tide.sim.training)."""
        if act.sim.train is None:
            return
        led = self.training.get(act.job.id)
        if led is None:
            led = self.training[act.job.id] = Ledger(act.job.account, act.sim.train)
        led.gpus = act.alloc.gpu_count
        led.gpu_type = next((g.type for na in act.alloc.nodes
                             for g in self.cluster.nodes[na.node].gpus
                             if g.index in na.gpus and g.type), "")  # fmt: skip
        led.paid_gpu_seconds += act.alloc.gpu_count * (t - act.start)
        led.work_seconds += work
        led.lost_gpu_seconds += lost

    def _describe(self, res: JobResult, alloc: Allocation) -> None:
        names = self.ix.names
        if len(alloc.nodes) == 1:  # most jobs: the same few strings again and again
            na = alloc.nodes[0]
            res.nodelist, res.gpu_index = _one_node(names[na.node], na.gpus)
            res.cpu_ids = _one_node(names[na.node], na.cores)[1]
            return
        res.nodelist = compress(names[na.node] for na in alloc.nodes)
        res.gpu_index = node_indices((names[na.node], na.gpus) for na in alloc.nodes)
        res.cpu_ids = node_indices((names[na.node], na.cores) for na in alloc.nodes)

    # -- metrics -------------------------------------------------------------

    def _sample(self, t: float) -> None:
        allocated = self._capacity - int(self.usage.free_gpus.sum())
        blocked = getattr(self, "_blocked", False) and bool(self.pending)
        idle = int(self.usage.free_gpus[self.usage.usable].sum()) if blocked else 0
        key = (allocated, idle, len(self.pending))
        if key == self._last_alloc and self.samples:
            return
        self._last_alloc = key
        self.samples.add(t, allocated, idle, len(self.pending), self.active.gpus_by_account())

    def _output(self) -> RunOutput:
        end = self._deadlock_end(self.samples.t[-1] if self.samples else 0.0)
        for jid in self.pending:
            self.results[jid].state = JobState.PENDING.value
            if jid in self.bound:  # holds pods and can never run: deadlocked
                self._charge_held(end, jid)
                self.results[jid].deadlocked = True
        return RunOutput(
            self.done.take_table(self.results.values()),
            self.samples.take_timeline(),
            int(self.ix.gpus.sum()),
            self.cycles,
            self.events,
            dict(self.job_faults),
            self.training,
        )

    def _deadlock_end(self, last: float) -> float:
        """Where the run's window ends. Gangs left holding pods would wait forever;
        they are charged until their own time limit would have ended them had
        they started when eligible (a finite, reproducible window), and a last
        sample there makes the metrics span it."""
        ends = [
            self.results[jid].ready + float(limit)
            for jid in self.pending
            if jid in self.bound and (limit := self.pending[jid].request.time_limit) is not None
        ]
        end = max([last, *ends])
        if end > last and self.samples:
            self.samples.repeat_last(end)
        return end


@lru_cache(maxsize=16384)
def _one_node(name: str, indices: tuple[int, ...]) -> tuple[str, str]:
    """The node list and the index list (GPUs or cores) of a one-node allocation."""
    return compress([name]), node_indices([(name, indices)])


def _wall(work: float, sim: SimJob) -> float:
    """Wall time to do `work` seconds, checkpoint costs included."""
    interval = sim.checkpoint_interval
    if not interval or sim.checkpoint_cost <= 0:
        return work
    checkpoints = math.floor(work / interval)
    if checkpoints and checkpoints * interval >= work:
        checkpoints -= 1  # no checkpoint right at the end
    return work + checkpoints * sim.checkpoint_cost
