"""ClusterIndex: the static cluster as arrays the core can query fast.

Built once per cluster description (not per cycle). Nodes are addressed by
their position in Cluster.nodes. The switch tree becomes `levels`: level 0
maps each node to its leaf, level L maps each leaf to its ancestor at L, so
per-switch counts at any level are one bincount away. topology/block becomes
the same shape: blocks are leaves, aligned groups of BlockSizes are levels.
Flat clusters get one pseudo-leaf holding every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from tide.model import Cluster, Node, NodeState, TopologyKind


@dataclass(slots=True)
class GpuLayout:
    """The GPU layout shared by identical nodes: sockets and NVLink weights."""

    count: int
    sockets: tuple[int, ...]  # socket of each GPU (-1 unknown)
    links: tuple[tuple[int, ...], ...]  # links[i][j]
    socket_cores: tuple[tuple[int, ...], ...]  # cores close to each GPU

    def link_weight(self, gpus: tuple[int, ...]) -> int:
        return sum(self.links[a][b] for a, b in combinations(gpus, 2) if self.links)


@dataclass(slots=True)
class ClusterIndex:
    cluster: Cluster
    names: list[str]
    pos: dict[str, int]
    cores: np.ndarray  # physical cores per node
    tpc: np.ndarray  # threads per core
    gpus: np.ndarray
    mem: np.ndarray  # MB
    weight: np.ndarray
    up: np.ndarray  # bool: configured state allows scheduling
    gpu_type: list[str]
    layout_of: np.ndarray  # node -> index into layouts
    layouts: list[GpuLayout]
    cores_per_socket: np.ndarray
    leaf_of: np.ndarray  # node -> leaf index
    leaf_names: list[str]
    levels: list[np.ndarray]  # levels[k]: leaf -> switch index at level k+1
    level_names: list[list[str]]
    partition_masks: dict[str, np.ndarray] = field(default_factory=dict)
    feature_masks: dict[str, np.ndarray] = field(default_factory=dict)
    type_masks: dict[str, np.ndarray] = field(default_factory=dict)
    # derived tables that depend only on the cluster, computed on first use
    memo: dict[object, object] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_names)

    def mask_of(self, names: tuple[str, ...]) -> np.ndarray:
        m = np.zeros(self.n, dtype=bool)
        for name in names:
            i = self.pos.get(name)
            if i is not None:
                m[i] = True
        return m


def build_index(cluster: Cluster) -> ClusterIndex:
    nodes = cluster.nodes
    names = [n.name for n in nodes]
    pos = {name: i for i, name in enumerate(names)}
    layouts: list[GpuLayout] = []
    layout_key: dict[tuple, int] = {}
    layout_of = np.zeros(len(nodes), dtype=np.int32)
    for i, node in enumerate(nodes):
        layout = _layout(node)
        key = (layout.count, layout.sockets, layout.links, layout.socket_cores)
        if key not in layout_key:
            layout_key[key] = len(layouts)
            layouts.append(layout)
        layout_of[i] = layout_key[key]
    leaf_of, leaf_names, levels, level_names = _topology(cluster, pos)
    idx = ClusterIndex(
        cluster=cluster,
        names=names,
        pos=pos,
        cores=np.array([n.cores for n in nodes], dtype=np.int32),
        tpc=np.array([max(1, n.threads_per_core) for n in nodes], dtype=np.int32),
        gpus=np.array([n.gpu_count for n in nodes], dtype=np.int32),
        mem=np.array([n.real_memory for n in nodes], dtype=np.int64),
        weight=np.array([n.weight for n in nodes], dtype=np.int64),
        up=np.array([n.state == NodeState.IDLE for n in nodes], dtype=bool),
        gpu_type=[n.gpu_type() for n in nodes],
        layout_of=layout_of,
        layouts=layouts,
        cores_per_socket=np.array([max(1, n.cores_per_socket) for n in nodes], dtype=np.int32),
        leaf_of=leaf_of,
        leaf_names=leaf_names,
        levels=levels,
        level_names=level_names,
    )
    for part in cluster.partitions:
        idx.partition_masks[part.name] = idx.mask_of(part.nodes)
    for i, node in enumerate(nodes):
        for feat in node.features:
            idx.feature_masks.setdefault(feat, np.zeros(len(nodes), dtype=bool))[i] = True
        gtype = node.gpu_type()
        if gtype:
            idx.type_masks.setdefault(gtype, np.zeros(len(nodes), dtype=bool))[i] = True
    return idx


def _layout(node: Node) -> GpuLayout:
    gpus = sorted(node.gpus, key=lambda g: g.index)
    cps = max(1, node.cores_per_socket)
    sockets = []
    near = []
    for g in gpus:
        sock = g.socket if g.socket is not None else (g.cores[0] // cps if g.cores else -1)
        sockets.append(sock)
        if g.cores:
            near.append(tuple(g.cores))
        elif sock >= 0:
            near.append(tuple(range(sock * cps, (sock + 1) * cps)))
        else:
            near.append(())
    links = tuple(tuple(max(0, v) for v in row) for row in node.links) if node.links else ()
    return GpuLayout(len(gpus), tuple(sockets), links, tuple(near))


def _topology(
    cluster: Cluster, pos: dict[str, int]
) -> tuple[np.ndarray, list[str], list[np.ndarray], list[list[str]]]:
    topo = cluster.topology
    n = len(cluster.nodes)
    if topo.kind == TopologyKind.TREE and topo.switches:
        return _tree(cluster, pos)
    if topo.kind == TopologyKind.BLOCK and topo.blocks:
        return _blocks(cluster, pos)
    return np.zeros(n, dtype=np.int32), ["(flat)"], [], []


def _tree(
    cluster: Cluster, pos: dict[str, int]
) -> tuple[np.ndarray, list[str], list[np.ndarray], list[list[str]]]:
    switches = {s.name: s for s in cluster.topology.switches}
    leaves = [s for s in cluster.topology.switches if s.is_leaf]
    leaf_names = [s.name for s in leaves]
    leaf_of = np.full(len(cluster.nodes), -1, dtype=np.int32)
    for li, leaf in enumerate(leaves):
        for name in leaf.nodes:
            if name in pos and leaf_of[pos[name]] < 0:
                leaf_of[pos[name]] = li
    # Nodes outside the tree are islands: each its own leaf.
    for i in np.flatnonzero(leaf_of < 0):
        leaf_of[i] = len(leaf_names)
        leaf_names.append(f"(none:{cluster.nodes[i].name})")
    parent: dict[str, str] = {}
    for s in cluster.topology.switches:
        for child in s.switches:
            parent.setdefault(child, s.name)
    chains = []
    for name in leaf_names:
        chain, cur = [], parent.get(name)
        while cur is not None and cur in switches and cur not in chain:
            chain.append(cur)
            cur = parent.get(cur)
        chains.append(chain)
    depth = max((len(c) for c in chains), default=0)
    levels: list[np.ndarray] = []
    level_names: list[list[str]] = []
    for k in range(depth):
        names_k: list[str] = []
        at: dict[str, int] = {}
        arr = np.zeros(len(leaf_names), dtype=np.int32)
        for li, chain in enumerate(chains):
            # A leaf whose chain is shorter sits under its own top at this level.
            key = chain[k] if k < len(chain) else (chain[-1] if chain else leaf_names[li])
            if key not in at:
                at[key] = len(names_k)
                names_k.append(key)
            arr[li] = at[key]
        levels.append(arr)
        level_names.append(names_k)
    return leaf_of, leaf_names, levels, level_names


def _blocks(
    cluster: Cluster, pos: dict[str, int]
) -> tuple[np.ndarray, list[str], list[np.ndarray], list[list[str]]]:
    blocks = cluster.topology.blocks
    leaf_names = [b.name for b in blocks]
    leaf_of = np.full(len(cluster.nodes), -1, dtype=np.int32)
    for bi, block in enumerate(blocks):
        for name in block.nodes:
            if name in pos and leaf_of[pos[name]] < 0:
                leaf_of[pos[name]] = bi
    for i in np.flatnonzero(leaf_of < 0):
        leaf_of[i] = len(leaf_names)
        leaf_names.append(f"(none:{cluster.nodes[i].name})")
    base = max(1, len(blocks[0].nodes)) if blocks else 1
    sizes = sorted(s for s in cluster.topology.block_sizes if s > base)
    levels, level_names = [], []
    for size in sizes:
        per = max(1, size // base)  # blocks per aligned segment
        arr = np.arange(len(leaf_names), dtype=np.int32) // per
        levels.append(arr)
        level_names.append([f"segment{size}:{j}" for j in range(int(arr.max()) + 1)])
    return leaf_of, leaf_names, levels, level_names
