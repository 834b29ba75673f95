"""Multifactor job priority, as Slurm's priority/multifactor computes it.

https://slurm.schedmd.com/priority_multifactor.html:

    Job_priority = site_factor
                 + PriorityWeightAge       * age_factor
                 + PriorityWeightAssoc     * assoc_factor
                 + PriorityWeightFairshare * fair-share_factor
                 + PriorityWeightJobSize   * job_size_factor
                 + PriorityWeightPartition * partition_factor
                 + PriorityWeightQOS       * QOS_factor
                 + SUM(PriorityWeightTRES[t] * TRES_factor[t])
                 - nice

Every factor is in [0, 1] (a NO_NORMAL_* flag lifts that for its factor); a
factor whose weight is 0 is not computed. Like Slurm the result is an integer,
truncated and kept in [1, 2**32 - 1]; a held job has priority 0 and an
operator-set priority is used as is. The partition's PriorityTier is not part of
the number: jobs are ordered by tier first (`sort_key`, `PriorityResult.order`).
docs/priority.md has every formula.

Speed: each job's attributes are read once, into per-job arrays (id, times) and
two small keys (partition/QOS/association/nice..., and request shape); the work
per distinct key is done once and spread back with numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tide.model import AccountTree, Cluster, Job, JobRequest, Partition
from tide.model.sched_config import SchedulerConfig
from tide.sched.fairshare import assoc_key

MAX_PRIORITY = 2**32 - 1  # Slurm's priority is an unsigned 32-bit integer
FACTORS = ("age", "assoc", "fairshare", "job_size", "partition", "qos")


@dataclass(slots=True, frozen=True)
class PriorityBreakdown:
    """One `sprio` line: every component already multiplied by its weight."""

    job_id: int
    total: float
    site: float
    age: float
    assoc: float
    fairshare: float
    job_size: float
    partition: float
    qos: float
    tres: dict[str, float]
    nice: float  # subtracted from the sum
    override: bool = False  # operator-set priority: the components are not used


@dataclass(slots=True)
class PriorityResult:
    """Priorities aligned with the input jobs, plus what `sprio` shows."""

    job_ids: np.ndarray  # int64
    total: np.ndarray  # float64 holding integers
    tier: np.ndarray  # int64: PriorityTier of the job's partition
    submit: np.ndarray  # float64
    factors: dict[str, np.ndarray]  # unweighted, keys FACTORS
    tres_factors: dict[str, np.ndarray]  # unweighted, by TRES name as configured
    weights: dict[str, float]  # by FACTORS key
    tres_weights: dict[str, float]
    site: np.ndarray
    nice: np.ndarray
    override: np.ndarray  # bool

    def breakdown(self, i: int) -> PriorityBreakdown:
        ovr = bool(self.override[i])

        def w(weight: float, factor: np.ndarray) -> float:
            return 0.0 if ovr else weight * float(factor[i])

        return PriorityBreakdown(
            job_id=int(self.job_ids[i]),
            total=float(self.total[i]),
            site=0.0 if ovr else float(self.site[i]),
            tres={t: w(self.tres_weights[t], f) for t, f in self.tres_factors.items()},
            nice=0.0 if ovr else float(self.nice[i]),
            override=ovr,
            **{k: w(self.weights[k], self.factors[k]) for k in FACTORS},
        )

    def sort_key(self, i: int) -> tuple[int, float, float, int]:
        return sort_key(
            int(self.tier[i]), float(self.total[i]), float(self.submit[i]), int(self.job_ids[i])
        )

    def order(self) -> np.ndarray:
        """Job indices in the order Slurm evaluates them (see `sort_key`)."""
        return priority_order(self.tier, self.total, self.submit, self.job_ids)


def priority_order(
    tier: np.ndarray, total: np.ndarray, submit: np.ndarray, job_ids: np.ndarray
) -> np.ndarray:
    """Indices in the order Slurm evaluates jobs (see `sort_key`)."""
    return np.lexsort((job_ids, submit, order_tops(tier, total)))


def order_tops(tier: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Tier and priority folded into one int64 key, ascending in evaluation
    order (tiers are small ints); `priority_order` sorts by it first."""
    return (-tier).astype(np.int64) * 2**33 + (MAX_PRIORITY - total).astype(np.int64)


def order_top(tier: int, total: float) -> int:
    """`order_tops` of one job, without numpy: a priority is in [0,
    MAX_PRIORITY], where int() truncates as astype(int64) does."""
    return -tier * 2**33 + int(MAX_PRIORITY - total)


def sort_key(
    tier: int, priority: float, submit: float, job_id: int
) -> tuple[int, float, float, int]:
    """Ascending key for Slurm's evaluation order (priority_multifactor.html,
    Introduction): higher partition PriorityTier, then higher priority, then
    earlier submit, then lower job id. (Preemptors and jobs in reservations,
    which Slurm takes first, are the scheduler's business.)"""
    return (-tier, -priority, submit, job_id)


def compute_priorities(
    jobs: list[Job],
    cluster: Cluster,
    config: SchedulerConfig,
    accounts: AccountTree,
    fs_factors: dict[str, float],
    now: float,
    partitions: _Partitions | None = None,
) -> PriorityResult:
    """Multifactor priority of every job (pending jobs, normally).

    `fs_factors` maps "account/user" to the fair-share factor
    (fairshare.fair_tree_factors); a missing association counts as 0.
    `partitions` is `partition_table(cluster)`, for callers that cycle often
    on the same cluster (it only depends on the cluster description).
    """
    cfg = _Config.of(config)
    parts = partitions if partitions is not None else _partitions(cluster)
    g = _gather(jobs, cfg)
    prof = _profiles(g.profiles, parts, cluster, accounts, fs_factors, cfg)
    pidx = prof.partition[g.profile_idx]
    per_job = {k: getattr(prof, k)[g.profile_idx] for k in ("site", "nice", "override", "held")}

    factors = {k: np.zeros(len(jobs)) for k in FACTORS}
    if cfg.weights["age"]:
        begin = prof.begin[g.profile_idx]
        factors["age"] = _age(g.submit, g.eligible, begin, now, config.max_age)
    if cfg.weights["partition"]:
        factors["partition"] = _normalise(parts.job_factor, cfg.raw("PART"))[pidx]
    for k in ("qos", "assoc", "fairshare"):
        if cfg.weights[k]:
            factors[k] = getattr(prof, k)[g.profile_idx]
    tres: dict[str, np.ndarray] = {}
    if cfg.need_shape:
        factors["job_size"], tres = _size_and_tres(g, pidx, parts, cluster, config, cfg)

    total = _combine(factors, tres, per_job, cfg)
    return PriorityResult(
        job_ids=g.ids,
        total=total,
        tier=parts.tier[pidx],
        submit=g.submit,
        factors=factors,
        tres_factors=tres,
        weights=cfg.weights,
        tres_weights=cfg.tres_weights,
        site=per_job["site"],
        nice=per_job["nice"],
        override=~np.isnan(per_job["override"]),
    )


@dataclass(slots=True)
class _Config:
    """The parts of SchedulerConfig priority reads, normalised."""

    weights: dict[str, float]
    tres_weights: dict[str, float]
    flags: set[str]
    need_shape: bool  # job size or TRES factors are on
    extras: bool  # memory, time limit or GPU type matter too

    @classmethod
    def of(cls, config: SchedulerConfig) -> _Config:
        w = config.weights
        weights = {
            "age": w.age,
            "assoc": w.assoc,
            "fairshare": w.fairshare,
            "job_size": w.job_size,
            "partition": w.partition,
            "qos": w.qos,
        }
        tres = {k: float(v) for k, v in w.tres.items() if v}
        flags = {f.upper() for f in config.priority_flags}
        extras = "SMALL_RELATIVE_TO_TIME" in flags or any(
            t.lower() == "mem" or ":" in t for t in tres
        )
        return cls(
            weights={k: float(v) for k, v in weights.items()},
            tres_weights=tres,
            flags=flags,
            need_shape=bool(w.job_size or tres),
            extras=extras,
        )

    def raw(self, what: str) -> bool:
        """PriorityFlags=NO_NORMAL_<what> or NO_NORMAL_ALL."""
        return "NO_NORMAL_ALL" in self.flags or f"NO_NORMAL_{what}" in self.flags


def _combine(
    factors: dict[str, np.ndarray],
    tres: dict[str, np.ndarray],
    per_job: dict[str, np.ndarray],
    cfg: _Config,
) -> np.ndarray:
    """The weighted sum, truncated to Slurm's integer range; then operator
    overrides, then holds (priority 0)."""
    raw = per_job["site"] - per_job["nice"]
    for k in FACTORS:
        if cfg.weights[k]:
            raw = raw + cfg.weights[k] * factors[k]
    for t, f in tres.items():
        raw = raw + cfg.tres_weights[t] * f
    total = np.clip(np.floor(raw), 1, MAX_PRIORITY)
    ovr = per_job["override"]
    if not np.isnan(ovr).all():  # (most cycles have none: nan_to_num costs)
        total = np.where(np.isnan(ovr), total, np.clip(np.nan_to_num(ovr), 0, MAX_PRIORITY))
    held = per_job["held"]
    return np.where(held, 0.0, total) if held.any() else total


# --- factors ------------------------------------------------------------------


def _age(
    submit: np.ndarray, eligible: np.ndarray, begin: np.ndarray, now: float, max_age: float
) -> np.ndarray:
    """min(now - eligible, PriorityMaxAge) / PriorityMaxAge; eligible falls back
    to submit; 0 before that time or before --begin. PriorityMaxAge=0 makes
    every eligible job 1.0 (Slurm: any wait has reached the cap)."""
    start = np.where(np.isnan(eligible), submit, eligible)
    wait = now - start
    waiting = (wait >= 0) & ~(begin > now)  # nan begin compares False
    if max_age <= 0:
        return np.where(waiting, 1.0, 0.0)
    return np.where(waiting, np.minimum(wait, max_age) / max_age, 0.0)


def _size_and_tres(
    g: _Gathered,
    pidx: np.ndarray,
    parts: _Partitions,
    cluster: Cluster,
    config: SchedulerConfig,
    cfg: _Config,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    shp = _shape_arrays(g.shapes)
    nodes, gpus, cpus, mem, time_s, gpu_type = (
        shp[k][g.shape_idx] for k in ("nodes", "gpus", "cpus", "mem", "time", "gpu_type")
    )
    size = np.zeros(len(pidx))
    if cfg.weights["job_size"]:
        time_s = np.where(np.isnan(time_s), parts.default_time[pidx], time_s)
        time_s = np.where(np.isnan(time_s), parts.max_time[pidx], time_s)
        relative = "SMALL_RELATIVE_TO_TIME" in cfg.flags
        size = _job_size(nodes, cpus, time_s, cluster, config.favor_small, relative)
    amounts = {"cpu": cpus, "mem": mem, "node": nodes, "gres/gpu": gpus}
    tres = {
        t: _tres_factor(t, amounts, gpu_type, parts, pidx, cfg.raw("TRES"))
        for t in cfg.tres_weights
    }
    return size, tres


def _job_size(
    nodes: np.ndarray,
    cpus: np.ndarray,
    time_s: np.ndarray,
    cluster: Cluster,
    favor_small: bool,
    relative_to_time: bool,
) -> np.ndarray:
    """Slurm's job size factor: the mean of the job's share of the cluster's
    nodes and of its CPUs (PriorityFavorSmall: of what it leaves free); with
    SMALL_RELATIVE_TO_TIME, max(its CPUs, its nodes' average CPUs) per minute of
    time limit over the cluster's CPUs (no time limit: 0)."""
    n_nodes = len(cluster.nodes)
    n_cpus = float(sum(nd.cpus for nd in cluster.nodes))
    if n_nodes == 0 or n_cpus <= 0:
        return np.zeros(len(nodes))
    if relative_to_time:
        size = np.maximum(nodes * n_cpus / n_nodes, cpus)
        minutes = np.maximum(1.0, np.ceil(time_s / 60.0))
        js = size / minutes / n_cpus
        js = 1.0 - js if favor_small else js
    else:
        node_part, cpu_part = nodes / n_nodes, cpus / n_cpus
        if favor_small:
            node_part, cpu_part = 1.0 - node_part, 1.0 - cpu_part
        js = np.where(cpus > 0, (node_part + cpu_part) / 2.0, node_part)
    return np.clip(js, 0.0, 1.0)


def _normalise(values: np.ndarray, raw: bool) -> np.ndarray:
    """value / max(values), 0 when the max is 0; `raw` (NO_NORMAL_*): as is."""
    if raw:
        return values.astype(np.float64)
    top = float(values.max()) if len(values) else 0.0
    return values / top if top > 0 else np.zeros(len(values))


def _tres_factor(
    name: str,
    amounts: dict[str, np.ndarray],
    gpu_type: np.ndarray,
    parts: _Partitions,
    pidx: np.ndarray,
    raw: bool,
) -> np.ndarray:
    """Requested amount of one TRES over the partition's amount of it. Names:
    cpu, mem (MB), node, gres/gpu, gres/gpu:TYPE (case-insensitive); an
    unknown name gives 0."""
    key = name.lower()
    totals = {"cpu": parts.cpus, "mem": parts.mems, "node": parts.nodes, "gres/gpu": parts.gpus}
    if key in amounts:
        amount, total = amounts[key], totals[key]
    elif key.startswith("gres/gpu:"):
        typ = key.split(":", 1)[1]
        amount = np.where(gpu_type == typ, amounts["gres/gpu"], 0.0)
        total = np.asarray([t.get(typ, 0) for t in parts.gpus_by_type], dtype=np.float64)
    else:
        return np.zeros(len(pidx))
    if raw:
        return amount.astype(np.float64)
    have = total[pidx]
    return np.where(have > 0, np.clip(amount / np.where(have > 0, have, 1.0), 0.0, 1.0), 0.0)


# --- gathering per-job inputs -------------------------------------------------


@dataclass(slots=True)
class _Gathered:
    ids: np.ndarray
    submit: np.ndarray
    eligible: np.ndarray  # nan = never marked eligible
    profiles: list[tuple[Any, ...]]  # distinct profile keys (see _gather)
    profile_idx: np.ndarray
    shapes: list[JobRequest]  # one request per distinct shape key
    shape_idx: np.ndarray


def _gather(jobs: list[Job], cfg: _Config) -> _Gathered:
    """Read each job once: id and times into arrays; partition, QOS, account,
    user, hold, override, site factor, nice and begin into a profile key; the
    request fields the size and TRES factors use into a shape key."""
    n = len(jobs)
    nan = math.nan
    ids = np.fromiter([j.id for j in jobs], np.int64, n)
    submit = np.fromiter([j.submit for j in jobs], np.float64, n)
    eligible = np.full(n, nan)
    if cfg.weights["age"]:
        eligible = np.fromiter([nan if (e := j.eligible) is None else e for j in jobs], float, n)
    profiles, profile_idx = _codes([_profile_key(j) for j in jobs])
    if not cfg.need_shape:
        return _Gathered(ids, submit, eligible, profiles, profile_idx, [], np.zeros(n, np.int64))
    keys: list[tuple[Any, ...]]
    if cfg.extras:
        keys = [
            (
                (r := j.request).nodes_min,
                r.nodes_max,
                r.ntasks,
                r.ntasks_per_node,
                r.gpus,
                r.gpus_per_node,
                r.gpus_per_task,
                r.cpus_per_task,
                r.cpus_per_gpu,
                r.mem_per_node,
                r.mem_per_gpu,
                r.mem_per_cpu,
                r.time_limit,
                r.gpu_type,
            )
            for j in jobs
        ]
    else:  # all that nodes, GPUs and CPUs depend on
        keys = [
            (
                (r := j.request).nodes_min,
                r.nodes_max,
                r.ntasks,
                r.ntasks_per_node,
                r.gpus,
                r.gpus_per_node,
                r.gpus_per_task,
                r.cpus_per_task,
                r.cpus_per_gpu,
            )
            for j in jobs
        ]
    distinct, shape_idx = _codes(keys)
    first: dict[tuple[Any, ...], JobRequest] = {}
    for k, j in zip(keys, jobs, strict=True):
        first.setdefault(k, j.request)
        if len(first) == len(distinct):
            break
    return _Gathered(
        ids, submit, eligible, profiles, profile_idx, [first[k] for k in distinct], shape_idx
    )


def _codes(keys: list[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], np.ndarray]:
    """Distinct keys in first-seen order, and each key's index among them."""
    index: dict[tuple[Any, ...], int] = {}
    codes = [index.setdefault(k, len(index)) for k in keys]
    return list(index), np.fromiter(codes, np.int64, len(codes))


# --- per distinct profile -----------------------------------------------------


@dataclass(slots=True)
class _Profiles:
    partition: np.ndarray  # row in _Partitions
    qos: np.ndarray  # QOS factor
    assoc: np.ndarray  # association factor
    fairshare: np.ndarray
    site: np.ndarray
    nice: np.ndarray
    override: np.ndarray  # nan = none
    held: np.ndarray
    begin: np.ndarray  # nan = none


def _profiles(
    keys: list[tuple[Any, ...]],
    parts: _Partitions,
    cluster: Cluster,
    accounts: AccountTree,
    fs_factors: dict[str, float],
    cfg: _Config,
) -> _Profiles:
    basis = _Basis.of(cluster, accounts, cfg)
    rows = [_profile_row(key, parts, basis, fs_factors) for key in keys]
    cols = list(zip(*rows, strict=True)) if rows else [()] * 9

    def f(i: int) -> np.ndarray:
        return np.asarray(cols[i], dtype=np.float64)

    return _Profiles(
        partition=np.asarray(cols[0], dtype=np.int64),
        qos=f(1),
        assoc=f(2),
        fairshare=f(3),
        site=f(4),
        nice=f(5),
        override=f(6),
        held=np.asarray(cols[7], dtype=bool),
        begin=f(8),
    )


@dataclass(slots=True)
class _Basis:
    """What the profile rows read of the cluster and the accounts."""

    default_name: str
    qos_prio: dict[str, int]
    qos_top: float
    assoc_prio: dict[tuple[str, str], int]
    assoc_top: float

    @classmethod
    def of(cls, cluster: Cluster, accounts: AccountTree, cfg: _Config) -> _Basis:
        default = cluster.default_partition()
        qos_prio = {name: q.priority for name, q in accounts.qos.items()}
        assoc_prio = _assoc_priorities(accounts)
        return cls(
            default_name=default.name if default else "",
            qos_prio=qos_prio,
            qos_top=1.0 if cfg.raw("QOS") else max(qos_prio.values(), default=0),
            assoc_prio=assoc_prio,
            assoc_top=1.0 if cfg.raw("ASSOC") else max(assoc_prio.values(), default=0),
        )


def _profile_key(j: Job) -> tuple[Any, ...]:
    """What a job's profile row reads of it (see `_gather`)."""
    r = j.request
    return (j.partition or r.partitions, j.qos or r.qos, j.account or r.account, j.user,
            j.held, j.priority_override, j.site_factor, r.nice, r.priority, r.begin)  # fmt: skip


def _profile_row(
    key: tuple[Any, ...], parts: _Partitions, basis: _Basis, fs_factors: dict[str, float]
) -> tuple[Any, ...]:
    """(partition row, QOS, association and fair-share factors, site, nice,
    override or nan, held, begin or nan) of one profile key."""
    part, qos, acct, user, held, ovr, site, nice, rprio, begin = key
    if isinstance(part, tuple):  # job.partition unset: first requested, else default
        part = part[0] if part else basis.default_name
    acct = acct or ""
    fs = fs_factors.get(assoc_key(acct, user), 0.0)
    override = ovr if ovr is not None else rprio
    return (
        parts.index.get(part, parts.unknown),
        _ratio(basis.qos_prio.get(qos or "normal", 0), basis.qos_top),
        _ratio(basis.assoc_prio.get((acct, user), 0), basis.assoc_top),
        min(1.0, max(0.0, fs)),
        site,
        nice,
        math.nan if override is None else override,
        bool(held),
        math.nan if begin is None else begin,
    )


def _ratio(value: float, top: float) -> float:
    return value / top if top > 0 else 0.0


def _assoc_priorities(accounts: AccountTree) -> dict[tuple[str, str], int]:
    """(account, user) -> association Priority, inherited down the account tree
    when unset. Accounts are included under user "" (they count for the max)."""
    memo: dict[str, int] = {}

    def of_account(name: str) -> int:
        if name not in memo:
            memo[name] = 0  # also breaks parent cycles
            a = accounts.accounts.get(name)
            if a is not None and a.priority is not None:
                memo[name] = a.priority
            elif a is not None and a.parent is not None:
                memo[name] = of_account(a.parent)
        return memo[name]

    out = {(name, ""): of_account(name) for name in accounts.accounts}
    for u in accounts.users:
        prio = u.priority if u.priority is not None else of_account(u.account)
        out.setdefault((u.account, u.user), prio)
    return out


# --- per partition and per request shape ---------------------------------------


@dataclass(slots=True)
class _Partitions:
    """Per partition, plus a last row for an unknown name: PriorityTier,
    PriorityJobFactor, time limits and TRES totals."""

    index: dict[str, int]
    unknown: int
    tier: np.ndarray
    job_factor: np.ndarray
    default_time: np.ndarray  # seconds, nan = none
    max_time: np.ndarray  # seconds, inf = UNLIMITED
    nodes: np.ndarray
    cpus: np.ndarray
    mems: np.ndarray  # MB
    gpus: np.ndarray
    gpus_by_type: list[dict[str, int]]


def partition_table(cluster: Cluster) -> _Partitions:
    """Per-partition totals and factors the priority needs (cacheable)."""
    return _partitions(cluster)


def _partitions(cluster: Cluster) -> _Partitions:
    plist: list[Partition | None] = [*cluster.partitions, None]
    everything = list(range(len(cluster.nodes)))
    members = [_members(cluster, p) if p else everything for p in plist]
    nd = cluster.nodes
    by_type: list[dict[str, int]] = []
    for m in members:
        counts: dict[str, int] = {}
        for g in (g for i in m for g in nd[i].gpus):
            counts[g.type.lower()] = counts.get(g.type.lower(), 0) + 1
        by_type.append(counts)

    def total(per_node: list[float]) -> np.ndarray:
        return np.asarray([sum(per_node[i] for i in m) for m in members], dtype=np.float64)

    def opt(values: list[int | None], missing: float) -> np.ndarray:
        return np.asarray([missing if v is None else float(v) for v in values])

    return _Partitions(
        index={p.name: i for i, p in enumerate(cluster.partitions)},
        unknown=len(cluster.partitions),
        # an unknown partition sorts below every real tier and earns no factor
        tier=np.asarray([p.priority_tier if p else 0 for p in plist], dtype=np.int64),
        job_factor=np.asarray([p.priority_job_factor if p else 0 for p in plist], float),
        default_time=opt([p.default_time if p else None for p in plist], math.nan),
        max_time=opt([p.max_time if p else None for p in plist], math.inf),
        nodes=np.asarray([len(m) for m in members], dtype=np.float64),
        cpus=total([x.cpus for x in nd]),
        mems=total([x.real_memory for x in nd]),
        gpus=total([x.gpu_count for x in nd]),
        gpus_by_type=by_type,
    )


def _members(cluster: Cluster, p: Partition) -> list[int]:
    """Node indices of a partition: its Nodes= list plus the nodes that name it;
    a partition with neither spans the cluster."""
    names = set(p.nodes)
    out = [i for i, nd in enumerate(cluster.nodes) if nd.name in names or p.name in nd.partitions]
    return out or list(range(len(cluster.nodes)))


def _shape_arrays(reqs: list[JobRequest]) -> dict[str, np.ndarray]:
    """nodes, gpus, cpus, mem (MB), time (s, nan = unset) and GPU type per
    distinct request, from the model's own request arithmetic."""
    rows = [request_amounts(r) for r in reqs]
    cols = list(zip(*rows, strict=True)) if rows else [()] * 6
    names = ("nodes", "gpus", "cpus", "mem", "time")
    out = {k: np.asarray(c, dtype=np.float64) for k, c in zip(names, cols[:5], strict=True)}
    out["gpu_type"] = np.asarray(cols[5], dtype=object)
    return out


def request_amounts(r: JobRequest) -> tuple[int, int, int, int, float, str]:
    """(nodes, GPUs, CPUs, memory MB, time limit s or nan, GPU type) that the
    job size and TRES factors charge a request for: its minimum node count,
    the GPUs and CPUs on that many nodes (CPUs: --cpus-per-gpu x GPUs when
    given, else tasks x --cpus-per-task), memory from --mem, --mem-per-gpu or
    --mem-per-cpu (0 when none is given)."""
    nodes = r.node_range()[0]
    gpus = r.total_gpus(nodes)
    if r.cpus_per_gpu is not None and gpus:
        cpus = r.cpus_per_gpu * gpus
    else:
        cpus = r.task_count(nodes) * r.cpus_per_task
    if r.mem_per_node is not None:
        mem = r.mem_per_node * nodes
    elif r.mem_per_gpu is not None:
        mem = r.mem_per_gpu * gpus
    elif r.mem_per_cpu is not None:
        mem = r.mem_per_cpu * cpus
    else:
        mem = 0
    time = math.nan if r.time_limit is None else float(r.time_limit)
    return nodes, gpus, cpus, mem, time, r.gpu_type.lower()
