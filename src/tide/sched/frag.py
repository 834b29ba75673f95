"""Fragmentation-aware GPU placement: FGD (Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC'23), and the best fit it is compared with.

GPU capacity is counted in milli-GPUs per GPU (1000 = one whole GPU), so a
GPU-sharing task (one GPU, less than 1000 milli) and whole-GPU tasks use the
same rules; a whole-GPU cluster is the case where every GPU is 0 or 1000.

Fragmentation of a node for one task type m (the paper's F_n(m), the FGD
artifact's NodeGpuShareFragAmount): the free GPU capacity of the node that m
could not use. If m fits on the node (enough GPUs with at least m's
milli-GPUs free each, and enough CPU), the free capacity on GPUs with less
than m's milli-GPUs free; otherwise (it does not fit, or asks for no GPU)
all of the node's free GPU capacity. The node's expected fragmentation is
the average over the task mix M (the workload's task types weighted by how
often they occur): F_n(M) = sum_m p_m F_n(m).

FGD places a task where F grows least (F_after - F_before smallest; inside
a node, for a sharing task, on the GPU that does so), scored as the artifact
scores it: an integer 0-100 (fgd_score), so changes within about 40
milli-GPUs tie. The artifact breaks ties at random (Kubernetes' selectHost);
here best fit breaks them, then the lowest node index, then the fullest GPU:
deterministic, and on openb 95.4 % of GPUs allocated against about 90 %
with random ties or 94.1 % with exact changes (bench/bench_fgd.py;
docs/policies.md).

Best fit (the artifact's BestFit): the node with the least CPU and GPU left
after placement, 0.5 (cpu_free - cpu) / 128 CPUs + 0.5 (gpu_free - gpu) /
8 GPUs; a sharing task on the fullest GPU that fits.

Pure: arrays in, a choice out; the caller applies it (tide.sim.inflate).
On tide's whole-GPU clusters the `tide` policy uses the same measure as a
node order (whole_gpu_order; TidePolicy(placement="fgd")).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

MILLI = 1000  # milli-GPUs per GPU
MAX_CPU = 128_000  # best fit's normalisation (milli-CPU), as the FGD artifact
MAX_GPU = 8_000  # best fit's normalisation (milli-GPU)
ALL = 1.0  # share of GPU tasks the mix's most popular types cover (artifact: 0.95)
SCORE = 100  # FGD's integer node scores run 0..SCORE (Kubernetes' MaxNodeScore)
PLACEMENTS = ("bestfit", "fgd")


@dataclass(slots=True, frozen=True)
class Task:
    """One task's request: milli-CPU, memory (MiB), GPUs and milli-GPU per GPU
    (1000 for whole GPUs; less only with gpus == 1), allowed GPU models
    (indices into the caller's model list; None = any)."""

    cpu: int
    mem: int
    gpus: int
    milli: int = MILLI
    models: frozenset[int] | None = None

    def __post_init__(self) -> None:
        if self.gpus < 0 or self.cpu < 0 or self.mem < 0:
            raise ValueError(f"task {self}: cpu, mem and gpus must be >= 0")
        if not 0 < self.milli <= MILLI:
            raise ValueError(f"task milli={self.milli}: use 1..{MILLI} milli-GPUs per GPU")
        if self.milli < MILLI and self.gpus != 1:
            raise ValueError(f"task milli={self.milli} with gpus={self.gpus}: "
                             "a shared GPU share needs gpus=1")  # fmt: skip

    @property
    def shared(self) -> bool:
        return self.gpus == 1 and self.milli < MILLI

    @property
    def gpu_milli(self) -> int:
        return self.gpus * self.milli


@dataclass(slots=True, frozen=True)
class TaskMix:
    """The target workload M: task types (milli-CPU, GPUs, milli-GPU per GPU)
    and their popularity (sums to 1)."""

    cpu: np.ndarray
    gpus: np.ndarray
    milli: np.ndarray
    weight: np.ndarray

    @classmethod
    def of(cls, tasks: Iterable[tuple[int, int, int]], popular: float = ALL) -> TaskMix:
        """From (milli-CPU, GPUs, milli-GPU per GPU) of each task seen: the most
        popular types (ties in key order) until they cover `popular` of the
        GPU tasks, weights renormalised over them. All types by default: the
        artifact keeps 95 %, which leaves out the rare 4- and 8-GPU tasks that
        whole nodes must be kept for (bench/bench_fgd.py measures both). Tasks
        without GPUs are left out: they add the same amount to every node's
        fragmentation change."""
        counts = Counter(t for t in tasks if t[1] > 0)
        if not counts:
            none = np.zeros(0, dtype=np.int64)
            return cls(none, none, none, np.zeros(0))
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        total, kept, covered = sum(counts.values()), [], 0
        for key, n in ranked:
            kept.append((key, n))
            covered += n
            if covered >= popular * total:
                break
        arr = np.array([k for k, _ in kept], dtype=np.int64)
        w = np.array([n for _, n in kept], dtype=float)
        return cls(arr[:, 0], arr[:, 1], arr[:, 2], w / w.sum())

    def __len__(self) -> int:
        return len(self.weight)


def frag_amount(left: np.ndarray, cpu: np.ndarray, mix: TaskMix) -> np.ndarray:
    """F_n(M) per node: `left` (nodes x GPU slots) free milli-GPUs per GPU (0
    for a slot without a GPU), `cpu` free milli-CPU per node."""
    total = left.sum(axis=1).astype(float)
    if len(mix) == 0:
        return np.zeros(len(left))
    ge = left[:, :, None] >= mix.milli[None, None, :]  # GPU g serves type t
    hosts = (ge.sum(axis=1) >= mix.gpus[None, :]) & (cpu[:, None] >= mix.cpu[None, :])
    small = np.einsum("ng,ngt->nt", left.astype(float), ~ge)  # free on GPUs too small
    frag = np.where(hosts, small, total[:, None])
    return frag @ mix.weight


def frag_amount_unique(left: np.ndarray, cpu: np.ndarray, mix: TaskMix) -> np.ndarray:
    """frag_amount, computed once per distinct node state (GPU order does not
    matter): nodes of one kind in one state are common."""
    if len(left) <= 1:
        return frag_amount(left, cpu, mix)
    key = np.column_stack([cpu, np.sort(left, axis=1)])
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    return frag_amount(uniq[:, 1:], uniq[:, 0], mix)[inverse.reshape(-1)]


def fits(left: np.ndarray, cpu: np.ndarray, mem: np.ndarray, model: np.ndarray,
         task: Task) -> np.ndarray:  # fmt: skip
    """Nodes that can take the task now (CPU, memory, GPU model, GPUs)."""
    ok = (cpu >= task.cpu) & (mem >= task.mem)
    if task.gpus:
        ok &= (left >= task.milli).sum(axis=1) >= task.gpus
        if task.models is not None:
            ok &= np.isin(model, list(task.models))
    return ok


def gpus_on(row: np.ndarray, task: Task, value: int | None = None) -> tuple[int, ...]:
    """The GPUs a task takes on one node: a sharing task the first GPU with
    `value` milli free (default: the fullest that fits), whole GPUs the first
    free ones in index order."""
    if not task.gpus:
        return ()
    if task.shared:
        if value is None:
            able = row[row >= task.milli]
            value = int(able.min()) if able.size else -1
        hit = np.flatnonzero(row == value)
        if value < task.milli or not hit.size:
            raise ValueError(f"no GPU with {value} milli free fits {task.milli}")
        return (int(hit[0]),)
    full = np.flatnonzero(row >= MILLI)[: task.gpus]
    if len(full) < task.gpus:
        raise ValueError(f"the node has {len(full)} free GPUs, the task needs {task.gpus}")
    return tuple(int(g) for g in full)


def fgd_score(delta: np.ndarray) -> np.ndarray:
    """The FGD artifact's node score for a fragmentation change (milli-GPUs):
    100 sigmoid(-delta / 1000) as an integer. Changes within about 40
    milli-GPUs of each other score alike, and best fit decides among them."""
    return np.floor(SCORE / (1.0 + np.exp(np.clip(delta / MILLI, -50, 50))))


def _fit(cpu_left: np.ndarray, gpu_left: np.ndarray) -> np.ndarray:
    """Best fit's score (lower is better) from what a node would have left."""
    return 0.5 * cpu_left / MAX_CPU + 0.5 * gpu_left / MAX_GPU


def whole_gpu_order(gpus_free: np.ndarray, cpus_free: np.ndarray, gpus: int, cpus: int,
                    mix: TaskMix) -> np.ndarray:  # fmt: skip
    """FGD on a whole-GPU cluster, as a node order (rank per node, lower
    first) for a task taking `gpus` GPUs and `cpus` CPUs on a node, given
    each node's free GPUs and CPUs and a mix in milli-CPUs and whole GPUs:
    FGD's score (higher first), then the fewest free GPUs, then the fewest
    free CPUs (tide's best fit). Ranks of nodes the task does not fit on
    mean nothing: the caller filters them."""
    slots = np.arange(max(1, int(gpus_free.max(initial=0))))
    left = np.where(slots[None, :] < gpus_free[:, None], MILLI, 0)
    after = np.where(slots[None, :] < (gpus_free - gpus)[:, None], MILLI, 0)
    cpu = cpus_free.astype(np.int64) * 1000
    delta = frag_amount_unique(after, cpu - cpus * 1000, mix) - frag_amount_unique(left, cpu, mix)
    order = np.lexsort((cpus_free, gpus_free, -fgd_score(delta)))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


@dataclass(slots=True, frozen=True)
class Choice:
    node: int
    gpus: tuple[int, ...]
    delta: float = 0.0  # FGD: the change in the node's fragmentation


def best_fit(left: np.ndarray, cpu: np.ndarray, mem: np.ndarray, model: np.ndarray,
             task: Task) -> Choice | None:  # fmt: skip
    """The fitting node with the least weighted CPU and GPU left after it."""
    ok = np.flatnonzero(fits(left, cpu, mem, model, task))
    if not ok.size:
        return None
    score = _fit(cpu[ok] - task.cpu, left[ok].sum(axis=1) - task.gpu_milli)
    node = int(ok[int(np.argmin(score))])
    return Choice(node, gpus_on(left[node], task))


def fgd(left: np.ndarray, cpu: np.ndarray, mem: np.ndarray, model: np.ndarray, task: Task,
        mix: TaskMix, now: np.ndarray | None = None) -> Choice | None:  # fmt: skip
    """The placement whose fragmentation increase is smallest. `now`: every
    node's F_n(M) in the current state, when the caller keeps it."""
    ok = np.flatnonzero(fits(left, cpu, mem, model, task))
    if not ok.size:
        return None
    rows_left = left[ok]
    before = now[ok] if now is not None else frag_amount_unique(rows_left, cpu[ok], mix)
    if task.shared:
        # one candidate per node and distinct free amount (equal GPUs are alike)
        s = np.sort(rows_left, axis=1)
        distinct = np.ones(s.shape, dtype=bool)
        distinct[:, 1:] = s[:, 1:] != s[:, :-1]
        rows, cols = np.nonzero(distinct & (s >= task.milli))
        after = s[rows]
        after[np.arange(len(rows)), cols] -= task.milli
        values = s[rows, cols]
    else:
        full = rows_left >= MILLI
        take = full & (np.cumsum(full, axis=1) <= task.gpus)
        rows = np.arange(len(ok))
        after = np.where(take, 0, rows_left)
        values = None
    cpu_after = cpu[ok][rows] - task.cpu
    delta = frag_amount_unique(after, cpu_after, mix) - before[rows]
    # higher score first, then best fit, then the lowest node (and fullest GPU)
    best = int(np.lexsort((_fit(cpu_after, after.sum(axis=1)), -fgd_score(delta)))[0])
    node = int(ok[rows[best]])
    value = None if values is None else int(values[best])
    return Choice(node, gpus_on(left[node], task, value), float(delta[best]))


__all__ = [
    "MILLI",
    "PLACEMENTS",
    "Choice",
    "Task",
    "TaskMix",
    "best_fit",
    "fgd",
    "fits",
    "frag_amount",
    "frag_amount_unique",
    "gpus_on",
    "whole_gpu_order",
]
