"""The service controller: one thread of the live controller that makes each
service's replicas match what is asked, every TICK seconds.

A tick, per service (Kubernetes' Deployment, ReplicaSet, endpoints and HPA
controllers in one loop, with tide's jobs as pods):
1. replica states from their jobs (queued -> Pending, running -> Starting,
   ended -> Stopped, or Failed when nobody asked it to stop);
2. probes: readiness moves Starting/Unready <-> Ready, liveness failures
   kill the replica (a new one replaces it);
3. the rollout step (tide.sched.serving.rollout): replicas to start and to
   stop; a ready replica stops by draining;
4. the router gets the ready replicas (the others drain there), then its
   stats: the autoscaler (tide.sched.serving.hpa) runs every period, at
   once when requests wait with no ready replica;
5. a draining replica whose requests are done (or whose drain time is up)
   is cancelled like any job; new replicas are submitted like any job.
Every decision is a service event (`tide service show`), scale-ups with the
seconds from the decision to the new replica being ready.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tide.hostlist import expand
from tide.model.cluster import NodeState
from tide.model.service import ServiceSpec
from tide.sched.serving import hpa
from tide.sched.serving.rollout import ReplicaView
from tide.sched.serving.rollout import step as rollout_step
from tide.serve import replicas as rep
from tide.serve.probes import Prober
from tide.serve.routerproc import RouterHandle, router_token
from tide.serve.spec import parse_service
from tide.server.auth import Principal
from tide.server.ports import Ctl
from tide.store import services as svcrepo
from tide.store.services import DELETING, ReplicaRow, ServiceRow

log = logging.getLogger("tide.serve")
TICK = 0.5
# CrashLoopBackOff: after replicas fail before ever being ready, new ones wait
# BACKOFF_FIRST s, doubling per failure, at most BACKOFF_MAX s (Kubernetes: 10 s
# to 5 min), so a service whose command cannot start does not submit a job
# every tick; a replica becoming ready ends it.
BACKOFF_FIRST = 10.0
BACKOFF_MAX = 300.0


@dataclass(slots=True)
class Runtime:
    """What the controller keeps about a service between ticks (not stored)."""

    name: str
    spec: ServiceSpec
    spec_text: str
    router: RouterHandle
    hpa: hpa.HpaState = field(default_factory=hpa.HpaState)
    last_eval: float = 0.0
    prev: dict[str, Any] | None = None  # router stats at the last evaluation
    prev_at: float = 0.0
    stats: dict[str, Any] | None = None  # the latest router stats
    cancelled: set[int] = field(default_factory=set)
    submit_blocked_until: float = 0.0
    desired: int = 0  # as of the last tick (metrics)
    counts: dict[str, int] = field(default_factory=dict)  # replicas by state, last tick
    last_created: float | None = None  # when this controller last created a replica
    crashes: int = 0  # replicas in a row that failed before being ready
    backoff_until: float = 0.0  # no new replica before this (crash loop)
    generation: int = 0  # the replica template the back-off is about


@dataclass(slots=True)
class Writes:
    """One tick's changes to one service, committed together."""

    replicas: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[str, str, float | None]] = field(default_factory=list)
    service: dict[str, Any] = field(default_factory=dict)

    def replica(self, rid: int, **values: Any) -> None:
        self.replicas.setdefault(rid, {}).update(values)

    def event(self, kind: str, message: str, value: float | None = None) -> None:
        self.events.append((kind, message, value))


class ServiceController:
    def __init__(self, ctl: Ctl) -> None:
        self.ctl = ctl
        self.root = ctl.settings.data_dir / "services"
        self.token = router_token(self.root)
        self.prober = Prober()
        self.runtimes: dict[str, Runtime] = {}
        self.bind = "0.0.0.0" if ctl.settings.executor == "ray" else "127.0.0.1"
        self.router_host = "127.0.0.1"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tide-serve", daemon=True)
        self.ticks = 0
        self.errors = 0
        self.last_error = ""
        self.lock = threading.Lock()  # guards runtimes for readers (API, metrics)

    def start(self) -> None:
        self.prober.start()
        self._thread.start()

    def stop(self) -> None:
        """Stop deciding; routers and replicas keep serving (a restart adopts them)."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        self.prober.stop()

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(TICK)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.tick()
            except Exception as e:  # one bad tick must not stop the services
                self.errors += 1
                self.last_error = f"{type(e).__name__}: {e}"
                log.exception("service controller tick failed")

    # --- one tick ------------------------------------------------------------------------

    def tick(self) -> None:
        now = time.time()
        with self.ctl.sessions() as s:
            services = svcrepo.listing(s)
            live = svcrepo.live_replicas(s)
            views = rep.job_views(s, [r.job_id for r in live if r.job_id])
            s.expunge_all()
        by_service: dict[str, list[ReplicaRow]] = {}
        for r in live:
            by_service.setdefault(r.service, []).append(r)
        down = self._down_nodes() if live else set()
        for row in services:
            try:
                self._service(row, by_service.get(row.name, []), views, now, down)
            except Exception as e:
                self.errors += 1
                self.last_error = f"service {row.name}: {type(e).__name__}: {e}"
                log.exception("service %s: tick failed", row.name)
        with self.lock:
            for name in set(self.runtimes) - {r.name for r in services}:
                self.runtimes.pop(name)
        self.ticks += 1

    def _runtime(self, row: ServiceRow) -> Runtime:
        with self.lock:
            rt = old = self.runtimes.get(row.name)
            if rt is None or rt.spec_text != row.spec:
                spec, _ = parse_service(json.loads(row.spec))
                spec.user, spec.account, spec.qos = row.user, row.account, row.qos
                spec.partition = row.partition
                router = rt.router if rt is not None else RouterHandle(
                    self.root, row.name, self.router_host, row.router_port, self.token
                )  # fmt: skip
                state = rt.hpa if rt is not None else _load_hpa(row.autoscaler)
                rt = Runtime(row.name, spec, row.spec, router, hpa=state)
                if old is not None:  # a new spec: what the controller learnt stays
                    rt.last_created, rt.crashes = old.last_created, old.crashes
                    rt.backoff_until, rt.generation = old.backoff_until, old.generation
                self.runtimes[row.name] = rt
            return rt

    def _service(
        self,
        row: ServiceRow,
        reps: list[ReplicaRow],
        views: dict[int, rep.JobView],
        now: float,
        down: set[str],
    ) -> None:
        rt = self._runtime(row)
        if rt.generation != row.generation:  # a new template (a fix?) starts at once
            rt.generation, rt.crashes, rt.backoff_until = row.generation, 0, 0.0
        w = Writes()
        for r in reps:
            self._sync_job(rt, r, views.get(r.job_id), now, w)
        for r in reps:
            self._probe(rt, r, now, w)
        deleting = row.state == DELETING
        live = [r for r in reps if _state(r, w) not in ("Stopped", "Failed")]
        desired = 0 if deleting else row.desired
        self._rollout(rt, row, live, desired, now, w)
        router_up = rt.router.ensure(rt.spec.buffer_timeout)
        if router_up:
            self._push(rt, live, w, lost_with_node(reps, views, down))
            rt.stats = self._stats(rt)
            if not deleting:
                self._autoscale(rt, row, live, now, w)
        self._drains(rt, live, now, w)
        rt.desired = int(w.service.get("desired", desired))
        rt.counts = {}
        for r in live:
            rt.counts[_state(r, w)] = rt.counts.get(_state(r, w), 0) + 1
        if deleting and not live:
            self._forget(rt, row, now)
            return
        self._commit(row.name, w, now)
        self._create(rt, row, live, w, now)

    # --- 1. job states ----------------------------------------------------------------------

    def _sync_job(
        self, rt: Runtime, r: ReplicaRow, view: rep.JobView | None, now: float, w: Writes
    ) -> None:
        if r.job_id == 0:
            return  # its job is being submitted
        if view is None or view.state in rep.FINAL:
            asked = r.stopping is not None or r.id in rt.cancelled
            state = "Stopped" if asked else "Failed"
            why = r.reason or rep.ended_reason(view)
            w.replica(r.id, state=state, ended=now, reason=why)
            w.event("replica", f"replica {r.id} (job {r.job_id}) {state.lower()}: {why}")
            self.prober.forget(r.id)
            rt.cancelled.discard(r.id)
            if state == "Failed":
                self._crashed(rt, r, now, w)
        elif view.state in ("RUNNING", "COMPLETING", "SUSPENDED") and r.state == "Pending":
            node = rep.first_node(view.nodelist)
            host = self._address(node)
            w.replica(r.id, state="Starting", started=view.start or now, host=host)
            w.event("replica", f"replica {r.id} (job {r.job_id}) started on {node}")
        elif view.state == "PENDING" and r.state not in ("Pending", "Draining"):
            w.replica(r.id, state="Pending", host="")

    def _address(self, node: str) -> str:
        for n in self.ctl.cluster.nodes:
            if n.name == node and n.address:
                return str(n.address)
        return "127.0.0.1"

    # --- 2. probes --------------------------------------------------------------------------

    def _probe(self, rt: Runtime, r: ReplicaRow, now: float, w: Writes) -> None:
        state = _state(r, w)
        if state not in ("Starting", "Ready", "Unready"):
            return
        host = w.replicas.get(r.id, {}).get("host", r.host)
        started = w.replicas.get(r.id, {}).get("started", r.started) or now
        spec = rt.spec
        if now - started < spec.readiness.initial_delay:
            return
        st = self.prober.poll(r.id, "readiness", spec.readiness, host, r.port, now)
        threshold = spec.readiness.failure_threshold
        if state in ("Starting", "Unready") and st.successes >= 1:
            w.replica(r.id, state="Ready", ready=now)
            rt.crashes, rt.backoff_until = 0, 0.0
            took = now - r.decided
            w.event("replica", f"replica {r.id} ready {took:.1f} s after its decision", took)
        elif state == "Ready" and st.failures >= threshold:
            w.replica(r.id, state="Unready")
            w.event("probe", f"replica {r.id} not ready: {st.last_result}")
        live = spec.liveness
        if live is not None and now - started >= live.initial_delay:
            lst = self.prober.poll(r.id, "liveness", live, host, r.port, now)
            if lst.failures >= live.failure_threshold:
                why = f"liveness probe failed {lst.failures} times: {lst.last_result}"
                self._cancel(rt, r, why)
                w.replica(r.id, state="Failed", ended=now, reason=why)
                w.event("probe", f"replica {r.id} killed: {why}")
                self.prober.forget(r.id)
                self._crashed(rt, r, now, w)

    def _crashed(self, rt: Runtime, r: ReplicaRow, now: float, w: Writes) -> None:
        """A replica failed: one that never got ready counts towards the back-off
        (a crash loop); one that served (killed, its node lost) is replaced at once."""
        if r.ready is not None or "ready" in w.replicas.get(r.id, {}):
            return
        rt.crashes += 1
        if rt.crashes < 2:
            return  # one failure may be bad luck: replaced at once
        delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (rt.crashes - 2))
        if now + delay > rt.backoff_until:
            rt.backoff_until = now + delay
            w.event("backoff", f"{rt.crashes} replicas in a row failed before being ready: "
                    f"the next one starts in {delay:.0f} s (crash loop back-off)")  # fmt: skip

    # --- 3. replica set ---------------------------------------------------------------------

    def _rollout(
        self, rt: Runtime, row: ServiceRow, live: list[ReplicaRow], desired: int, now: float,
        w: Writes,
    ) -> None:  # fmt: skip
        views = [
            ReplicaView(r.id, r.generation, _state(r, w), r.created)
            for r in live
            if _state(r, w) != "Draining"
        ]
        plan = rollout_step(views, desired, row.generation, rt.spec.rollout)
        for rid in plan.stop:
            r = next(x for x in live if x.id == rid)
            state = _state(r, w)
            w.replica(rid, state="Draining", stopping=now)
            if state in ("Pending", "Starting"):
                self._cancel(rt, r, plan.reason)  # serves nothing: no drain needed
            w.event("replica", f"replica {rid} stopping ({state}): {plan.reason}")
        w.service["_create"] = plan.create
        w.service["_reason"] = plan.reason

    # --- 4. router and autoscaler ---------------------------------------------------------------

    def _down_nodes(self) -> set[str]:
        return {n.name for n in self.ctl.live_cluster().nodes if n.state is NodeState.DOWN}

    def _push(self, rt: Runtime, live: list[ReplicaRow], w: Writes, lost: list[str]) -> None:
        """The ready replicas to the router, and those lost with their node: what
        they dropped is not held against the requests (tide.serve.router)."""
        ready = []
        for r in live:
            if _state(r, w) == "Ready" and str(r.id) not in lost:
                host = w.replicas.get(r.id, {}).get("host", r.host)
                ready.append({"id": str(r.id), "host": host, "port": r.port})
        try:
            rt.router.push(ready, rt.spec.buffer_timeout, lost=lost)
        except OSError as e:
            log.warning("service %s: endpoints not pushed: %s", rt.name, e)

    def _stats(self, rt: Runtime) -> dict[str, Any] | None:
        try:
            return rt.router.stats(rt.spec.autoscaling.period)
        except OSError as e:
            log.warning("service %s: no router stats: %s", rt.name, e)
            return None

    def _autoscale(
        self, rt: Runtime, row: ServiceRow, live: list[ReplicaRow], now: float, w: Writes
    ) -> None:
        auto = rt.spec.autoscaling
        stats = rt.stats
        if not auto.enabled or stats is None:
            return
        ready = sum(_state(r, w) == "Ready" for r in live)
        urgent = ready == 0 and stats["buffered"] > 0 and row.desired == 0
        if not urgent and now - rt.last_eval < auto.period:
            return
        if rt.prev is not None and stats["uptime"] < rt.prev["uptime"]:
            rt.prev = None  # the router restarted: its counters did too
        obs = observation(rt.prev, stats, row.desired, ready)
        decision, rt.hpa = hpa.decide(auto, rt.hpa, obs, now)
        rt.last_eval, rt.prev = now, stats
        w.service["autoscaler"] = _dump_hpa(rt.hpa)
        if decision.changed:
            w.service.update(desired=decision.desired, last_scale_time=now,
                             last_scale=decision.reason)  # fmt: skip
            w.event("scale", f"{decision.previous} -> {decision.desired}: {decision.reason}")

    # --- 5. drains, cancels, new replicas ---------------------------------------------------------

    def _drains(self, rt: Runtime, live: list[ReplicaRow], now: float, w: Writes) -> None:
        busy = {}
        if rt.stats is not None:
            busy = {e["id"]: e["outstanding"] for e in rt.stats["endpoints"]}
        for r in live:
            if _state(r, w) != "Draining" or r.id in rt.cancelled:
                continue
            stopping = w.replicas.get(r.id, {}).get("stopping", r.stopping) or now
            done = rt.stats is not None and busy.get(str(r.id), 0) == 0
            if done or now - stopping >= rt.spec.drain_timeout:
                self._cancel(rt, r, "drained" if done else "drain time is up")

    def _cancel(self, rt: Runtime, r: ReplicaRow, why: str) -> None:
        from tide.server.errors import ApiError
        from tide.server.services import jobs as jobsvc

        rt.cancelled.add(r.id)
        if not r.job_id:
            return
        try:
            jobsvc.cancel(self.ctl, rep.SERVICE_ACTOR, str(r.job_id),
                          reason=f"service {rt.name}: {why}")  # fmt: skip
        except ApiError as e:
            log.warning("service %s: cancel of job %s: %s", rt.name, r.job_id, e.error)

    def _commit(self, name: str, w: Writes, now: float) -> None:
        service = {k: v for k, v in w.service.items() if not k.startswith("_")}
        if not (w.replicas or w.events or service):
            return
        with self.ctl.sessions.begin() as s:
            for rid, values in w.replicas.items():
                svcrepo.set_replica(s, rid, **values)
            for kind, message, value in w.events:
                svcrepo.event(s, name, now, kind, message, value)
            if service:
                row = svcrepo.get(s, name)
                if row is not None:
                    for k, v in service.items():
                        setattr(row, k, v)

    def _create(self, rt: Runtime, row: ServiceRow, live: list[ReplicaRow], w: Writes,
                now: float) -> None:  # fmt: skip
        count = int(w.service.get("_create", 0))
        if count <= 0 or now < rt.submit_blocked_until or now < rt.backoff_until:
            return
        if rt.last_created is None:
            rt.last_created = max((r.created for r in live), default=0.0)
        # A replica answers the last scale decision only if none was created since
        # it; a replacement (its replica failed) or a surge answers now, so its
        # decision -> ready figure is its own, not the time since the last scale.
        decided = w.service.get("last_scale_time", row.last_scale_time) or now
        if decided < rt.last_created:
            decided = now
        for _ in range(count):
            self._create_one(rt, row, decided, now)
        rt.last_created = now

    def _create_one(self, rt: Runtime, row: ServiceRow, decided: float, now: float) -> None:
        from tide.server.errors import ApiError
        from tide.server.services import submit as submitting

        spec = rt.spec
        port = spec.port or rep.free_port()
        with self.ctl.sessions.begin() as s:
            r = ReplicaRow(service=row.name, job_id=0, generation=row.generation, port=port,
                           state="Pending", created=now, decided=decided)  # fmt: skip
            s.add(r)
            s.flush()
            rid = r.id
        body = rep.submit_body(spec, rid, port, self.bind, spec.workdir)
        who = Principal(row.user, "user")
        try:
            prepared = submitting.prepare(self.ctl, who, body)
            self.ctl.writer.submit(prepared.rows).result(timeout=60)
        except (ApiError, TimeoutError) as e:
            why = e.error if isinstance(e, ApiError) else "the store did not take the job"
            rt.submit_blocked_until = now + 10.0
            with self.ctl.sessions.begin() as s:
                svcrepo.set_replica(s, rid, state="Failed", ended=now, reason=why)
                svcrepo.event(s, row.name, now, "replica", f"replica {rid} not submitted: {why}")
            return
        job_id = prepared.job_ids[0]
        with self.ctl.sessions.begin() as s:
            svcrepo.set_replica(s, rid, job_id=job_id)
            svcrepo.event(s, row.name, now, "replica",
                          f"replica {rid} submitted as job {job_id} on port {port}")  # fmt: skip

    def _forget(self, rt: Runtime, row: ServiceRow, now: float) -> None:
        rt.router.stop()
        with self.ctl.sessions.begin() as s:
            svcrepo.event(s, row.name, now, "delete", "service deleted")
            svcrepo.remove(s, row.name)
        with self.lock:
            self.runtimes.pop(row.name, None)

    def wait_router(self, name: str, timeout: float = 10.0) -> bool:
        """Whether the service's router listens (waits up to `timeout`): `apply`
        returns once the service's address answers."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.wake()
            with self.lock:
                rt = self.runtimes.get(name)
                up = rt is not None and rt.router.admin_port > 0
            if up:
                return True
            time.sleep(0.05)
        return False

    def backoff_until(self, name: str) -> float | None:
        """When the service's next replica may start, while it backs off a crash loop."""
        with self.lock:
            rt = self.runtimes.get(name)
            return rt.backoff_until if rt is not None and rt.backoff_until else None

    def snapshot(self) -> dict[str, dict[str, Any] | None]:
        """Latest router stats per service (for the API and metrics)."""
        with self.lock:
            return {name: rt.stats for name, rt in self.runtimes.items()}


def observation(
    prev: dict[str, Any] | None, stats: dict[str, Any], desired: int, ready: int
) -> hpa.Observation:
    """What the router measured since the last evaluation (`prev`, its stats
    then), as the autoscaler takes it; the twin builds the same from its
    simulated router (tide.sim.serving.service_sim.ServiceSim.observe)."""
    # The router counts a buffered request in flight too; the autoscaler adds the
    # buffered ones itself, so they are taken out here (else scaling from zero
    # asked for twice the replicas; the twin never counted them twice).
    if prev is None:
        inflight = float(stats["inflight"]) - float(stats["buffered"])
        requests = int(stats["requests"])
    else:
        dt = max(1e-6, stats["uptime"] - prev["uptime"])
        busy = stats["inflight_seconds"] - prev["inflight_seconds"]
        waited = stats.get("buffered_seconds", 0.0) - prev.get("buffered_seconds", 0.0)
        inflight = (busy - waited) / dt
        requests = max(0, stats["requests"] - prev["requests"])
    inflight = max(0.0, inflight)
    return hpa.Observation(
        current=desired,
        ready=ready,
        inflight=inflight,
        buffered=int(stats["buffered"]),
        p95=stats["window"]["ttfb"]["p95"],
        requests=requests,
    )


def lost_with_node(
    reps: list[ReplicaRow], views: dict[int, rep.JobView], down: set[str]
) -> list[str]:
    """The replicas whose job runs on a node that is DOWN (failed, or marked
    down): they die with it, whatever they were serving."""
    if not down:
        return []
    out = []
    for r in reps:
        view = views.get(r.job_id)
        if view is not None and view.nodelist and down.intersection(expand(view.nodelist)):
            out.append(str(r.id))
    return out


def _state(r: ReplicaRow, w: Writes) -> str:
    return str(w.replicas.get(r.id, {}).get("state", r.state))


def _dump_hpa(state: hpa.HpaState) -> str:
    return json.dumps({"history": state.history, "last_request": state.last_request,
                       "since": state.since})  # fmt: skip


def _load_hpa(text: str) -> hpa.HpaState:
    try:
        d = json.loads(text) if text else {}
        hist = tuple((float(t), int(r)) for t, r in d.get("history", ()))
        return hpa.HpaState(hist, d.get("last_request"), d.get("since"))
    except (ValueError, TypeError):
        return hpa.HpaState()
