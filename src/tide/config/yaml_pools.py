"""The `pools:` section of tide's cluster YAML <-> tide.model.service.PoolConfig
(docs/services.md, "Pools"). A pool is a partition's nodes; it lends what its
own work (service replicas) leaves idle to the work of its lend partition:

    pools:
      victim_order: lost_work        # or priority (Slurm's, Kubernetes')
      serving:
        partition: serving           # replicas run here; its nodes are the pool
        lend_partition: lend         # borrowed work runs here (the same nodes)
        mode: gpu                    # gpu (tidal) or node (whole nodes, drain + gap)
        lend_after: 10m              # capacity spare this long is lent
        keep_idle: 2                 # GPUs (nodes, in node mode) never lent
        reclaim_objective: 60s       # scale-up decision -> new replica ready
        startup: 20s                 # a replica's start -> ready
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from tide.config.durations import parse_duration
from tide.config.errors import ConfigError
from tide.model import Cluster
from tide.model.service import Pool, PoolConfig

Fail = Callable[[Sequence[str | int], str, str], ConfigError]
Secs = Annotated[float, BeforeValidator(lambda v: float(parse_duration(v) or 0))]
MaybeSecs = Annotated[float | None, BeforeValidator(lambda v: parse_duration(v))]


class PoolSpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    partition: str
    lend_partition: str = ""
    mode: str = "gpu"
    lend_after: Secs = 600.0
    keep_idle: int = Field(0, ge=0)
    reclaim_objective: Secs = 60.0
    startup: Secs = 30.0
    margin: Secs = 5.0
    max_grace: Secs = 300.0
    switch_gap: Secs = 0.0
    drain_timeout: MaybeSecs = None


def build_pools(raw: dict[str, Any] | None, cluster: Cluster, fail: Fail) -> PoolConfig | None:
    """The pools, checked: real partitions, a lend partition over the pool's nodes."""
    if not raw:
        return None
    order = str(raw.get("victim_order", "lost_work"))
    if order not in ("lost_work", "priority"):
        raise fail(["pools", "victim_order"], f"victim_order {order!r} is not lost_work or "
                   "priority", "write victim_order: lost_work")  # fmt: skip
    parts = {p.name: p for p in cluster.partitions}
    pools = []
    for name, body in raw.items():
        if name == "victim_order":
            continue
        path: list[str | int] = ["pools", name]
        try:
            spec = PoolSpec.model_validate(body)
        except ValidationError as e:  # pydantic's first error, in one line
            first = e.errors()[0]
            where = [*path, *(str(x) for x in first.get("loc", ()))]
            msg = str(first.get("msg", "")).removeprefix("Value error, ")
            raise fail(where, f"pool {name}: {msg}", "see docs/services.md, Pools") from None
        if spec.partition not in parts:
            raise fail([*path, "partition"], f"pool {name}: no partition {spec.partition!r}",
                       f"use one of: {', '.join(parts)}")  # fmt: skip
        if spec.lend_partition:
            lend = parts.get(spec.lend_partition)
            if lend is None:
                raise fail(
                    [*path, "lend_partition"],
                    f"pool {name}: no partition {spec.lend_partition!r}",
                    "define it over the pool's nodes",
                )
            if not set(lend.nodes) <= set(parts[spec.partition].nodes):
                raise fail(
                    [*path, "lend_partition"],
                    f"pool {name}: partition "
                    f"{spec.lend_partition} has nodes outside {spec.partition}",
                    f"give {spec.lend_partition} the nodes of {spec.partition}",
                )
        if spec.mode not in ("gpu", "node"):
            raise fail([*path, "mode"], f"pool {name}: mode {spec.mode!r} is not gpu or node",
                       "write mode: gpu (tidal) or mode: node (whole nodes)")  # fmt: skip
        fields = spec.model_dump(exclude={"partition", "lend_partition"})
        fields = {k: v for k, v in fields.items() if k in Pool.__dataclass_fields__}
        pools.append(Pool(name, spec.partition, spec.lend_partition, **fields))
    return PoolConfig(tuple(pools), order)


def save_pools(config: PoolConfig | None) -> dict[str, Any]:
    if config is None or not config.pools:
        return {}
    out: dict[str, Any] = {"victim_order": config.victim_order}
    for p in config.pools:
        d: dict[str, Any] = {"partition": p.partition, "mode": p.mode,
                             "lend_after": f"{int(p.lend_after)}s", "keep_idle": p.keep_idle,
                             "reclaim_objective": f"{int(p.reclaim_objective)}s",
                             "startup": f"{int(p.startup)}s", "margin": f"{int(p.margin)}s",
                             "max_grace": f"{int(p.max_grace)}s",
                             "switch_gap": f"{int(p.switch_gap)}s"}  # fmt: skip
        if p.lend_partition:
            d["lend_partition"] = p.lend_partition
        if p.drain_timeout is not None:
            d["drain_timeout"] = f"{int(p.drain_timeout)}s"
        out[p.name] = d
    return {"pools": out}
