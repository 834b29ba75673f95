"""Where the controller's cluster comes from: a file, slurm.conf, the demo, or this machine."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from tide.model import AccountTree, Cluster, Partition
from tide.model.quota import QuotaTree
from tide.model.sched_config import SchedulerConfig
from tide.model.service import PoolConfig
from tide.server.settings import Settings


@dataclass(slots=True)
class ClusterSource:
    cluster: Cluster
    config: SchedulerConfig
    accounts: AccountTree
    warnings: list[str] = field(default_factory=list)
    origin: str = ""
    quotas: QuotaTree | None = None  # Kueue-style quotas (cluster YAML `quotas:`)
    pools: PoolConfig | None = None  # serving pools that lend (cluster YAML `pools:`)


def load(settings: Settings) -> ClusterSource:
    if settings.demo:
        from tide.config.loader import bundled_cluster

        return _wrap(bundled_cluster("demo"), "bundled demo cluster")
    path = settings.cluster_file or settings.slurm_conf
    if settings.executor == "ray":
        return _ray(settings, path)
    if path is not None:
        from tide.config.loader import load_cluster

        return _wrap(load_cluster(path), str(path))
    return this_machine()


def _ray(settings: Settings, path: object) -> ClusterSource:
    """--executor ray: the Ray cluster's nodes, or a cluster file's bound to them."""
    from tide.exec.ray.cluster import bind_cluster, cluster_from_ray, ray_nodes
    from tide.exec.ray.executor import connect

    ray = connect(settings.ray_address)
    if path is None:
        cluster = cluster_from_ray(ray_nodes(ray))
        origin = f"Ray cluster at {settings.ray_address or 'auto'}"
        return ClusterSource(cluster, SchedulerConfig(), AccountTree(), [], origin)
    from tide.config.loader import load_cluster

    src = _wrap(load_cluster(path), f"{path} on the Ray cluster")  # type: ignore[arg-type]
    src.cluster = bind_cluster(src.cluster, ray_nodes(ray))
    return src


def this_machine() -> ClusterSource:
    """One node, this host (autodetected), in one default partition 'local'."""
    try:
        from tide.config.autodetect import local_node

        node = local_node()
    except ImportError:  # autodetect not available: a 1-CPU node named after the host
        from tide.model import Node

        node = Node(name=socket.gethostname().split(".")[0] or "localhost")
    node.partitions = ("local",)
    if not node.address:
        node.address = "127.0.0.1"
    cluster = Cluster(
        name=node.name,
        nodes=[node],
        partitions=[Partition("local", nodes=(node.name,), default=True)],
    )
    return ClusterSource(cluster, SchedulerConfig(), AccountTree(), [], "this machine")


def _wrap(loaded: object, origin: str) -> ClusterSource:
    return ClusterSource(
        cluster=loaded.cluster,  # type: ignore[attr-defined]
        config=loaded.config,  # type: ignore[attr-defined]
        accounts=loaded.accounts,  # type: ignore[attr-defined]
        warnings=list(loaded.warnings),  # type: ignore[attr-defined]
        origin=origin,
        quotas=getattr(loaded, "quotas", None),
        pools=getattr(loaded, "pools", None),
    )
