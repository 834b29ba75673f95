"""Inference services: what a user declares (Kubernetes Deployment + Service +
HorizontalPodAutoscaler in one object) and the pools that lend idle serving
GPUs to training. Plain dataclasses: validation happens at the edges
(tide.serve.spec for YAML/REST), the pure rules live in tide.sched.serving.

Names follow Kubernetes where a Kubernetes user would look for them
(replicas, readinessProbe, maxSurge, stabilizationWindowSeconds), Slurm
where they are scheduling words (partition, account, qos, gres).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

DAY = 86400.0


@dataclass(slots=True, frozen=True)
class Probe:
    """An HTTP probe (Kubernetes httpGet probe): GET path on the replica's port;
    2xx/3xx is success; `failure_threshold` failures in a row flip the state."""

    path: str = "/"
    period: float = 2.0  # periodSeconds
    timeout: float = 1.0  # timeoutSeconds
    failure_threshold: int = 3  # failureThreshold
    initial_delay: float = 0.0  # initialDelaySeconds


@dataclass(slots=True, frozen=True)
class DailyProfile:
    """A scheduled minimum of replicas: piecewise constant over the day.

    `points` are (second of the day, minimum) sorted by time; the minimum at a
    time is the one of the last point at or before it (wrapping around
    midnight). `utc_offset` moves the day to the service's local time."""

    points: tuple[tuple[float, int], ...] = ()
    utc_offset: float = 0.0  # seconds east of UTC

    def minimum_at(self, now: float) -> int:
        if not self.points:
            return 0
        tod = (now + self.utc_offset) % DAY
        current = self.points[-1][1]  # before the first point: yesterday's last
        for at, minimum in self.points:
            if at <= tod:
                current = minimum
            else:
                break
        return current

    def point_at(self, now: float) -> float:
        """The second of the day of the point in force (for reasons)."""
        tod = (now + self.utc_offset) % DAY
        at = self.points[-1][0] if self.points else 0.0
        for t, _ in self.points:
            if t <= tod:
                at = t
        return at


@dataclass(slots=True, frozen=True)
class Autoscaling:
    """HorizontalPodAutoscaler (autoscaling/v2) with Knative's concurrency
    target and scale to zero. Defaults are Kubernetes' (behavior: scaleUp
    stabilization 0 s, at most max(+100%, +4 pods) per period; scaleDown
    stabilization 300 s; tolerance 0.1), except the period: 10 s."""

    min_replicas: int = 1
    max_replicas: int = 1
    target_inflight: float | None = None  # requests in flight per ready replica
    target_p95: float | None = None  # seconds: p95 time to first byte objective
    tolerance: float = 0.1
    period: float = 10.0  # seconds between evaluations (the driver's clock)
    up_window: float = 0.0  # scaleUp stabilizationWindowSeconds
    down_window: float = 300.0  # scaleDown stabilizationWindowSeconds
    up_percent: float = 100.0  # scaleUp policy: Percent per period
    up_pods: int = 4  # scaleUp policy: Pods per period (the larger one wins)
    scale_to_zero_after: float = 300.0  # idle seconds before 0 (min_replicas 0 only)
    schedule: DailyProfile | None = None  # scheduled minimum

    @property
    def enabled(self) -> bool:
        return self.target_inflight is not None or self.target_p95 is not None


@dataclass(slots=True, frozen=True)
class Rollout:
    """RollingUpdate: how many replicas above the desired count may exist
    (max_surge) and how many below it may be unready (max_unavailable), as
    counts or, as Kubernetes allows, percentages of the desired count."""

    max_surge: int = 1
    max_unavailable: int = 0
    max_surge_percent: float | None = None  # overrides max_surge: rounded up
    max_unavailable_percent: float | None = None  # overrides max_unavailable: rounded down

    def resolve(self, desired: int) -> tuple[int, int]:
        """(surge, unavailable) for `desired` replicas, as Kubernetes resolves them:
        a surge percentage rounds up, an unavailable one down, and both 0 means an
        unavailable of 1 (else a rollout could never move)."""
        surge, unavailable = self.max_surge, self.max_unavailable
        if self.max_surge_percent is not None:
            surge = math.ceil(desired * self.max_surge_percent / 100.0 - 1e-9)
        if self.max_unavailable_percent is not None:
            unavailable = math.floor(desired * self.max_unavailable_percent / 100.0 + 1e-9)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, unavailable


@dataclass(slots=True)
class ServiceSpec:
    """One inference service: its replicas' command and shape, probes,
    autoscaling, rollout and where it runs."""

    name: str
    command: str  # any HTTP server; it must listen on $PORT
    gpus: int = 0  # per replica
    cpus: int = 1  # per replica
    mem: int = 0  # MB per replica; 0 = not reserved
    gpu_type: str = ""
    port: int = 0  # 0: tide picks a free port per replica and sets $PORT
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = ""  # where replicas run ("" = the directory `tide service apply` ran in)
    readiness: Probe = field(default_factory=Probe)
    liveness: Probe | None = None
    replicas: int = 1  # the desired count when autoscaling is off
    autoscaling: Autoscaling = field(default_factory=Autoscaling)
    rollout: Rollout = field(default_factory=Rollout)
    partition: str = ""  # "" = the cluster default (or the serving pool's)
    account: str = ""
    qos: str = ""
    user: str = ""
    startup: float = 30.0  # expected seconds from start to ready (until measured)
    drain_timeout: float = 30.0  # seconds a stopping replica may finish its requests
    buffer_timeout: float = 30.0  # seconds a request may wait for a ready replica

    @property
    def min_replicas(self) -> int:
        a = self.autoscaling
        return a.min_replicas if a.enabled else self.replicas

    @property
    def max_replicas(self) -> int:
        a = self.autoscaling
        return a.max_replicas if a.enabled else self.replicas


@dataclass(slots=True, frozen=True)
class Pool:
    """A set of nodes (a partition's) that runs a kind of work and may lend
    what it does not use to borrowed work (docs/services.md, "Pools").

    `mode` "gpu" lends single GPUs of partly used nodes (tidal); "node" lends
    only whole idle nodes, which come back after a drain and a switching gap
    (slurm-bridge style)."""

    name: str
    partition: str  # its own work (service replicas) runs here; its nodes are the pool
    lend_partition: str = ""  # borrowed work runs here (same nodes); "" = lends nothing
    mode: str = "gpu"  # "gpu" | "node"
    lend_after: float = 600.0  # seconds capacity must stay spare before it is lent
    keep_idle: int = 0  # GPUs ("gpu") or nodes ("node") never lent: instant headroom
    reclaim_objective: float = 60.0  # scale-up decision -> new replica ready, seconds
    startup: float = 30.0  # expected replica start -> ready, seconds
    margin: float = 5.0  # seconds kept for the scheduling passes in between
    max_grace: float = 300.0  # a reclaimed borrower never gets more than this
    switch_gap: float = 0.0  # "node": seconds a node is unusable when it changes sides
    drain_timeout: float | None = None  # "node": preempt borrowers still there after this

    @property
    def lends(self) -> bool:
        return bool(self.lend_partition)


@dataclass(slots=True, frozen=True)
class PoolConfig:
    """The pools of a cluster and how reclaimed borrowers are chosen."""

    pools: tuple[Pool, ...] = ()
    victim_order: str = "lost_work"  # "lost_work" (tide) | "priority" (Slurm, Kubernetes)

    def pool_of_partition(self, name: str) -> Pool | None:
        for p in self.pools:
            if p.partition == name:
                return p
        return None

    def pool_lending_to(self, name: str) -> Pool | None:
        for p in self.pools:
            if p.lend_partition and p.lend_partition == name:
                return p
        return None
