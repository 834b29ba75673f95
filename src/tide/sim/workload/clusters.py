"""Clusters the generator presets build in code (the bundled YAML clusters,
"demo" and "seed004", live in tide/data/clusters and are read elsewhere)."""

from __future__ import annotations

from tide.model import Cluster, Gpu, Node, Partition, Switch, Topology, TopologyKind


def tree_cluster(
    name: str,
    nodes: int,
    gpus_per_node: int = 8,
    nodes_per_leaf: int = 32,
    gpu_type: str = "a100",
    cpus: int = 64,
    memory_mb: int = 1_024_000,
) -> Cluster:
    """`nodes` identical two-socket GPU nodes under leaf switches of
    `nodes_per_leaf` nodes and one spine; one default partition "batch".
    GPU i is close to socket i * 2 // gpus_per_node (the usual HGX layout)."""
    width = max(2, len(str(nodes)))
    half = cpus // 2
    gpus = [
        Gpu(index=i, type=gpu_type, socket=(s := i * 2 // gpus_per_node),
            cores=tuple(range(s * half, (s + 1) * half)), file=f"/dev/nvidia{i}")
        for i in range(gpus_per_node)
    ]  # fmt: skip
    node_list = [
        Node(name=f"gpu{i:0{width}d}", cpus=cpus, sockets=2, cores_per_socket=half,
             real_memory=memory_mb, gpus=list(gpus), features=(gpu_type,),
             partitions=("batch",))
        for i in range(1, nodes + 1)
    ]  # fmt: skip
    names = [n.name for n in node_list]
    leaves = [
        Switch(name=f"leaf{k + 1:02d}", nodes=tuple(names[j : j + nodes_per_leaf]))
        for k, j in enumerate(range(0, nodes, nodes_per_leaf))
    ]
    switches = list(leaves)
    if len(leaves) > 1:
        switches.append(Switch(name="spine", switches=tuple(s.name for s in leaves)))
    return Cluster(
        name=name,
        nodes=node_list,
        partitions=[Partition("batch", nodes=tuple(names), default=True)],
        topology=Topology(kind=TopologyKind.TREE, switches=switches),
    )
