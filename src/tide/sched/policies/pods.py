"""Pods: the Kubernetes-style view of a job, shared by the k8s, Volcano and
Kueue models (docs/policies.md).

A job becomes pods, one per node-share of GPUs: `--nodes=N --gpus-per-node=G`
is N pods of G GPUs (with the job's per-node CPUs and memory); a spread
`--gpus=T` is ceil(T / the largest eligible node's GPUs) pods, T split as
evenly as possible (pods of one job are replicas). A pod lands on one node;
two pods of a job may share a node, as nothing in the default scheduler
forbids it.

Node choice per pod is the scheduling framework's Filter then Score: Filter
keeps the nodes whose free GPUs, cores and memory fit the pod (NodeResourcesFit),
Score ranks them with NodeResourcesFit's LeastAllocated (kube-scheduler's
default strategy: the most free first) or MostAllocated (Volcano's binpack:
the fullest first), over the resources and weights given (default: GPUs only,
weight 1, what a GPU cluster configures as scoringStrategy.resources with
nvidia.com/gpu). Ties go to the node name (the real scheduler picks one of the
tied nodes at random; the twin must be reproducible).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from tide.sched.index import ClusterIndex
from tide.sched.placement import Free, NodePick, capacity, concrete, node_cores
from tide.sched.shape import Shape
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc, Start

if TYPE_CHECKING:
    from tide.sched.eligibility import JobContext

GPU_ONLY: tuple[tuple[str, int], ...] = (("gpu", 1),)
MAX_SCORE = 100  # the framework's MaxNodeScore


def pod_shapes(ctx: JobContext, ix: ClusterIndex) -> list[Shape]:
    """The job's pods, in pod-index order."""
    s = ctx.shape
    if not s.spread:
        one = replace(s, nodes_min=1, nodes_max=1, total_gpus=s.gpus_per_node, exclusive=False)
        return [one] * max(1, s.nodes_min)
    mask = np.zeros(ix.n, dtype=bool)
    for m in ctx.eligible:
        mask |= m
    widest = int(ix.gpus[mask].max()) if mask.any() else int(ix.gpus.max() or 1)
    count = max(1, -(-s.total_gpus // max(1, widest)))
    base, extra = divmod(s.total_gpus, count)
    sizes = [base + (1 if i < extra else 0) for i in range(count)]
    return [_spread_pod(s, g) for g in sizes]


def _spread_pod(s: Shape, gpus: int) -> Shape:
    cpus = max(s.cpus_per_node, s.cpus_per_gpu * gpus)
    mem = s.mem_per_node or s.mem_per_gpu * gpus
    return replace(
        s, nodes_min=1, nodes_max=1, gpus_per_node=gpus, total_gpus=gpus, spread=False,
        cpus_per_node=cpus, mem_per_node=mem, exclusive=False,
    )  # fmt: skip


def remaining(pods: list[Shape], bound: Allocation | None) -> list[tuple[int, Shape]]:
    """(pod index, shape) of the pods not bound yet: a bound pod is one NodeAlloc,
    matched to a pod of the same GPU count."""
    left = list(enumerate(pods))
    for na in bound.nodes if bound is not None else ():
        for k, (_, shape) in enumerate(left):
            if shape.gpus_per_node == len(na.gpus):
                del left[k]
                break
    return left


@dataclass(slots=True)
class Scorer:
    """NodeResourcesFit scoring: LeastAllocated (most=False) or MostAllocated."""

    ix: ClusterIndex
    most: bool
    resources: Sequence[tuple[str, int]] = GPU_ONLY
    integer: bool = True  # kube-scheduler scores are integers; Volcano's are floats
    _rank: np.ndarray = field(init=False)  # node -> position in name order

    def __post_init__(self) -> None:
        self._rank = np.argsort(np.argsort(np.array(self.ix.names, dtype=object)))

    def scores(self, usage: Usage, pod: Shape, nodes: np.ndarray) -> np.ndarray:
        ix = self.ix
        req = {
            "gpu": (ix.gpus, usage.free_gpus, pod.gpus_per_node),
            "cpu": (ix.cores, usage.free_cores, node_cores(ix, pod.cpus_per_node)),
            "mem": (ix.mem, usage.free_mem, pod.mem_per_node),
        }
        total = np.zeros(len(nodes), dtype=np.float64)
        weights = 0
        for name, weight in self.resources:
            cap, free, ask = req[name]
            cap_n = cap[nodes].astype(np.float64)
            ask_n = np.broadcast_to(np.asarray(ask), (ix.n,))[nodes]
            used_after = cap_n - free[nodes] + ask_n
            share = np.divide(used_after, cap_n, out=np.ones_like(cap_n), where=cap_n > 0)
            part = share if self.most else 1.0 - share
            part = part * MAX_SCORE
            total += weight * (np.floor(part) if self.integer else part)
            weights += weight
        out = total / max(1, weights)
        return np.floor(out) if self.integer else out

    def best(self, usage: Usage, pod: Shape, nodes: np.ndarray) -> np.ndarray:
        """The feasible nodes, best first (score, then node name)."""
        s = self.scores(usage, pod, nodes)
        return nodes[np.lexsort((self._rank[nodes], -s))]


def bind_pod(
    scorer: Scorer, usage: Usage, pod: Shape, eligible: np.ndarray, job_id: int
) -> NodeAlloc | None:
    """Filter, Score, then take GPU indices and cores on the best node; the
    pod's resources are allocated in `usage`. None when no node fits."""
    ix = scorer.ix
    free = Free(usage.free_gpus, usage.free_cores, usage.free_mem)
    nodes = np.flatnonzero(capacity(ix, free, pod, eligible & usage.usable))
    if nodes.size == 0:
        return None
    binding = pod.enforce_binding or pod.cpus_per_gpu > 0
    cores = node_cores(ix, pod.cpus_per_node)
    for node in scorer.best(usage, pod, nodes)[:8]:  # a node failing binding: try the next
        pick = NodePick(int(node), pod.gpus_per_node, int(cores[node]), pod.mem_per_node)
        na = concrete(ix, usage.gpu_mask, usage.core_mask, pick, binding)
        if na is not None:
            usage.allocate(Allocation(job_id, (na,)))
            return na
    return None


def fits_empty(ix: ClusterIndex, pods: list[Shape], eligible: np.ndarray) -> bool:
    """Whether the pods could all be placed on the whole cluster with nothing
    running (first fit, largest pods first): False means never."""
    free = [ix.gpus.astype(np.int64).copy(), ix.cores.astype(np.int64).copy(), ix.mem.copy()]
    for pod in sorted(pods, key=lambda p: -p.gpus_per_node):
        ok = capacity(ix, Free(*free), pod, eligible)
        nodes = np.flatnonzero(ok)
        if nodes.size == 0:
            return False
        n = nodes[np.argmin(free[0][nodes])]
        free[0][n] -= pod.gpus_per_node
        free[1][n] -= int(node_cores(ix, pod.cpus_per_node)[n])
        free[2][n] -= pod.mem_per_node
    return True


def merged(job_id: int, pods: Sequence[NodeAlloc]) -> Allocation:
    """One NodeAlloc per node (pods on the same node merged), first-seen order."""
    by_node: dict[int, NodeAlloc] = {}
    for na in pods:
        old = by_node.get(na.node)
        if old is None:
            by_node[na.node] = na
        else:
            by_node[na.node] = NodeAlloc(
                na.node,
                tuple(sorted(old.gpus + na.gpus)),
                tuple(sorted(old.cores + na.cores)),
                old.mem + na.mem,
            )
    return Allocation(job_id, tuple(by_node.values()))


def start_of(ctx: JobContext, ix: ClusterIndex, alloc: Allocation) -> Start:
    """The Start of a job whose pods are all bound."""
    leaves = len({int(ix.leaf_of[na.node]) for na in alloc.nodes})
    switches = ctx.job.request.switches
    return Start(
        job_id=ctx.job.id,
        alloc=alloc,
        partition=ctx.parts[0].name,
        switches_satisfied=switches is None or leaves <= switches,
        leaf_switches=leaves,
    )
