"""The multifactor priority of one job in plain Python. Pure.

`tide.sched.priority.compute_priorities` is vectorised: for one new job, the
common case of a cycle without a backlog, its fixed cost (tens of small numpy
arrays, the account tree walked for association priorities) is most of the
cycle. Here what every job shares is prepared once (`PriorityBasis`, kept by
the cycle memo while the priorities are) and `job_priority` does the same
float64 operations on Python floats, in the same order, so the result is the
same number bit for bit (tests/sched/test_priority_one.py compares them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tide.model import AccountTree, Cluster, Job
from tide.model.sched_config import SchedulerConfig
from tide.sched.priority import (
    FACTORS,
    MAX_PRIORITY,
    _Basis,
    _Config,
    _normalise,
    _Partitions,
    _partitions,
    _profile_key,
    _profile_row,
    request_amounts,
)


@dataclass(slots=True)
class PriorityBasis:
    """What every job's priority reads besides the job itself."""

    config: SchedulerConfig
    cfg: _Config
    parts: _Partitions
    basis: _Basis
    fs_factors: dict[str, float]
    part_factor: list[float]  # normalised PriorityJobFactor per partition row
    n_nodes: int
    n_cpus: float

    @classmethod
    def of(
        cls,
        cluster: Cluster,
        config: SchedulerConfig,
        accounts: AccountTree,
        fs_factors: dict[str, float],
        partitions: _Partitions | None = None,
    ) -> PriorityBasis:
        cfg = _Config.of(config)
        parts = partitions if partitions is not None else _partitions(cluster)
        return cls(
            config=config,
            cfg=cfg,
            parts=parts,
            basis=_Basis.of(cluster, accounts, cfg),
            fs_factors=fs_factors,
            part_factor=_normalise(parts.job_factor, cfg.raw("PART")).tolist(),
            n_nodes=len(cluster.nodes),
            n_cpus=float(sum(nd.cpus for nd in cluster.nodes)),
        )


def job_priority(job: Job, b: PriorityBasis, now: float) -> tuple[float, int]:
    """(priority, partition tier) of one job: compute_priorities' total and
    tier for it."""
    row = _profile_row(_profile_key(job), b.parts, b.basis, b.fs_factors)
    pidx, _, _, _, site, nice, ovr, held, _ = row
    factors, tres = _factors(job, row, b, now)
    w = b.cfg.weights
    raw = float(site) - float(nice)
    for k in FACTORS:
        if w[k]:
            raw = raw + w[k] * factors[k]
    for t, f in tres.items():
        raw = raw + b.cfg.tres_weights[t] * f
    total = _clip(_floor(raw), 1.0, float(MAX_PRIORITY))
    if not math.isnan(ovr):
        total = _clip(float(ovr), 0.0, float(MAX_PRIORITY))
    if held:
        total = 0.0
    return total, int(b.parts.tier[pidx])


def job_factors(
    job: Job, b: PriorityBasis, now: float
) -> tuple[dict[str, float], dict[str, float]]:
    """The job's unweighted factors and TRES factors, as compute_priorities
    reports them (PriorityResult.factors, tres_factors: 0 where unweighted)."""
    return _factors(job, _profile_row(_profile_key(job), b.parts, b.basis, b.fs_factors), b, now)


def _factors(
    job: Job, row: tuple[Any, ...], b: PriorityBasis, now: float
) -> tuple[dict[str, float], dict[str, float]]:
    pidx, qos, assoc, fs, _, _, _, _, begin = row
    w = b.cfg.weights
    factors = dict.fromkeys(FACTORS, 0.0)
    if w["age"]:
        factors["age"] = _age(job, float(begin), float(now), b.config.max_age)
    if w["partition"]:
        factors["partition"] = b.part_factor[pidx]
    for k, v in (("qos", qos), ("assoc", assoc), ("fairshare", fs)):
        if w[k]:
            factors[k] = float(v)
    tres: dict[str, float] = {}
    if b.cfg.need_shape:
        factors["job_size"], tres = _size_and_tres(job, pidx, b)
    return factors, tres


def _age(job: Job, begin: float, now: float, max_age: float) -> float:
    """priority._age for one job (eligible time, else submit)."""
    start = float(job.submit) if job.eligible is None else float(job.eligible)
    if math.isnan(start):  # a nan eligible time falls back to submit, as np.where
        start = float(job.submit)
    wait = now - start
    waiting = wait >= 0 and not begin > now
    if max_age <= 0:
        return 1.0 if waiting else 0.0
    return min(wait, float(max_age)) / float(max_age) if waiting else 0.0


def _size_and_tres(job: Job, pidx: int, b: PriorityBasis) -> tuple[float, dict[str, float]]:
    """priority._size_and_tres for one job."""
    cfg, parts = b.cfg, b.parts
    nodes_i, gpus_i, cpus_i, mem_i, time_s, gpu_type = request_amounts(job.request)
    nodes, gpus, cpus, mem = float(nodes_i), float(gpus_i), float(cpus_i), float(mem_i)
    size = 0.0
    if cfg.weights["job_size"]:
        if math.isnan(time_s):
            time_s = float(parts.default_time[pidx])
        if math.isnan(time_s):
            time_s = float(parts.max_time[pidx])
        size = _job_size(nodes, cpus, time_s, b)
    amounts = {"cpu": cpus, "mem": mem, "node": nodes, "gres/gpu": gpus}
    totals = {"cpu": parts.cpus, "mem": parts.mems, "node": parts.nodes, "gres/gpu": parts.gpus}
    raw = cfg.raw("TRES")
    tres = {}
    for name in cfg.tres_weights:
        key = name.lower()
        if key in amounts:
            amount, have = amounts[key], float(totals[key][pidx])
        elif key.startswith("gres/gpu:"):
            typ = key.split(":", 1)[1]
            amount = gpus if gpu_type == typ else 0.0
            have = float(parts.gpus_by_type[pidx].get(typ, 0))
        else:
            tres[name] = 0.0
            continue
        if raw:
            tres[name] = amount
        else:
            tres[name] = _clip(amount / (have if have > 0 else 1.0), 0.0, 1.0) if have > 0 else 0.0
    return size, tres


def _job_size(nodes: float, cpus: float, time_s: float, b: PriorityBasis) -> float:
    """priority._job_size for one job."""
    n_nodes, n_cpus, config = b.n_nodes, b.n_cpus, b.config
    if n_nodes == 0 or n_cpus <= 0:
        return 0.0
    if "SMALL_RELATIVE_TO_TIME" in b.cfg.flags:
        size = _maximum(nodes * n_cpus / n_nodes, cpus)
        minutes = _maximum(1.0, _ceil(time_s / 60.0))
        js = size / minutes / n_cpus
        js = 1.0 - js if config.favor_small else js
    else:
        node_part, cpu_part = nodes / n_nodes, cpus / n_cpus
        if config.favor_small:
            node_part, cpu_part = 1.0 - node_part, 1.0 - cpu_part
        js = (node_part + cpu_part) / 2.0 if cpus > 0 else node_part
    return _clip(js, 0.0, 1.0)


def _maximum(a: float, b: float) -> float:
    """np.maximum: nan if either is nan."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a >= b else b


def _clip(x: float, lo: float, hi: float) -> float:
    """np.clip: nan stays nan."""
    return x if math.isnan(x) else min(max(x, lo), hi)


def _floor(x: float) -> float:
    """np.floor: inf and nan stay as they are (math.floor raises)."""
    return float(math.floor(x)) if math.isfinite(x) else x


def _ceil(x: float) -> float:
    return float(math.ceil(x)) if math.isfinite(x) else x


__all__ = ["PriorityBasis", "job_factors", "job_priority"]
