"""Scenarios of services and training together, and the four patterns of
seed 000 as configurations of one cluster (docs/services.md, "The twin").

Every pattern gets the same nodes, the same services with the same traffic,
the same training jobs and the same objective; only who may use which GPUs,
and how capacity changes hands, differ:

* `split` (pattern 2, Slurm for training and Kubernetes for services in
  separate pools): the serving nodes serve, the training nodes train,
  nothing is borrowed.
* `bridge` (pattern 3, slurm-bridge): whole serving nodes with no replica are
  lent to training for borrowed jobs up to `bridge_max_time` long; a node
  comes back only once those jobs have ended (drain), then after a switching
  gap.
* `tidal` (tide): single idle serving GPUs are lent after `lend_after` of
  measured idleness, minus `keep_idle`; a scale-up reclaims them by
  preempting the borrowers that lose least work, with a grace bounded by
  the reclaim objective; borrowers are requeued and resume from their last
  checkpoint.
* `unified` (pattern 1, Kubernetes-first): one pool; replicas (QOS serving)
  preempt any training job (QOS train) with Kubernetes' 30 s termination
  grace, lowest priority and youngest first, checkpoint or not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from tide.model import Account, AccountTree, Cluster, Gpu, JobRequest, Node, Partition, Qos
from tide.model.cluster import Switch, Topology, TopologyKind
from tide.model.sched_config import BackfillMode, PriorityWeights, SchedulerConfig
from tide.model.service import Autoscaling, Pool, PoolConfig, ServiceSpec
from tide.sim.serving.service_sim import ReplicaModel, Slo
from tide.sim.serving.trace import RequestTrace
from tide.sim.workload.base import SimJob

PATTERNS = ("split", "bridge", "tidal", "unified")
SERVING_ACCOUNT = "serving"
REPLICA_IDS = 10_000_000  # replica jobs get ids from here (training jobs stay below)


@dataclass(slots=True)
class ServiceDef:
    spec: ServiceSpec
    trace: RequestTrace
    model: ReplicaModel = field(default_factory=ReplicaModel)
    slo: Slo = field(default_factory=Slo)


@dataclass(slots=True)
class Lending:
    """The lending knobs of the patterns that lend."""

    lend_after: float = 900.0  # tidal and bridge: seconds of measured idleness
    keep_idle: int = 4  # tidal: GPUs never lent; bridge: empty nodes never lent
    reclaim_objective: float = 120.0  # tidal: scale-up decision -> replica ready
    margin: float = 10.0
    switch_gap: float = 300.0  # bridge: a node changing sides is unusable this long
    bridge_max_time: float = 4 * 3600.0  # bridge: only jobs this short may borrow
    unified_grace: int = 30  # unified: Kubernetes' terminationGracePeriodSeconds


@dataclass(slots=True)
class Scenario:
    """What every pattern shares."""

    name: str
    nodes: int
    gpus_per_node: int
    serving_nodes: int  # the first nodes: the serving pool where there is one
    services: list[ServiceDef]
    jobs: list[SimJob]  # training; original["borrow"] says whether it may borrow
    horizon: float  # seconds
    lending: Lending = field(default_factory=Lending)
    notes: list[str] = field(default_factory=list)
    leaf_size: int = 4  # nodes per leaf switch


@dataclass(slots=True)
class PatternSetup:
    """One pattern's cluster, configuration, policy and inputs."""

    pattern: str
    cluster: Cluster
    config: SchedulerConfig
    accounts: AccountTree
    pools: PoolConfig | None
    victim_order: str
    services: list[ServiceDef]
    jobs: list[SimJob]
    horizon: float
    service_partition: str


def cluster_of(sc: Scenario) -> Cluster:
    nodes = []
    for i in range(sc.nodes):
        gpus = [Gpu(index=g, type="a100", socket=g * 2 // sc.gpus_per_node)
                for g in range(sc.gpus_per_node)]  # fmt: skip
        nodes.append(Node(name=f"gpu{i + 1:03d}", cpus=64, sockets=2, cores_per_socket=32,
                          real_memory=1_000_000, gpus=gpus))  # fmt: skip
    names = [n.name for n in nodes]
    leaves = [Switch(f"leaf{k + 1}", nodes=tuple(names[j : j + sc.leaf_size]))
              for k, j in enumerate(range(0, len(names), sc.leaf_size))]  # fmt: skip
    spine = Switch("spine", switches=tuple(s.name for s in leaves))
    return Cluster(sc.name, nodes, [], Topology(TopologyKind.TREE, [*leaves, spine]))


def setup(sc: Scenario, pattern: str) -> PatternSetup:
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; choose from {', '.join(PATTERNS)}")
    cluster = cluster_of(sc)
    names = [n.name for n in cluster.nodes]
    serving, training = tuple(names[: sc.serving_nodes]), tuple(names[sc.serving_nodes :])
    lend = sc.lending
    config = SchedulerConfig(backfill=BackfillMode.EASY, bf_interval=60, bf_max_job_test=200)
    accounts = AccountTree(
        accounts={"root": Account("root", parent=None),
                  SERVING_ACCOUNT: Account(SERVING_ACCOUNT, parent="root"),
                  "train": Account("train", parent="root")},
        qos={"normal": Qos("normal"), "serving": Qos("serving", priority=1000)},
    )  # fmt: skip
    pools: PoolConfig | None = None
    victim_order = "lost_work"
    if pattern == "unified":
        cluster.partitions = [Partition("all", tuple(names), default=True)]
        accounts.qos["serving"] = Qos("serving", priority=1000, preempt=("train",))
        accounts.qos["train"] = Qos("train", preempt_mode="REQUEUE", grace_time=lend.unified_grace)
        # A PriorityClass orders Kubernetes' scheduling queue: replicas go first
        # (PriorityWeightQOS), else they would wait behind the training backlog
        # where no pass tests them, and never preempt anything.
        # Kubernetes' preemption is not checkpoint-aware: lowest priority, youngest
        # first (Slurm's order with preempt_youngest_first: the victims share a QOS),
        # and a preemptor does not wait KillWait + MessageTimeout to preempt again
        config = replace(config, preempt_type="preempt/qos", preempt_mode="REQUEUE",
                         weights=PriorityWeights(qos=100_000), preempt_youngest_first=True,
                         kill_wait=0, message_timeout=0)  # fmt: skip
        victim_order = "priority"
        part_of = _parts(("all",), ("all",))
        svc_partition = "all"
    else:
        cluster.partitions = [
            Partition("training", training, default=True),
            Partition("serving", serving, priority_tier=10),
        ]
        pool = Pool("serving", "serving", "", lend_after=lend.lend_after)
        if pattern in ("bridge", "tidal"):
            max_time = int(lend.bridge_max_time) if pattern == "bridge" else None
            cluster.partitions.append(Partition("lend", serving, max_time=max_time))
            startup = max((s.spec.startup for s in sc.services), default=30.0)
            pool = Pool(
                "serving", "serving", "lend",
                mode="node" if pattern == "bridge" else "gpu",
                lend_after=lend.lend_after,
                keep_idle=-(-lend.keep_idle // sc.gpus_per_node)  # whole nodes
                if pattern == "bridge" else lend.keep_idle,
                reclaim_objective=lend.reclaim_objective, startup=startup, margin=lend.margin,
                switch_gap=lend.switch_gap if pattern == "bridge" else 0.0,
            )  # fmt: skip
        pools = PoolConfig((pool,), victim_order)
        part_of = _parts(("training", "lend") if pattern != "split" else ("training",),
                         ("training",))  # fmt: skip
        svc_partition = "serving"
    for name in ("normal", "train"):
        accounts.qos.setdefault(name, Qos(name))
    bridge_limit = lend.bridge_max_time if pattern == "bridge" else math.inf
    jobs = [_for_pattern(j, part_of, pattern, bridge_limit) for j in sc.jobs]
    services = [replace(s, spec=_spec_for(s.spec, svc_partition)) for s in sc.services]
    return PatternSetup(pattern, cluster, config, accounts, pools, victim_order, services, jobs,
                        sc.horizon, svc_partition)  # fmt: skip


def _parts(borrowing: tuple[str, ...], plain: tuple[str, ...]):  # type: ignore[no-untyped-def]
    return {True: borrowing, False: plain}


def _for_pattern(j: SimJob, part_of: dict[bool, tuple[str, ...]], pattern: str,
                 bridge_limit: float) -> SimJob:  # fmt: skip
    borrow = bool(j.original.get("borrow"))
    limit = j.request.time_limit or 0
    if pattern == "bridge" and limit > bridge_limit:
        borrow = False  # too long to hand a node back in time: it stays home
    qos = "train" if pattern == "unified" else "normal"
    req = replace(j.request, partitions=part_of[borrow], qos=qos, account="train")
    return replace(j, request=req)


def _spec_for(spec: ServiceSpec, partition: str) -> ServiceSpec:
    out = replace(spec)
    out.partition, out.account, out.qos = partition, SERVING_ACCOUNT, "serving"
    return out


def replica_request(spec: ServiceSpec) -> JobRequest:
    return JobRequest(
        name=f"{spec.name}-replica", nodes_min=1, nodes_max=1, gpus_per_node=spec.gpus,
        partitions=(spec.partition,), account=SERVING_ACCOUNT, qos="serving", requeue=False,
    )  # fmt: skip


# --- training jobs ---------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class TrainingMix:
    """A stream of training jobs (documented in docs/services.md)."""

    load: float = 1.15  # offered GPU-hours / training-pool GPU-hours
    sizes: tuple[tuple[int, float], ...] = ((1, 0.2), (2, 0.2), (4, 0.25), (8, 0.25), (16, 0.1))
    median_hours: float = 2.0
    sigma: float = 1.0  # lognormal
    cap_hours: float = 24.0
    borrow_share: float = 0.7  # jobs that checkpoint and may borrow
    checkpoint_every: float = 1800.0
    checkpoint_cost: float = 60.0
    backlog: float = 1.5  # jobs queued at the start, in training-pool GPUs (a busy cluster)


def training_jobs(mix: TrainingMix, pool_gpus: int, horizon: float, seed: int) -> list[SimJob]:
    rng = np.random.default_rng(seed + 1)
    sizes = np.array([s for s, _ in mix.sizes])
    weights = np.array([w for _, w in mix.sizes])
    weights = weights / weights.sum()
    mean_h = min(mix.cap_hours, mix.median_hours * math.exp(mix.sigma**2 / 2))
    mean_gpu_hours = float((sizes * weights).sum()) * mean_h
    rate = mix.load * pool_gpus / mean_gpu_hours / 3600.0  # jobs per second
    n = int(rng.poisson(rate * horizon))
    submit = np.sort(rng.uniform(0, horizon, n))
    # a cluster that was busy before the run: a backlog submitted at t=0
    mean_gpus = float((sizes * weights).sum())
    n0 = round(mix.backlog * pool_gpus / mean_gpus)
    submit = np.concatenate([np.zeros(n0), submit])
    n += n0
    gpus = rng.choice(sizes, n, p=weights)
    hours = np.minimum(rng.lognormal(math.log(mix.median_hours), mix.sigma, n), mix.cap_hours)
    borrow = rng.random(n) < mix.borrow_share
    jobs = []
    for i in range(n):
        g = int(gpus[i])
        nodes, per = (1, g) if g <= 8 else (g // 8, 8)
        dur = max(60.0, float(hours[i]) * 3600.0)
        limit = int(math.ceil(dur * 1.3 / 600.0) * 600)
        req = JobRequest(name="train", nodes_min=nodes, nodes_max=nodes, gpus_per_node=per,
                         time_limit=limit, requeue=True)  # fmt: skip
        ck = mix.checkpoint_every if borrow[i] else None
        jobs.append(SimJob(id=i + 1, submit=float(submit[i]), duration=dur, request=req,
                           user=f"u{i % 7}", account="train", checkpoint_interval=ck,
                           checkpoint_cost=mix.checkpoint_cost if ck else 0.0,
                           original={"borrow": bool(borrow[i])}))  # fmt: skip
    return jobs


def service_spec(name: str, gpus: int, max_replicas: int, target: float, startup: float,
                 down_window: float = 300.0, min_replicas: int = 1) -> ServiceSpec:  # fmt: skip
    auto = Autoscaling(min_replicas=min_replicas, max_replicas=max_replicas,
                       target_inflight=target, period=10.0, down_window=down_window)  # fmt: skip
    return ServiceSpec(name=name, command="(simulated)", gpus=gpus, autoscaling=auto,
                       startup=startup, buffer_timeout=30.0)  # fmt: skip
