"""The twin with services: the batch engine (tide.sim.engine) plus service
replicas, their requests, the autoscaler and the pools, on one virtual clock.

Nothing here decides anything the live controller decides differently:
replicas are jobs placed by the same policy (the pooled policy of
tide.sched.serving.pools where the pattern has pools, the core's cycle
otherwise), the autoscaler is tide.sched.serving.hpa and the replica set is
tide.sched.serving.rollout, fed what the live router would have measured
(tide.sim.serving.service_sim). Events added to the engine's:

* TICK, every `tick` seconds: requests up to now are routed, each service's
  autoscaler runs once its period is up, replicas start or drain;
* READY: a replica's model is loaded (`startup` after its job started), it
  takes requests, including those buffered meanwhile;
* HORIZON: the end of the run; what is still running is counted up to it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from tide.sched.policies.base import Capabilities
from tide.sched.scheduler import Scheduler
from tide.sched.serving import hpa
from tide.sched.serving.lending import SWITCHING
from tide.sched.serving.pools import PooledScheduler
from tide.sched.serving.rollout import ReplicaView
from tide.sched.serving.rollout import step as rollout_step
from tide.sched.types import Start
from tide.sim.engine import END, PREEMPT, Engine, RunOutput
from tide.sim.progress import ProgressFn
from tide.sim.serving.scenario import REPLICA_IDS, PatternSetup, ServiceDef, replica_request
from tide.sim.serving.service_sim import ServiceSim
from tide.sim.workload.base import SimJob

READY, TICK, HORIZON = 20, 21, 22  # after the engine's own kinds at equal times
NEVER = 1e15  # a replica's "duration": it runs until it is stopped


@dataclass(slots=True)
class Replica:
    jid: int
    created: float
    decided: float  # the scale decision it answers
    state: str = "Pending"  # Pending, Starting, Ready, Draining
    started: float | None = None
    ready: float | None = None
    token: int = -1


@dataclass(slots=True)
class ServiceRun:
    svc: ServiceDef
    sim: ServiceSim
    desired: int
    hpa: hpa.HpaState = field(default_factory=hpa.HpaState)
    decided: float = 0.0  # the last scale decision's time
    last_eval: float = -math.inf
    replicas: dict[int, Replica] = field(default_factory=dict)
    under_seconds: float = 0.0  # time with fewer ready replicas than desired
    ready_after: list[float] = field(default_factory=list)  # decision -> ready, per scale-up
    scale_events: list[tuple[float, int, int, str]] = field(default_factory=list)
    gpu_seconds: float = 0.0


@dataclass(slots=True)
class ServingOutput:
    pattern: str
    batch: RunOutput
    services: list[ServiceRun]
    horizon: float
    capacity_gpus: int
    train_gpu_seconds: float  # allocated to training attempts within the horizon
    serving_gpu_seconds: float
    switching_gpu_seconds: float  # bridge: nodes changing sides
    borrowed_gpu_seconds: float  # training on serving-pool GPUs
    reclaims: int  # borrowers preempted for replicas


class ServingEngine(Engine):
    """Engine + services. Build with `ServingEngine.for_setup(setup)`."""

    @classmethod
    def for_setup(
        cls,
        setup: PatternSetup,
        tick: float = 10.0,
        progress: ProgressFn | None = None,
    ) -> ServingEngine:
        eng = cls(cluster=setup.cluster, config=setup.config, policy_name="slurm",
                  accounts=setup.accounts, progress=progress, save_on_warning=True)  # fmt: skip
        eng._serving_init(setup, tick)
        return eng

    def _serving_init(self, setup: PatternSetup, tick: float) -> None:
        self.setup = setup
        self.tick = tick
        self.pooled: PooledScheduler | None = None
        if setup.pools is not None:
            self.pooled = PooledScheduler(self.ix, setup.pools)
            self.policy = self.pooled  # type: ignore[assignment]
        else:
            self.policy = _CorePolicy(Scheduler(self.ix, victim_order=setup.victim_order))  # type: ignore[assignment]
        self._preemptive = True
        self.runs = [
            ServiceRun(
                s,
                ServiceSim(
                    s.spec.name,
                    s.trace,
                    s.model,
                    s.slo,
                    s.spec.autoscaling.period,
                    setup.horizon,
                    s.spec.buffer_timeout,
                ),
                desired=s.spec.min_replicas,
            )
            for s in setup.services
        ]
        self.replica_of: dict[int, ServiceRun] = {}
        self._next_replica = REPLICA_IDS
        self.attempts: dict[int, tuple[float, int, bool]] = {}  # jid -> (start, gpus, borrowed)
        self.train_s = self.serving_s = self.switching_s = self.borrowed_s = 0.0
        pool_part = setup.pools.pools[0].partition if setup.pools and setup.pools.pools else ""
        self._pool_nodes = set(self.ix.partition_masks[pool_part].nonzero()[0].tolist()) if (
            pool_part in self.ix.partition_masks) else set()  # fmt: skip

    # --- the run ---------------------------------------------------------------------------

    def run_serving(self, jobs: Iterable[SimJob]) -> ServingOutput:
        horizon = self.setup.horizon
        k = 1
        while k * self.tick < horizon:
            self._push(k * self.tick, TICK, 0)
            k += 1
        self._push(horizon, HORIZON, 0)
        self._push(0.0, TICK, 0)  # the first replicas at once
        batch = self.run(jobs)
        tab = batch.table
        reclaims = int(tab.preemptions[tab.job_id < REPLICA_IDS].sum())
        return ServingOutput(self.setup.pattern, batch, self.runs, horizon,
                             int(self.ix.gpus.sum()), self.train_s, self.serving_s,
                             self.switching_s, self.borrowed_s, reclaims)  # fmt: skip

    def _handle(self, t: float, kind: int, data: int) -> tuple[bool, bool]:
        if kind == TICK:
            return self._tick(t), False
        if kind == READY:
            return self._ready(t, data), False
        if kind == HORIZON:
            self._finish(t)
            return False, False
        if kind == PREEMPT and data in self.active:
            before = self.active[data]
            out = super()._handle(t, kind, data)
            if self.active.get(data) is not before:
                self._close(data, t)
            return out
        return super()._handle(t, kind, data)

    # --- jobs: attempts and replicas ------------------------------------------------------------

    def _start(self, now: float, s: Start) -> None:
        super()._start(now, s)
        borrowed = any(n.node in self._pool_nodes for n in s.alloc.nodes) and (
            s.job_id < REPLICA_IDS)  # fmt: skip
        self.attempts[s.job_id] = (now, s.alloc.gpu_count, borrowed)
        run = self.replica_of.get(s.job_id)
        if run is not None:
            rep = run.replicas[s.job_id]
            rep.state, rep.started = "Starting", now
            rep.token = self.active[s.job_id].token
            # the services were running before the period: the first replicas, started
            # at t=0, are already loaded (a cold start would fail the first requests
            # in every pattern alike and compare nothing)
            warm = now == 0.0 and rep.decided == 0.0
            self._push(now if warm else now + run.svc.spec.startup, READY, s.job_id)

    def _end(self, t: float, job_id: int) -> bool:
        act = self.active.get(job_id)
        ended = act is not None and act.end == t
        out = super()._end(t, job_id)
        if ended:
            self._close(job_id, t)
            run = self.replica_of.get(job_id)
            if run is not None:
                run.replicas.pop(job_id, None)
        return out

    def _close(self, jid: int, t: float) -> None:
        opened = self.attempts.pop(jid, None)
        if opened is None:
            return
        start, gpus, borrowed = opened
        used = gpus * max(0.0, min(t, self.setup.horizon) - start)
        run = self.replica_of.get(jid)
        if run is not None:
            self.serving_s += used
            run.gpu_seconds += used
        else:
            self.train_s += used
            if borrowed:
                self.borrowed_s += used

    def _ready(self, t: float, jid: int) -> bool:
        run = self.replica_of.get(jid)
        act = self.active.get(jid)
        if run is None or act is None or jid not in run.replicas:
            return False
        rep = run.replicas[jid]
        if rep.state != "Starting" or rep.token != act.token:
            return False
        rep.state, rep.ready = "Ready", t
        if t > 0.0:  # a warm start answers no scale decision
            run.ready_after.append(t - rep.decided)
        run.sim.add_ready(jid, t)
        return False

    # --- the autoscaler and the replica sets --------------------------------------------

    def _tick(self, t: float) -> bool:
        changed = False
        for run in self.runs:
            changed |= self._service_tick(run, t)
        if self.pooled is not None:
            self._count_switching()
        return changed

    def _service_tick(self, run: ServiceRun, t: float) -> bool:
        spec = run.svc.spec
        ready = sum(r.state == "Ready" for r in run.replicas.values())
        if ready < run.desired and t > 0:
            run.under_seconds += self.tick
        auto = spec.autoscaling
        if auto.enabled and t - run.last_eval >= auto.period - 1e-9:
            obs = run.sim.observe(t, run.desired)
            d, run.hpa = hpa.decide(auto, run.hpa, obs, t)
            run.last_eval = t
            if d.changed:
                run.scale_events.append((t, d.previous, d.desired, d.reason))
                run.desired, run.decided = d.desired, t
        else:
            run.sim.advance(t)
        views = [ReplicaView(jid, 1, r.state, r.created) for jid, r in run.replicas.items()
                 if r.state != "Draining"]  # fmt: skip
        plan = rollout_step(views, run.desired, 1, spec.rollout)
        for jid in plan.stop:
            self._stop_replica(run, jid, t)
        for _ in range(plan.create):
            self._create_replica(run, t)
        return bool(plan.stop or plan.create)

    def _create_replica(self, run: ServiceRun, t: float) -> None:
        jid = self._next_replica
        self._next_replica += 1
        req = replica_request(run.svc.spec)
        self.sims[jid] = SimJob(id=jid, submit=t, duration=NEVER, request=req, user="svc",
                                account=req.account, name=req.name)  # fmt: skip
        run.replicas[jid] = Replica(jid, t, run.decided if run.decided else t)
        self.replica_of[jid] = run
        self._submit(t, jid)

    def _stop_replica(self, run: ServiceRun, jid: int, t: float) -> None:
        rep = run.replicas[jid]
        if rep.state == "Pending" and jid in self.pending:
            del self.pending[jid]
            res = self.results[jid]
            res.state, res.end = "CANCELLED", t
            del run.replicas[jid]
            return
        act = self.active.get(jid)
        if act is None:
            run.replicas.pop(jid, None)
            return
        idle_at = run.sim.drain(jid, t) if rep.state == "Ready" else t
        rep.state = "Draining"
        act.end = idle_at
        self._push(idle_at, END, jid)

    def _count_switching(self) -> None:
        assert self.pooled is not None
        for pool in self.setup.pools.pools if self.setup.pools else ():
            state = self.pooled.node_state.get(pool.name)
            if state is None:
                continue
            n = sum(1 for _, side in state.sides if side.state == SWITCHING)
            self.switching_s += n * self.setup.cluster.nodes[0].gpu_count * self.tick

    def _finish(self, t: float) -> None:
        for run in self.runs:
            run.sim.finish(t)
        for jid in list(self.attempts):
            self._close(jid, t)
        self.heap.clear()
        self.parked.clear()


class _CorePolicy:
    """The core's cycle as a policy object (the unified pattern: no pools)."""

    name = "core"
    capabilities = Capabilities()

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def schedule(self, snap, usage):  # type: ignore[no-untyped-def]
        return self.scheduler.schedule(snap, usage)
