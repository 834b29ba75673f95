"""The autoscaler: Kubernetes' HorizontalPodAutoscaler algorithm, with
Knative's concurrency target, scale to zero and a scheduled minimum. Pure.

One evaluation (`decide`), every Autoscaling.period seconds of the driver's
clock (the live controller's or the twin's):

1. raw recommendation, per metric (HPA: desired = ceil(current x metric /
   target), with `current` the ready replicas whose metric was measured):
   - in-flight: ratio = (in-flight + buffered) / ready / target_inflight;
   - latency: ratio = p95 / target_p95;
   a ratio within `tolerance` of 1 keeps the current count; the largest
   recommendation of the metrics wins (HPA with several metrics). With no
   replica at all, requests buffered at the router ask for enough replicas
   to hold them (Knative's activator: scale from zero); while replicas are
   only starting, nothing is measured and the count stays.
2. stabilization (HPA behavior): the recommendation is kept in a history;
   scaling up goes to the smallest recommendation of the last `up_window`
   seconds, scaling down to the largest of the last `down_window` seconds.
   So after a scale-up to N at t, the count stays >= N until t +
   down_window: noise cannot make it flap.
3. rate limit: at most max(+up_percent %, +up_pods) per evaluation.
4. bounds: [max(min_replicas, scheduled minimum), max_replicas]; a minimum
   of 0 goes to 0 only after `scale_to_zero_after` seconds without a
   request, else it is 1.

Example: target 4 in flight, 2 ready replicas carrying 17 requests:
ratio 17/2/4 = 2.125 -> ceil(2 x 2.125) = 5 replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tide.model.service import Autoscaling

# A thousandth of a replica is measurement jitter (the live router's time
# integrals carry microseconds of router time), not a reason for one more.
EPS = 1e-3


@dataclass(slots=True, frozen=True)
class Observation:
    """What the router measured over the last period."""

    current: int  # replicas asked for now (spec.replicas of the scale target)
    ready: int  # replicas ready now (the ones the metrics come from)
    inflight: float = 0.0  # mean requests in flight, all ready replicas together
    buffered: int = 0  # requests waiting at the router for a ready replica
    p95: float | None = None  # seconds, time to first byte; None: no request answered
    requests: int = 0  # requests that arrived during the period


@dataclass(slots=True, frozen=True)
class HpaState:
    """What the autoscaler remembers between evaluations."""

    history: tuple[tuple[float, int], ...] = ()  # (time, raw recommendation)
    last_request: float | None = None  # when a request was last seen
    since: float | None = None  # first evaluation (idleness counts from here)


@dataclass(slots=True, frozen=True)
class ScaleDecision:
    desired: int
    previous: int
    recommendation: int  # before stabilization, limits and bounds
    reason: str

    @property
    def changed(self) -> bool:
        return self.desired != self.previous


@dataclass(slots=True)
class _Why:
    parts: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(self) -> str:
        return "; ".join(self.parts)


def recommend(spec: Autoscaling, obs: Observation) -> tuple[int, str]:
    """Step 1: the raw recommendation and why."""
    load = obs.inflight + obs.buffered
    if obs.ready == 0:
        if load > 0 and obs.current == 0:  # nothing runs, requests wait: scale from zero
            target = spec.target_inflight or 1.0
            want = max(1, math.ceil(load / target - EPS))
            return want, f"{load:g} requests waiting with no replica"
        return obs.current, "no ready replica to measure (replicas starting)"
    best, why = -1, ""
    if spec.target_inflight is not None:
        ratio = load / obs.ready / spec.target_inflight
        r = _apply_ratio(spec, obs.ready, obs.current, ratio)
        per = load / obs.ready
        best, why = r, f"in flight {per:.2f} per ready replica, target {spec.target_inflight:g}"
    if spec.target_p95 is not None and obs.p95 is not None:
        ratio = obs.p95 / spec.target_p95
        r = _apply_ratio(spec, obs.ready, obs.current, ratio)
        if r > best:
            best = r
            why = f"p95 {obs.p95:.3f} s, target {spec.target_p95:g} s"
    if best < 0:
        return obs.current, "no metric measured"
    return best, why


def _apply_ratio(spec: Autoscaling, ready: int, current: int, ratio: float) -> int:
    if abs(ratio - 1.0) <= spec.tolerance:
        return current
    return math.ceil(ready * ratio - EPS)


def decide(
    spec: Autoscaling, state: HpaState, obs: Observation, now: float
) -> tuple[ScaleDecision, HpaState]:
    """One evaluation at `now`: the desired replicas and the new state."""
    raw, why_raw = recommend(spec, obs)
    why = _Why([f"{why_raw} -> {raw}"])
    history = _keep(state.history, now, max(spec.up_window, spec.down_window))
    history = (*history, (now, raw))
    stable = _stabilize(spec, history, obs.current, raw, now, why)
    limited = _rate_limit(spec, obs.current, stable, why)
    last_request = now if obs.requests or obs.buffered or obs.inflight else state.last_request
    since = state.since if state.since is not None else now
    desired = _bounds(spec, limited, now, last_request, since, why, obs.current)
    new_state = HpaState(history, last_request, since)
    return ScaleDecision(desired, obs.current, raw, why.text()), new_state


def _keep(history: tuple[tuple[float, int], ...], now: float, span: float):
    return tuple((t, r) for t, r in history if t > now - span)


def _stabilize(
    spec: Autoscaling,
    history: tuple[tuple[float, int], ...],
    current: int,
    raw: int,
    now: float,
    why: _Why,
) -> int:
    """HPA's stabilizeRecommendationWithBehaviors."""
    up, down = raw, raw
    for t, r in history:
        if t > now - spec.up_window or t == now:
            up = min(up, r)
        if t > now - spec.down_window or t == now:
            down = max(down, r)
    out = current
    if out < up:
        out = up
    if out > down:
        out = down
    if raw < current and out > raw:
        why.add(f"scale-down held by the {spec.down_window:g} s window (highest {down})")
    elif raw > current and out < raw:
        why.add(f"scale-up held by the {spec.up_window:g} s window (lowest {up})")
    return out


def _rate_limit(spec: Autoscaling, current: int, want: int, why: _Why) -> int:
    if want <= current:
        return want
    most = max(math.floor(current * (1 + spec.up_percent / 100.0)), current + spec.up_pods)
    if want > most:
        why.add(f"at most {most} after this period (+{spec.up_percent:g}% or +{spec.up_pods})")
        return most
    return want


def _bounds(
    spec: Autoscaling,
    want: int,
    now: float,
    last_request: float | None,
    since: float,
    why: _Why,
    current: int = 1,
) -> int:
    low = spec.min_replicas
    if spec.schedule is not None:
        scheduled = spec.schedule.minimum_at(now)
        if scheduled > low:
            low = scheduled
            if want < low:
                why.add(f"scheduled minimum {scheduled} (from {_hhmm(spec.schedule, now)})")
    low = min(low, spec.max_replicas)
    if low == 0:
        idle_from = last_request if last_request is not None else since
        # the idle hold keeps a running replica; it never starts one (a service
        # at zero that nobody called stays there)
        if now - idle_from < spec.scale_to_zero_after and current > 0:
            low = 1
            if want < 1:
                why.add(f"kept at 1 until {spec.scale_to_zero_after:g} s without a request")
        elif want == 0:
            why.add(f"no request for {now - idle_from:.0f} s: scale to zero")
    if want > spec.max_replicas:
        why.add(f"capped at max {spec.max_replicas}")
    return max(low, min(want, spec.max_replicas))


def _hhmm(profile, now: float) -> str:  # type: ignore[no-untyped-def]
    at = int(profile.point_at(now))
    return f"{at // 3600:02d}:{at % 3600 // 60:02d}"
