"""One service's requests in the twin: the replica latency/throughput model,
routing, buffering and what the router would measure.

Replica model (`ReplicaModel`, an LLM server with continuous batching): a
replica runs at most `max_batch` requests at once; a request waits for a
free slot (FIFO), then takes
    prefill = context tokens / prefill_tps
    decode  = generated tokens x tpot(b),  tpot(b) = tpot_base x (1 + tpot_slope x (b - 1))
with b the requests on the replica when it starts (itself included, at most
max_batch): decoding slows as the batch grows, as memory-bound decode does.
Time to first token = slot wait + prefill + one decode step; a request's
TPOT = its decode time / (generated - 1). The batch a request sees is fixed
when it starts (no re-evaluation as others come and go): an approximation
that keeps the cost per request at a few heap operations.

Routing (tide.sched.serving.routing, the live router's rule): least
outstanding requests among ready replicas. With no ready replica a request
waits at the router up to `buffer` seconds (scale from zero), then fails.
A draining replica takes no new request and stops when its last one ends.

Measured per autoscaler period (the live router's figures): mean requests
in flight (time-weighted), requests buffered, the p95 time to first token of
the period's requests, requests arrived.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from tide.sched.serving.hpa import Observation
from tide.sched.serving.routing import least_outstanding
from tide.sim.serving.trace import RequestTrace


@dataclass(slots=True, frozen=True)
class ReplicaModel:
    """Defaults: an assumed 70B-class model on 4 A100s (tensor parallel 4)."""

    prefill_tps: float = 6000.0  # context tokens per second
    tpot_base: float = 0.030  # seconds per generated token, alone on the replica
    tpot_slope: float = 0.03  # each other request in the batch slows decode by 3%
    max_batch: int = 16

    def tpot(self, batch: int) -> float:
        return self.tpot_base * (1.0 + self.tpot_slope * (max(1, batch) - 1))


@dataclass(slots=True, frozen=True)
class Slo:
    """A request meets the objective when both hold."""

    ttft: float = 2.0  # seconds to the first token
    tpot: float = 0.1  # seconds per later token


@dataclass(slots=True)
class _Replica:
    rid: int
    slots: list[float] = field(default_factory=list)  # busy slots: their free times
    outstanding: int = 0  # requests routed to it and not finished
    last_finish: float = 0.0


class ServiceSim:
    """Requests of one service against its ready replicas, in arrival order."""

    def __init__(
        self,
        name: str,
        trace: RequestTrace,
        model: ReplicaModel,
        slo: Slo,
        period: float,
        horizon: float,
        buffer: float = 30.0,
    ) -> None:
        self.name, self.model, self.slo, self.buffer = name, model, slo, buffer
        self.period = period
        self.t = trace.t.tolist()
        self.ctx = trace.ctx.tolist()
        self.gen = trace.gen.tolist()
        n = len(self.t)
        self.ttft = np.full(n, np.nan)
        self.e2e = np.full(n, np.nan)
        self.tpot = np.full(n, np.nan)
        self.failed = np.zeros(n, dtype=bool)
        self.next = 0  # first request not yet routed
        self.ready: list[_Replica] = []
        self.draining: dict[int, _Replica] = {}
        self.waiting: deque[int] = deque()  # buffered at the router
        self._rr = 0
        self._ends: list[tuple[float, int, _Replica]] = []  # (finish, seq, replica)
        self._seq = 0
        periods = math.ceil(horizon / period) + 2
        self.inflight_s = np.zeros(periods)  # in-flight seconds per period
        self.arrivals = np.zeros(periods, dtype=np.int64)
        self._ttft_now: list[float] = []  # TTFT of this period's requests
        self._obs_period = 0

    # --- requests ------------------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Route every request that arrived by `now`."""
        t = self.t
        lo = i = self.next
        n = len(t)
        while i < n and t[i] <= now:
            if self.ready:
                self._admit(i, t[i])
            else:
                self.waiting.append(i)
            i += 1
        self.next = i
        if i > lo:
            ks = (np.asarray(t[lo:i]) // self.period).astype(np.int64)
            np.add.at(self.arrivals, np.minimum(ks, len(self.arrivals) - 1), 1)
            self._charge(lo, i)
        self._expire(now)

    def _expire(self, now: float) -> None:
        while self.waiting and now - self.t[self.waiting[0]] > self.buffer:
            self.failed[self.waiting.popleft()] = True

    def _admit(self, i: int, at: float) -> None:
        m = self.model
        ends = self._ends
        while ends and ends[0][0] <= at:  # requests finished by now leave their replica
            heapq.heappop(ends)[2].outstanding -= 1
        rs = self.ready
        self._rr += 1
        r = rs[least_outstanding([x.outstanding for x in rs], self._rr)]
        slots = r.slots
        while slots and slots[0] <= at:
            heapq.heappop(slots)
        start = at if len(slots) < m.max_batch else heapq.heappop(slots)
        batch = r.outstanding + 1 if r.outstanding < m.max_batch else m.max_batch
        tpot = m.tpot_base * (1.0 + m.tpot_slope * (batch - 1))
        gen = self.gen[i]
        prefill = self.ctx[i] / m.prefill_tps
        first = start + prefill + tpot
        finish = start + prefill + gen * tpot
        heapq.heappush(slots, finish)
        self._seq += 1
        heapq.heappush(ends, (finish, self._seq, r))
        r.outstanding += 1
        if finish > r.last_finish:
            r.last_finish = finish
        arrived = self.t[i]
        self.ttft[i] = first - arrived
        self.e2e[i] = finish - arrived
        self.tpot[i] = (finish - first) / (gen - 1) if gen > 1 else tpot
        self._ttft_now.append(first - arrived)

    def _charge(self, lo: int, hi: int) -> None:
        """Add the time in flight of requests lo..hi-1 (routed) to the periods
        they overlap (vectorized; the rare ones spanning 3+ periods one by one)."""
        if hi <= lo:
            return
        a = np.asarray(self.t[lo:hi])
        f = a + self.e2e[lo:hi]
        ok = ~np.isnan(f)
        a, f = a[ok], f[ok]
        p = self.period
        last = len(self.inflight_s) - 1
        ka = np.minimum((a // p).astype(np.int64), last)
        kf = np.minimum((f // p).astype(np.int64), last)
        same = ka == kf
        np.add.at(self.inflight_s, ka[same], (f - a)[same])
        two = kf == ka + 1
        np.add.at(self.inflight_s, ka[two], (ka[two] + 1) * p - a[two])
        np.add.at(self.inflight_s, kf[two], f[two] - kf[two] * p)
        for j in np.flatnonzero(~same & ~two).tolist():
            k, kk = int(ka[j]), int(kf[j])
            self.inflight_s[k] += (k + 1) * p - a[j]
            self.inflight_s[k + 1 : kk] += p
            self.inflight_s[kk] += f[j] - kk * p

    # --- replicas ------------------------------------------------------------------------

    def add_ready(self, rid: int, now: float) -> None:
        self.advance(now)
        self.ready.append(_Replica(rid, last_finish=now))
        while self.waiting:  # the buffered requests go to it at once
            i = self.waiting.popleft()
            self._admit(i, now)
            self._charge(i, i + 1)

    def drain(self, rid: int, now: float) -> float:
        """Stop routing to a replica; when it will be idle (its last request done)."""
        self.advance(now)
        for k, r in enumerate(self.ready):
            if r.rid == rid:
                del self.ready[k]
                return max(now, r.last_finish)
        return now

    def forget(self, rid: int, now: float) -> None:
        """A replica lost without a drain (its node failed, it was preempted)."""
        self.advance(now)
        self.ready = [r for r in self.ready if r.rid != rid]

    # --- what the router measured ------------------------------------------------------------

    def observe(self, now: float, current: int) -> Observation:
        """The period ending at `now`, as the live router would report it."""
        self.advance(now)
        k = max(0, int(now // self.period) - 1)
        inflight = float(self.inflight_s[k] / self.period)
        p95 = None
        if self._ttft_now:
            vals = sorted(self._ttft_now)
            p95 = vals[min(len(vals) - 1, int(0.95 * len(vals)))]
        self._ttft_now = []
        return Observation(
            current=current,
            ready=len(self.ready),
            inflight=inflight,
            buffered=len(self.waiting),
            p95=p95,
            requests=int(self.arrivals[k]),
        )

    def finish(self, horizon: float) -> None:
        """End of the run: requests still waiting at the router failed."""
        self.advance(horizon)
        for i in self.waiting:
            self.failed[i] = True
        self.waiting.clear()
