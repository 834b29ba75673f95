"""Fluent builders for tests (Kueue-style): short, readable scenarios.

cluster = tree_cluster(leaves=[3, 4], gpus=8)        # 2 leaves under one spine
j = job(1, nodes=3, gpus_per_node=8, time=3600)
"""

from __future__ import annotations

from tide.model import (
    Cluster,
    Gpu,
    Job,
    JobRequest,
    Node,
    Partition,
    Switch,
    Topology,
    TopologyKind,
)
from tide.model.sched_config import BackfillMode, SchedulerConfig
from tide.sched.types import Allocation, Decisions, NodeAlloc, Running, Snapshot

NVLINK_PAIRS_8 = [
    [
        -1 if i == j else (2 if i // 2 == j // 2 else (1 if i // 4 == j // 4 else 0))
        for j in range(8)
    ]
    for i in range(8)
]


def gpu_node(
    name: str,
    gpus: int = 8,
    sockets: int = 2,
    cores_per_socket: int = 16,
    mem: int = 512_000,
    gpu_type: str = "a100",
    links: list[list[int]] | None = None,
    features: tuple[str, ...] = (),
) -> Node:
    per_socket = max(1, gpus // sockets)
    gpu_list = []
    for i in range(gpus):
        sock = min(i // per_socket, sockets - 1)
        cores = tuple(range(sock * cores_per_socket, (sock + 1) * cores_per_socket))
        gpu_list.append(Gpu(index=i, type=gpu_type, socket=sock, cores=cores))
    return Node(
        name=name,
        cpus=sockets * cores_per_socket,
        sockets=sockets,
        cores_per_socket=cores_per_socket,
        real_memory=mem,
        gpus=gpu_list,
        links=links if links is not None else (NVLINK_PAIRS_8 if gpus == 8 else []),
        features=features,
        partitions=("gpu",),
    )


def tree_cluster(leaves: list[int], gpus: int = 8, spines: int = 1, **node_kw: object) -> Cluster:
    """Leaves of the given sizes, spread evenly under `spines` spines and one core."""
    nodes, switches, leaf_names = [], [], []
    k = 0
    for li, size in enumerate(leaves):
        names = []
        for _ in range(size):
            k += 1
            names.append(f"gpu{k:03d}")
            nodes.append(gpu_node(f"gpu{k:03d}", gpus=gpus, **node_kw))  # type: ignore[arg-type]
        switches.append(Switch(name=f"leaf{li + 1}", nodes=tuple(names)))
        leaf_names.append(f"leaf{li + 1}")
    per = -(-len(leaf_names) // spines)
    spine_names = []
    for s in range(spines):
        kids = tuple(leaf_names[s * per : (s + 1) * per])
        if kids:
            switches.append(Switch(name=f"spine{s + 1}", switches=kids))
            spine_names.append(f"spine{s + 1}")
    if spines > 1:
        switches.append(Switch(name="core", switches=tuple(spine_names)))
    part = Partition(name="gpu", nodes=tuple(n.name for n in nodes), default=True)
    return Cluster(
        name="test",
        nodes=nodes,
        partitions=[part],
        topology=Topology(kind=TopologyKind.TREE, switches=switches),
    )


def flat_cluster(n: int, gpus: int = 8, **node_kw: object) -> Cluster:
    nodes = [gpu_node(f"n{i + 1:03d}", gpus=gpus, **node_kw) for i in range(n)]  # type: ignore[arg-type]
    part = Partition(name="gpu", nodes=tuple(x.name for x in nodes), default=True)
    return Cluster(name="flat", nodes=nodes, partitions=[part])


def job(
    job_id: int,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    gpus: int | None = None,
    time: int = 3600,
    submit: float = 0.0,
    user: str = "alice",
    account: str = "root",
    **req_kw: object,
) -> Job:
    req = JobRequest(
        name=f"job{job_id}",
        nodes_min=nodes,
        nodes_max=nodes,
        gpus_per_node=gpus_per_node,
        gpus=gpus,
        time_limit=time,
        **req_kw,  # type: ignore[arg-type]
    )
    return Job(id=job_id, request=req, user=user, account=account, submit=submit)


def running(
    j: Job, cluster: Cluster, placement: dict[str, tuple[int, ...]], start: float, cores: int = 1
) -> Running:
    """A running job holding the given GPU indices per node name."""
    pos = {n.name: i for i, n in enumerate(cluster.nodes)}
    nas = []
    offset = 0
    for name, idx in placement.items():
        node = cluster.nodes[pos[name]]
        core_ids = tuple(range(offset, offset + cores)) if cores else ()
        del node
        nas.append(NodeAlloc(pos[name], tuple(idx), core_ids, 0))
    limit = j.request.time_limit or 3600
    return Running(job=j, alloc=Allocation(j.id, tuple(nas)), start=start, end=start + limit)


def snapshot(
    cluster: Cluster,
    pending: list[Job],
    now: float = 0.0,
    running_jobs: list[Running] | None = None,
    backfill: BackfillMode = BackfillMode.CONSERVATIVE,
    **kw: object,
) -> Snapshot:
    cfg = SchedulerConfig(backfill=backfill, bf_resolution=1)
    for key, value in kw.items():
        setattr(cfg, key, value)
    return Snapshot(
        cluster=cluster, config=cfg, now=now, pending=pending, running=running_jobs or []
    )


def decide(snap: Snapshot, policy: str = "tide", **tide_options: object) -> Decisions:
    """One cycle's decisions on `snap`: of the named policy, or of a TidePolicy
    built with `tide_options`; the running jobs' resources allocated first."""
    from tide.sched.index import build_index
    from tide.sched.policies import make_policy
    from tide.sched.policies.tide_policy import TidePolicy
    from tide.sched.state import Usage

    ix = build_index(snap.cluster)
    usage = Usage.empty(ix)
    for r in snap.running:
        usage.allocate(r.alloc)
    if tide_options:
        return TidePolicy(ix, **tide_options).schedule(snap, usage)  # type: ignore[arg-type]
    return make_policy(policy, ix).schedule(snap, usage)
