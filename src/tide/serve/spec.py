"""The service spec as users write it (YAML, or the same JSON over REST), in
the Kubernetes spirit, checked at the edge into tide.model.service.ServiceSpec.

    apiVersion: tide/v1            # optional; so is `kind: Service`
    kind: Service
    metadata: {name: chat}         # or `name: chat` at the top
    spec:
      command: python examples/serve/model_server.py
      resources: {gpus: 1, cpus: 2, memory: 8G}
      readinessProbe: {path: /health, periodSeconds: 1, failureThreshold: 3}
      autoscaling: {minReplicas: 1, maxReplicas: 8, targetInFlight: 4}
      rollout: {maxSurge: 1, maxUnavailable: 0}
      partition: serving

Keys are camelCase as in Kubernetes; snake_case is accepted too. Every
error names the field and the fix (`SpecError`), never a traceback.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from tide.model.service import Autoscaling, DailyProfile, Probe, Rollout, ServiceSpec

NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")  # DNS-1123 label, shortened
MAX_REPLICAS = 1000


class SpecError(ValueError):
    def __init__(self, field: str, error: str, fix: str) -> None:
        super().__init__(f"{field}: {error}")
        self.field = field
        self.error = error
        self.fix = fix


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class ProbeIn(_Model):
    path: str = Field("/", pattern=r"^/[^\s]*$", max_length=1024)
    period_seconds: float = Field(2.0, gt=0, le=3600)
    timeout_seconds: float = Field(1.0, gt=0, le=300)
    failure_threshold: int = Field(3, ge=1, le=100)
    initial_delay_seconds: float = Field(0.0, ge=0, le=3600)

    def model(self) -> Probe:
        return Probe(self.path, self.period_seconds, self.timeout_seconds,
                     self.failure_threshold, self.initial_delay_seconds)  # fmt: skip


class ScheduleIn(_Model):
    at: str = Field(..., pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM")
    min: int = Field(..., ge=0, le=MAX_REPLICAS)


class AutoscalingIn(_Model):
    min_replicas: int = Field(1, ge=0, le=MAX_REPLICAS)
    max_replicas: int = Field(1, ge=1, le=MAX_REPLICAS)
    target_in_flight: float | None = Field(None, gt=0, le=100_000)
    target_p95_seconds: float | None = Field(None, gt=0, le=3600)
    tolerance: float = Field(0.1, ge=0, lt=1)
    period_seconds: float = Field(10.0, ge=0.5, le=3600)
    scale_up_stabilization_seconds: float = Field(0.0, ge=0, le=86400)
    scale_down_stabilization_seconds: float = Field(300.0, ge=0, le=86400)
    scale_up_percent: float = Field(100.0, ge=0, le=10_000)
    scale_up_pods: int = Field(4, ge=0, le=MAX_REPLICAS)
    scale_to_zero_after_seconds: float = Field(300.0, ge=0, le=7 * 86400)
    schedule: list[ScheduleIn] = Field(default_factory=list, max_length=48)
    utc_offset_hours: float = Field(0.0, ge=-14, le=14)

    @model_validator(mode="after")
    def _check(self) -> AutoscalingIn:
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}"
            )
        if self.target_in_flight is None and self.target_p95_seconds is None:
            raise ValueError("give targetInFlight and/or targetP95Seconds")
        return self

    def model(self) -> Autoscaling:
        points = sorted((_seconds_of_day(s.at), s.min) for s in self.schedule)
        profile = DailyProfile(tuple(points), self.utc_offset_hours * 3600) if points else None
        return Autoscaling(
            min_replicas=self.min_replicas,
            max_replicas=self.max_replicas,
            target_inflight=self.target_in_flight,
            target_p95=self.target_p95_seconds,
            tolerance=self.tolerance,
            period=self.period_seconds,
            up_window=self.scale_up_stabilization_seconds,
            down_window=self.scale_down_stabilization_seconds,
            up_percent=self.scale_up_percent,
            up_pods=self.scale_up_pods,
            scale_to_zero_after=self.scale_to_zero_after_seconds,
            schedule=profile,
        )


PERCENT = r"^(100|[1-9]?\d)%$"  # Kubernetes' IntOrString: "25%"


class RolloutIn(_Model):
    max_surge: int | str = Field(1, description="replicas, or a percentage: 25%")
    max_unavailable: int | str = Field(0, description="replicas, or a percentage: 25%")

    @model_validator(mode="after")
    def _check(self) -> RolloutIn:
        for which in ("max_surge", "max_unavailable"):
            value = getattr(self, which)
            ok = (isinstance(value, int) and 0 <= value <= MAX_REPLICAS) or (
                isinstance(value, str) and re.fullmatch(PERCENT, value.strip())
            )
            if not ok:
                raise ValueError(f"{to_camel(which)} {value!r} is neither a count "
                                 f"(0-{MAX_REPLICAS}) nor a percentage (0%-100%)")  # fmt: skip
        if self.max_surge in (0, "0%") and self.max_unavailable in (0, "0%"):
            raise ValueError("maxSurge and maxUnavailable cannot both be 0")
        return self

    def model(self) -> Rollout:
        def split(v: int | str) -> tuple[int, float | None]:
            return (0, float(v.strip()[:-1])) if isinstance(v, str) else (v, None)

        surge, surge_pct = split(self.max_surge)
        unavailable, unavailable_pct = split(self.max_unavailable)
        return Rollout(surge, unavailable, surge_pct, unavailable_pct)


class ResourcesIn(_Model):
    gpus: int = Field(0, ge=0, le=64)
    cpus: int = Field(1, ge=1, le=4096)
    memory: int | str = Field(0, description="MB, or with a unit: 512M, 8G")
    gpu_type: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,32}$")


class SpecIn(_Model):
    command: str = Field(..., min_length=1, max_length=8192)
    resources: ResourcesIn = Field(default_factory=ResourcesIn)
    port: int = Field(0, description="0: tide picks one per replica and sets $PORT")
    env: dict[str, str] = Field(default_factory=dict, max_length=200)
    workdir: str = Field("", max_length=4096)
    replicas: int = Field(1, ge=0, le=MAX_REPLICAS)
    readiness_probe: ProbeIn = Field(default_factory=ProbeIn)
    liveness_probe: ProbeIn | None = None
    autoscaling: AutoscalingIn | None = None
    rollout: RolloutIn = Field(default_factory=RolloutIn)
    partition: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,64}$")
    account: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,64}$")
    qos: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,64}$")
    startup_seconds: float = Field(30.0, ge=0, le=3600)
    drain_seconds: float = Field(30.0, ge=0, le=3600)
    buffer_seconds: float = Field(30.0, ge=0, le=600)
    router_port: int = Field(0, description="the service's stable port; 0: tide picks one")

    @model_validator(mode="after")
    def _check(self) -> SpecIn:
        for which in ("port", "router_port"):
            value = getattr(self, which)
            if value and not 1024 <= value <= 65535:
                raise ValueError(f"{to_camel(which)} {value} is outside 1024-65535 (or 0)")
        for key in self.env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise ValueError(f"env name {key!r} is not a valid variable name")
        return self


class MetadataIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


def parse_service(data: Any) -> tuple[ServiceSpec, dict[str, Any]]:
    """A user's document -> (ServiceSpec, the normalized document to store).
    Raises SpecError naming the field and the fix."""
    if not isinstance(data, dict):
        raise SpecError("service", "the document is not a mapping",
                        "write `name:` and `spec:` keys (see docs/services.md)")  # fmt: skip
    kind = data.get("kind", "Service")
    if kind != "Service":
        raise SpecError("kind", f"{kind!r} is not Service", "write `kind: Service` or leave it out")
    name = _name(data)
    body = data.get("spec")
    if body is None:  # the flat form: everything at the top
        body = {
            k: v for k, v in data.items() if k not in ("apiVersion", "kind", "metadata", "name")
        }
    try:
        spec_in = SpecIn.model_validate(body)
    except ValidationError as e:
        raise _spec_error(e) from None
    spec = _to_model(name, spec_in)
    stored = {"apiVersion": "tide/v1", "kind": "Service", "metadata": {"name": name},
              "spec": spec_in.model_dump(by_alias=True, exclude_defaults=True)}  # fmt: skip
    return spec, stored


def _name(data: dict[str, Any]) -> str:
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else data.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise SpecError(
            "metadata.name",
            f"{name!r} is not a valid service name",
            "use 1-40 lowercase letters, digits and '-', starting with a letter (e.g. chat-7b)",
        )
    return name


def _to_model(name: str, s: SpecIn) -> ServiceSpec:
    try:
        mem = _memory(s.resources.memory)
    except ValueError as e:
        raise SpecError("spec.resources.memory", str(e), "write MB or e.g. 512M, 8G") from None
    auto = s.autoscaling.model() if s.autoscaling is not None else Autoscaling(
        min_replicas=s.replicas, max_replicas=max(1, s.replicas)
    )  # fmt: skip
    return ServiceSpec(
        name=name,
        command=s.command,
        gpus=s.resources.gpus,
        cpus=s.resources.cpus,
        mem=mem,
        gpu_type=s.resources.gpu_type,
        port=s.port,
        env=dict(s.env),
        workdir=s.workdir,
        readiness=s.readiness_probe.model(),
        liveness=s.liveness_probe.model() if s.liveness_probe else None,
        replicas=s.replicas,
        autoscaling=auto,
        rollout=s.rollout.model(),
        partition=s.partition,
        account=s.account,
        qos=s.qos,
        startup=s.startup_seconds,
        drain_timeout=s.drain_seconds,
        buffer_timeout=s.buffer_seconds,
    )


def _memory(value: int | str) -> int:
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is negative")
        return value
    from tide.jobspec.timefmt import parse_mem

    return parse_mem(value)


def _seconds_of_day(hhmm: str) -> float:
    h, m = hhmm.split(":")
    return int(h) * 3600.0 + int(m) * 60.0


def _spec_error(e: ValidationError) -> SpecError:
    first = e.errors()[0]
    loc = ".".join(to_camel(str(x)) if isinstance(x, str) else str(x) for x in first["loc"])
    field = f"spec.{loc}" if loc else "spec"
    msg = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        return SpecError(
            field, "unknown key", "remove it or fix its spelling (see docs/services.md)"
        )
    if first["type"] == "missing":
        return SpecError(field, "is required", f"add `{loc.split('.')[-1]}:`")
    got = first.get("input")
    shown = f" (got {got!r})" if isinstance(got, int | float | str) and len(str(got)) < 60 else ""
    return SpecError(field, msg + shown, "see the service spec keys in docs/services.md")
