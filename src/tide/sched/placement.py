"""Placement: which nodes (topology) and which GPUs and cores (inside a node).

Across nodes (topology/tree, and topology/block mapped onto the same tree):
1. the lowest-level switch whose subtree can hold the whole job wins; among
   switches of that level, best fit (the one with the least spare capacity
   that suffices), so large contiguous sets stay free;
2. when the job spans leaves, it uses the fewest leaves: fullest leaves
   first, the remainder on the leaf that fits it best;
3. inside a leaf, nodes by Weight, then best fit (fewest free GPUs that
   suffice), then name order.
Example: leaves L1 (3 free nodes) and L2 (4 free) under one spine; a 3-node
job takes L1 (best fit), a 5-node job takes L2 whole plus one node of L1.

Inside a node: the GPU subset with the highest NVLink weight, on one socket
where possible, on the socket with the fewest free GPUs that suffice; with
--gres-flags=enforce-binding or --cpus-per-gpu the cores must come from the
chosen GPUs' sockets, and a node that cannot do that does not qualify.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from tide.sched.index import ClusterIndex, GpuLayout
from tide.sched.shape import Shape
from tide.sched.types import NodeAlloc

_MAX_COMBOS = 400  # beyond this many GPU subsets, pick greedily


@dataclass(slots=True)
class Free:
    """Free capacity per node, at one time (now, or a planned window)."""

    gpus: np.ndarray
    cores: np.ndarray
    mem: np.ndarray
    untouched: np.ndarray | None = None  # False where a hold takes part of the node

    def idle(self, ix: ClusterIndex) -> np.ndarray:
        """Nodes with nothing allocated or held (for --exclusive)."""
        whole = (self.gpus == ix.gpus) & (self.cores == ix.cores) & (self.mem == ix.mem)
        return whole if self.untouched is None else whole & self.untouched


@dataclass(slots=True, frozen=True)
class NodePick:
    node: int
    gpus: int  # GPU count on this node
    cores: int  # cores on this node
    mem: int


@dataclass(slots=True, frozen=True)
class Pick:
    nodes: tuple[NodePick, ...]
    leaves: int
    min_leaves: int  # fewest leaves that could ever hold this job


# --------------------------------------------------------------------------
# across nodes


def node_cores(ix: ClusterIndex, cpus: int) -> np.ndarray:
    """Cores needed per node for `cpus` logical CPUs (whole cores, CR_Core)."""
    key = ("cores", cpus)
    if key not in ix.memo:
        ix.memo[key] = -(-cpus // ix.tpc)
    return ix.memo[key]  # type: ignore[return-value]


def capacity(ix: ClusterIndex, free: Free, shape: Shape, eligible: np.ndarray) -> np.ndarray:
    """Per node: 1/0 whether it fits (fixed shape) or usable GPUs (spread)."""
    if shape.spread:
        usable = free.gpus.copy()
        if shape.cpus_per_gpu:
            usable = np.minimum(usable, (free.cores * ix.tpc) // shape.cpus_per_gpu)
        if shape.mem_per_gpu:
            usable = np.minimum(usable, free.mem // shape.mem_per_gpu)
        ok = eligible & (free.cores >= node_cores(ix, shape.cpus_per_node))
        if shape.exclusive:
            ok &= free.idle(ix)
        return np.where(ok, usable, 0)
    ok = eligible & (free.gpus >= shape.gpus_per_node)
    ok &= free.cores >= node_cores(ix, shape.cpus_per_node)
    ok &= free.mem >= shape.mem_per_node
    if shape.exclusive:
        ok &= free.idle(ix)
    return ok.astype(np.int64)


def select_nodes(
    ix: ClusterIndex,
    free: Free,
    shape: Shape,
    eligible: np.ndarray,
    max_leaves: int | None = None,
    order: np.ndarray | None = None,
) -> Pick | None:
    """Choose nodes for the whole job, or None when it does not fit."""
    return select_by_capacity(
        ix, capacity(ix, free, shape, eligible), shape, max_leaves, order, free
    )


def select_by_capacity(
    ix: ClusterIndex,
    cap: np.ndarray,
    shape: Shape,
    max_leaves: int | None = None,
    order: np.ndarray | None = None,
    free: Free | None = None,
) -> Pick | None:
    """select_nodes on a capacity the caller computed (per node: fits 1/0, or
    usable GPUs for a spread shape, which also needs `free`)."""
    need = shape.total_gpus if shape.spread else shape.nodes_min
    if need <= 0:
        need = 1 if not shape.spread else 0
    per_leaf = np.bincount(ix.leaf_of, weights=cap, minlength=ix.n_leaves)
    if per_leaf.sum() < need or (shape.spread and need == 0):
        return None
    if need == 1 and not shape.spread and (max_leaves is None or max_leaves >= 1):
        # one node: the rules below pick the leaf with the fewest fitting nodes (best
        # fit, lowest index on ties), said in one step
        best = int(np.argmin(np.where(per_leaf >= 1, per_leaf, np.inf)))
        leaves: dict[int, int] | None = {best: 1}
    else:
        leaves = _choose_leaves(ix, per_leaf, need, max_leaves)
    if leaves is None:
        return None
    if shape.spread:
        assert free is not None
        return _fill_spread(ix, free, shape, cap, leaves, order)
    if order is None:
        assert free is not None
        order = free.gpus  # best fit: the fewest free GPUs that suffice
    return _fill_fixed(ix, shape, cap, leaves, order)


def _choose_leaves(
    ix: ClusterIndex, per_leaf: np.ndarray, need: int, max_leaves: int | None
) -> dict[int, int] | None:
    """Leaf -> quota, following the lowest-switch / fewest-leaves rules."""
    group = _lowest_group(ix, per_leaf, need)
    plan = _fewest_leaves(per_leaf, group, need)
    if plan is not None and (max_leaves is None or len(plan) <= max_leaves):
        return plan
    if max_leaves is None:
        return plan
    # --switches=N: look for N leaves anywhere that together suffice.
    return _fewest_leaves(per_leaf, np.arange(ix.n_leaves), need, cap_leaves=max_leaves)


def _lowest_group(ix: ClusterIndex, per_leaf: np.ndarray, need: int) -> np.ndarray:
    """Leaves under the lowest, best-fitting switch that can hold `need`."""
    ok = np.flatnonzero(per_leaf >= need)
    if ok.size:
        best = ok[np.argmin(per_leaf[ok])]
        return np.array([best])
    for level in ix.levels:
        per_switch = np.bincount(level, weights=per_leaf)
        ok = np.flatnonzero(per_switch >= need)
        if ok.size:
            best = ok[np.argmin(per_switch[ok])]
            return np.flatnonzero(level == best)
    return np.arange(ix.n_leaves)


def _fewest_leaves(
    per_leaf: np.ndarray, group: np.ndarray, need: int, cap_leaves: int | None = None
) -> dict[int, int] | None:
    counts = per_leaf[group]
    order = group[np.argsort(-counts, kind="stable")]
    total, chosen = 0.0, []
    for leaf in order:
        if per_leaf[leaf] <= 0:
            break
        if total + per_leaf[leaf] >= need:
            break
        chosen.append(int(leaf))
        total += per_leaf[leaf]
    remainder = need - total
    rest = [int(leaf) for leaf in order if int(leaf) not in chosen and per_leaf[leaf] >= remainder]
    if not rest:
        return None
    last = min(rest, key=lambda leaf: (per_leaf[leaf], leaf))
    if cap_leaves is not None and len(chosen) + 1 > cap_leaves:
        return None
    plan = {leaf: int(per_leaf[leaf]) for leaf in chosen}
    plan[last] = int(remainder)
    return plan


def leaf_nodes(ix: ClusterIndex, leaf: int) -> np.ndarray:
    """The nodes under one leaf, in index order (memoised per cluster)."""
    table = ix.memo.get("leaf_nodes")
    if table is None:
        order = np.argsort(ix.leaf_of, kind="stable")
        bounds = np.searchsorted(ix.leaf_of[order], np.arange(ix.n_leaves + 1))
        table = [order[bounds[k] : bounds[k + 1]] for k in range(ix.n_leaves)]
        ix.memo["leaf_nodes"] = table
    return table[leaf]  # type: ignore[index]


def _ordered(ix: ClusterIndex, nodes: np.ndarray, key: np.ndarray) -> np.ndarray:
    return nodes[np.lexsort((nodes, key[nodes], ix.weight[nodes]))]


def _fill_fixed(
    ix: ClusterIndex,
    shape: Shape,
    cap: np.ndarray,
    plan: dict[int, int],
    key: np.ndarray,
) -> Pick:
    extra = shape.nodes_max - shape.nodes_min
    picks: list[NodePick] = []
    cores = node_cores(ix, shape.cpus_per_node)
    for leaf, quota in sorted(plan.items()):
        nodes = leaf_nodes(ix, leaf)
        nodes = _ordered(ix, nodes[cap[nodes] > 0], key)
        take = min(len(nodes), quota + extra)
        extra -= take - quota
        for n in nodes[:take]:
            picks.append(_node_pick(ix, shape, int(n), shape.gpus_per_node, int(cores[n])))
    return Pick(tuple(picks), len(plan), _min_leaves(ix, shape))


def _fill_spread(
    ix: ClusterIndex,
    free: Free,
    shape: Shape,
    cap: np.ndarray,
    plan: dict[int, int],
    order: np.ndarray | None,
) -> Pick | None:
    picks: list[NodePick] = []
    cores = node_cores(ix, shape.cpus_per_node)
    for leaf, quota in sorted(plan.items()):
        nodes = leaf_nodes(ix, leaf)
        nodes = nodes[cap[nodes] > 0]
        # most usable GPUs first (fewest nodes); the remainder best fit
        nodes = nodes[np.lexsort((nodes, -cap[nodes]))]
        remaining = quota
        for n in nodes:
            if remaining <= 0:
                break
            if cap[n] >= remaining:
                fits = [m for m in nodes if cap[m] >= remaining and not _taken(picks, m)]
                best = min(fits, key=lambda m: (cap[m], m))
                picks.append(_spread_pick(ix, shape, int(best), remaining, cores))
                remaining = 0
                break
            picks.append(_spread_pick(ix, shape, int(n), int(cap[n]), cores))
            remaining -= int(cap[n])
    if len(picks) > shape.nodes_max or len(picks) < shape.nodes_min:
        return None
    return Pick(tuple(picks), len(plan), _min_leaves(ix, shape))


def _taken(picks: list[NodePick], node: int) -> bool:
    return any(p.node == node for p in picks)


def _spread_pick(
    ix: ClusterIndex, shape: Shape, node: int, gpus: int, cores: np.ndarray
) -> NodePick:
    n_cores = int(cores[node])
    if shape.cpus_per_gpu:
        n_cores = max(n_cores, -(-(shape.cpus_per_gpu * gpus) // int(ix.tpc[node])))
    return _node_pick(ix, shape, node, gpus, n_cores)


def _node_pick(ix: ClusterIndex, shape: Shape, node: int, gpus: int, cores: int) -> NodePick:
    mem = shape.mem_per_node or shape.mem_per_gpu * gpus
    if shape.exclusive:
        gpus, cores = int(ix.gpus[node]), int(ix.cores[node])
        return NodePick(node, gpus, cores, exclusive_mem(ix, shape, node, gpus, cores))
    return NodePick(node, gpus, cores, mem)


def exclusive_mem(ix: ClusterIndex, shape: Shape, node: int, gpus: int, cores: int) -> int:
    """Memory of a whole node given to an --exclusive job, as Slurm's cons_tres:
    what it asked for, counted on every CPU or GPU it holds (--mem-per-cpu,
    --mem-per-gpu: sbatch takes one of the three) or per node (--mem); all of the
    node's memory when it asked for none. Never more than the node has."""
    have = int(ix.mem[node])
    if shape.mem_per_cpu:
        return min(have, shape.mem_per_cpu * cores * int(ix.tpc[node]))
    if shape.mem_per_gpu:
        return min(have, shape.mem_per_gpu * gpus)
    return min(have, shape.mem_per_node) if shape.mem_per_node else have


def _min_leaves(ix: ClusterIndex, shape: Shape) -> int:
    """Fewest leaves an empty cluster would need (for the topology metric)."""
    if ix.n_leaves <= 1:
        return 1
    if not shape.spread:
        need_nodes = shape.nodes_min
    else:
        need_nodes = -(-shape.total_gpus // int(ix.gpus.max() or 1))
    key = ("min_leaves", need_nodes)  # a placement per start and per hold asks it
    got = ix.memo.get(key)
    if got is None:
        if "leaf_sizes" not in ix.memo:
            sizes = np.sort(np.bincount(ix.leaf_of, minlength=ix.n_leaves))[::-1]
            ix.memo["leaf_sizes"] = np.cumsum(sizes)
        got = ix.memo[key] = int(np.searchsorted(ix.memo["leaf_sizes"], need_nodes) + 1)  # type: ignore[call-overload]
    return got  # type: ignore[return-value]


# --------------------------------------------------------------------------
# inside a node


def pick_gpus(
    layout: GpuLayout, free_mask: int, count: int, core_mask: int, cores: int, binding: bool
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Choose GPU indices and core ids on one node, or None if impossible."""
    candidates = _free_candidates(layout, free_mask, count)
    return _first_fit(layout, candidates, core_mask, cores, binding, socket_masks(layout))


MEMO_GPUS = 8  # nodes with at most this many GPUs keep their candidate lists (ix.memo)


def _free_candidates(layout: GpuLayout, free_mask: int, count: int) -> tuple[tuple[int, ...], ...]:
    """The GPU subsets pick_gpus tries, best first: a function of the layout, the
    free GPUs and the count only (so the index may keep it)."""
    free = [i for i in range(layout.count) if free_mask >> i & 1]
    if count > len(free):
        return ()
    return tuple(_gpu_candidates(layout, free, count))


def socket_masks(layout: GpuLayout) -> tuple[int, ...]:
    """Per GPU, the cores close to it as a bit mask (bit c: core c)."""
    return tuple(sum(1 << c for c in set(near)) for near in layout.socket_cores)


def _first_fit(
    layout: GpuLayout,
    candidates: tuple[tuple[int, ...], ...],
    core_mask: int,
    cores: int,
    binding: bool,
    masks: tuple[int, ...],
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    for gpus in candidates:
        chosen_cores = _pick_cores(layout, gpus, core_mask, cores, binding, masks)
        if chosen_cores is not None:
            return gpus, chosen_cores
    return None


def _gpu_candidates(layout: GpuLayout, free: list[int], count: int) -> list[tuple[int, ...]]:
    if count == 0:
        return [()]
    combos = _n_choose(len(free), count)
    if combos > _MAX_COMBOS:
        return [_greedy(layout, free, count)]
    free_on = {s: sum(1 for g in free if layout.sockets[g] == s) for s in set(layout.sockets)}

    def key(gpus: tuple[int, ...]) -> tuple:
        sockets = {layout.sockets[g] for g in gpus}
        one = len(sockets) == 1
        fit = free_on[next(iter(sockets))] if one else 1 << 30
        return (-layout.link_weight(gpus), not one, fit, gpus)

    return sorted(combinations(free, count), key=key)


def _greedy(layout: GpuLayout, free: list[int], count: int) -> tuple[int, ...]:
    by_socket: dict[int, list[int]] = {}
    for g in free:
        by_socket.setdefault(layout.sockets[g], []).append(g)
    fitting = [s for s, gs in by_socket.items() if len(gs) >= count]
    if fitting:
        best = min(fitting, key=lambda s: (len(by_socket[s]), s))
        return tuple(by_socket[best][:count])
    return tuple(free[:count])


def _n_choose(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out = out * (n - i) // (i + 1)
    return out


def _pick_cores(
    layout: GpuLayout,
    gpus: tuple[int, ...],
    core_mask: int,
    cores: int,
    binding: bool,
    masks: tuple[int, ...],
) -> tuple[int, ...] | None:
    """Free cores for the GPUs (`core_mask`, bit c: core c free): the lowest
    free ones close to them (`masks`: socket_masks), then, unless binding
    forbids it, the lowest free others. Bits, not lists: a node has a hundred
    cores and this runs for every start."""
    near = 0
    if layout.socket_cores:
        for g in gpus:
            near |= masks[g]
    near &= core_mask
    if binding and gpus and layout.socket_cores and any(layout.socket_cores[g] for g in gpus):
        return tuple(_lowest(near, cores)) if near.bit_count() >= cores else None
    chosen = _lowest(near, cores)
    if len(chosen) < cores:
        chosen += _lowest(core_mask & ~near, cores - len(chosen))
        if len(chosen) < cores:
            return None
        chosen.sort()
    return tuple(chosen)


def _lowest(mask: int, k: int) -> list[int]:
    """The (at most) k lowest set bits of `mask`, ascending."""
    out: list[int] = []
    while mask and len(out) < k:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def concrete(
    ix: ClusterIndex,
    gpu_mask: np.ndarray,
    core_mask: list[int],
    pick: NodePick,
    binding: bool,
) -> NodeAlloc | None:
    li = int(ix.layout_of[pick.node])
    layout, free_mask = ix.layouts[li], int(gpu_mask[pick.node])
    key = ("gpu_candidates", li, free_mask, pick.gpus)
    candidates = ix.memo.get(key)
    if candidates is None:
        candidates = _free_candidates(layout, free_mask, pick.gpus)
        if layout.count <= MEMO_GPUS:
            ix.memo[key] = candidates
    masks = ix.memo.get(("socket_masks", li))
    if masks is None:
        masks = ix.memo[("socket_masks", li)] = socket_masks(layout)
    got = _first_fit(layout, candidates, core_mask[pick.node], pick.cores, binding, masks)  # type: ignore[arg-type]
    if got is None:
        return None
    return NodeAlloc(pick.node, got[0], got[1], pick.mem)
