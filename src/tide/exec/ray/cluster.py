"""Ray nodes as tide nodes: names, resources, topology labels.

Each Ray node is one tide node. What tide needs comes from what `ray start`
was given on that machine:

| tide                | Ray                                                     |
| ---                 | ---                                                     |
| node name           | label `tide.node`, else the host name, else `ray-<id8>` |
| CPUs                | resource `CPU` (`--num-cpus`)                           |
| GPUs                | resource `GPU` (`--num-gpus`, autodetected by Ray)      |
| memory (MB)         | resource `memory` (`--memory`, bytes)                   |
| GPU type            | label `tide.gpu_type` (e.g. a100)                       |
| leaf switch         | label `tide.switch` (e.g. leaf3): topology/tree          |
| block               | label `tide.block` (e.g. nvl72-1): topology/block       |
| address             | the node's IP as Ray knows it (MASTER_ADDR)             |

Label values follow Ray's (Kubernetes') syntax: letters, digits, `-`, `_`,
`.`, at most 63 characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tide.model import Cluster, Gpu, Node, NodeState, Partition
from tide.model.cluster import Block, Switch, Topology, TopologyKind

LABEL_NODE = "tide.node"
LABEL_SWITCH = "tide.switch"
LABEL_BLOCK = "tide.block"
LABEL_GPU_TYPE = "tide.gpu_type"
PARTITION = "ray"  # the one partition of a cluster built from Ray alone
ABSENT = "ray: not in the Ray cluster"  # reason of a declared node Ray does not have
DIED = "ray: node died"  # reason of a node whose raylet went away


@dataclass(slots=True, frozen=True)
class RayNode:
    """One entry of ray.nodes(), reduced to what tide uses."""

    node_id: str
    alive: bool
    address: str
    hostname: str
    resources: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> RayNode:
        return cls(
            node_id=str(info.get("NodeID", "")),
            alive=bool(info.get("Alive")),
            address=str(info.get("NodeManagerAddress", "")),
            hostname=str(info.get("NodeManagerHostname", "")),
            resources={k: float(v) for k, v in (info.get("Resources") or {}).items()},
            labels={k: str(v) for k, v in (info.get("Labels") or {}).items()},
        )

    @property
    def is_head_only(self) -> bool:
        """A head started with --num-cpus=0 and no tide label runs no jobs."""
        return (
            "node:__internal_head__" in self.resources
            and not self.resources.get("CPU")
            and LABEL_NODE not in self.labels
        )


def ray_nodes(ray: Any) -> list[RayNode]:
    """Every node the Ray cluster knows (dead ones too: a restarted machine
    shows up twice, the old entry dead)."""
    return [RayNode.from_info(i) for i in ray.nodes()]


def node_names(nodes: Sequence[RayNode]) -> dict[str, RayNode]:
    """tide name -> the Ray node carrying it; a live node wins over a dead one
    of the same name (a machine that came back)."""
    hosts: dict[str, int] = {}
    for n in nodes:
        hosts[n.hostname] = hosts.get(n.hostname, 0) + (1 if n.alive else 0)
    out: dict[str, RayNode] = {}
    for n in nodes:
        if n.is_head_only:
            continue
        name = n.labels.get(LABEL_NODE) or ""
        if not name:  # host names only name a node when one Ray node runs per host
            name = n.hostname if hosts.get(n.hostname) == 1 else f"ray-{n.node_id[:8]}"
        if name not in out or (n.alive and not out[name].alive):
            out[name] = n
    return out


def tide_node(name: str, rn: RayNode) -> Node:
    cpus = max(1, int(rn.resources.get("CPU", 1)))
    gpu_type = rn.labels.get(LABEL_GPU_TYPE, "")
    return Node(
        name=name,
        cpus=cpus,
        cores_per_socket=cpus,
        real_memory=max(1, int(rn.resources.get("memory", 2**20) // 2**20)),
        gpus=[Gpu(i, gpu_type) for i in range(int(rn.resources.get("GPU", 0)))],
        partitions=(PARTITION,),
        address=rn.address,
        state=NodeState.IDLE if rn.alive else NodeState.DOWN,
        reason="" if rn.alive else DIED,
    )


def topology(named: dict[str, RayNode]) -> Topology:
    """Leaf switches from `tide.switch` (under one root), else blocks from `tide.block`."""
    groups: dict[str, dict[str, list[str]]] = {LABEL_SWITCH: {}, LABEL_BLOCK: {}}
    for name, rn in sorted(named.items()):
        for label, by in groups.items():
            if rn.labels.get(label):
                by.setdefault(rn.labels[label], []).append(name)
    leaves, blocks = groups[LABEL_SWITCH], groups[LABEL_BLOCK]
    if leaves:
        switches = [Switch(s, nodes=tuple(n)) for s, n in sorted(leaves.items())]
        switches.append(Switch("root", switches=tuple(sorted(leaves))))
        return Topology(kind=TopologyKind.TREE, switches=switches)
    if blocks:
        return Topology(
            kind=TopologyKind.BLOCK, blocks=[Block(b, tuple(n)) for b, n in sorted(blocks.items())]
        )
    return Topology()


def cluster_from_ray(nodes: Sequence[RayNode], name: str = "ray") -> Cluster:
    """A tide cluster of the Ray cluster's nodes, in one default partition 'ray'."""
    named = node_names(nodes)
    if not named:
        raise RuntimeError(
            "the Ray cluster has no node that can run jobs (the head has no CPUs); "
            "add one with: ray start --address HEAD:6379 --labels tide.node=gpu01"
        )
    tide_nodes = [tide_node(n, rn) for n, rn in sorted(named.items())]
    return Cluster(
        name=name,
        nodes=tide_nodes,
        partitions=[Partition(PARTITION, nodes=tuple(n.name for n in tide_nodes), default=True)],
        topology=topology({n: rn for n, rn in named.items() if rn.alive}),
    )


def bind_cluster(cluster: Cluster, nodes: Iterable[RayNode]) -> Cluster:
    """A cluster file's nodes on the Ray cluster: each takes its Ray node's
    address; a node Ray does not have (yet) starts DOWN and becomes usable when
    it joins. The file keeps the last word on resources and topology."""
    named = node_names(list(nodes))
    out = []
    for n in cluster.nodes:
        rn = named.get(n.name)
        if rn is not None and rn.alive:
            out.append(replace(n, address=rn.address))
        elif n.state == NodeState.IDLE:
            out.append(replace(n, state=NodeState.DOWN, reason=ABSENT))
        else:
            out.append(n)
    return replace(cluster, nodes=out)
