"""FGD's inflation experiment in the twin (Weng et al., USENIX ATC'23, §6):
tasks sampled from a trace arrive one by one on an empty cluster, never
finish, and are placed by one placement rule (tide.sched.frag) or left out
when no node can take them; arrivals stop once the GPUs they asked for reach
`tune` times the cluster's GPUs (1.3 in the artifact). The result is the
share of the cluster's GPUs allocated as a function of the share asked for,
as the artifact's analysis_allo_discrete.csv reports it (column k: GPUs
allocated when the arrived tasks' GPU requests first reach k % of the
cluster's GPUs).

GPUs are counted in milli-GPUs per GPU, so the openb trace's GPU-sharing
pods (one GPU, gpu_milli < 1000) keep their fraction here: this experiment
places shares of a GPU, which the rest of tide (whole GPUs) does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tide.model import Cluster
from tide.sched.frag import MILLI, PLACEMENTS, Choice, Task, TaskMix, best_fit, fgd, frag_amount
from tide.sim.workload.base import SimJob


@dataclass(slots=True)
class Pool:
    """Free capacity per node while tasks are placed (the twin's state):
    milli-GPUs free per GPU (0 in slots beyond a node's GPUs), milli-CPU,
    memory (MiB), GPU model index (-1: none)."""

    left: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    model: np.ndarray
    models: list[str]
    capacity: int  # milli-GPUs in the cluster

    @classmethod
    def of(cls, cluster: Cluster) -> Pool:
        nodes = cluster.nodes
        slots = max((len(n.gpus) for n in nodes), default=0)
        left = np.zeros((len(nodes), max(1, slots)), dtype=np.int64)
        models: list[str] = []
        model = np.full(len(nodes), -1, dtype=np.int64)
        for i, n in enumerate(nodes):
            left[i, : len(n.gpus)] = MILLI
            if n.gpus:
                kind = n.gpus[0].type
                if kind not in models:
                    models.append(kind)
                model[i] = models.index(kind)
        cpu = np.array([n.cpus * 1000 for n in nodes], dtype=np.int64)
        mem = np.array([n.real_memory for n in nodes], dtype=np.int64)
        return cls(left, cpu, mem, model, models, int(left.sum()))

    def take(self, task: Task, choice: Choice) -> None:
        """Allocate the task where `choice` says; ValueError when it does not fit
        (the placement rules never choose such a place)."""
        n = choice.node
        need = task.milli if task.gpus else 0
        if self.cpu[n] < task.cpu or self.mem[n] < task.mem:
            raise ValueError(f"node {n}: CPU or memory short for {task}")
        if len(set(choice.gpus)) != task.gpus or any(self.left[n, g] < need for g in choice.gpus):
            raise ValueError(f"node {n}: GPUs {choice.gpus} cannot hold {task}")
        self.cpu[n] -= task.cpu
        self.mem[n] -= task.mem
        for g in choice.gpus:
            self.left[n, g] -= need

    @property
    def allocated(self) -> int:
        return self.capacity - int(self.left.sum())


def tasks_of(jobs: Iterable[SimJob], models: Sequence[str]) -> list[Task]:
    """openb pods (tide.sim.workload.openb, kept as read) as tasks: exact
    milli-CPU and GPU share from the trace's fields, gpu_spec as allowed
    models (a model the cluster does not have matches no node)."""
    out = []
    for job in jobs:
        req = job.request
        cpu = int(job.original.get("cpu_milli", req.cpus_per_task * 1000))
        gpus, mem = req.gpus_per_node or 0, req.mem_per_node or 0
        milli = int(job.original.get("gpu_milli", MILLI)) if gpus else MILLI
        spec = [m for m in (req.constraint or "").split("|") if m]
        allowed = frozenset(models.index(m) if m in models else -2 for m in spec) or None
        out.append(Task(cpu, mem, gpus, milli, allowed))
    return out


@dataclass(slots=True)
class Curve:
    """GPUs asked for and allocated (% of the cluster's) after each arrival."""

    arrived: list[float] = field(default_factory=list)
    allocated: list[float] = field(default_factory=list)
    placed: int = 0
    failed: int = 0
    first_failure: float | None = None  # % allocated when a task first found no node

    def at(self, pct: float) -> float:
        """% allocated when the arrived requests first reached `pct` % (the
        artifact's column `pct`); the last value when they never did."""
        k = int(np.searchsorted(np.asarray(self.arrived), pct - 1e-9))
        return self.allocated[min(k, len(self.allocated) - 1)]


Placer = Callable[[Pool, Task], Choice | None]


def placer(name: str, mix: TaskMix) -> Placer:
    """The placement rule called `name` (tide.sched.frag.PLACEMENTS); FGD keeps
    every node's fragmentation and recomputes only the node it changed."""
    if name == "bestfit":
        return lambda p, t: best_fit(p.left, p.cpu, p.mem, p.model, t)
    if name != "fgd":
        raise ValueError(f"placement {name!r}: choose one of {', '.join(PLACEMENTS)}")
    cache: dict[int, np.ndarray] = {}

    def place(p: Pool, t: Task) -> Choice | None:
        now = cache.get(id(p))
        if now is None:
            now = cache[id(p)] = frag_amount(p.left, p.cpu, mix)
        choice = fgd(p.left, p.cpu, p.mem, p.model, t, mix, now)
        if choice is not None:
            n = choice.node
            row = p.left[n : n + 1].copy()
            for g in choice.gpus:
                row[0, g] -= t.milli
            now[n] = frag_amount(row, p.cpu[n : n + 1] - t.cpu, mix)[0]
        return choice

    return place


def inflate(pool: Pool, tasks: Sequence[Task], place: Placer, seed: int = 42,
            tune: float = 1.3, progress: Callable[[int], None] | None = None) -> Curve:  # fmt: skip
    """Sample tasks (with replacement, seeded) until their GPU requests reach
    `tune` x the cluster's GPUs; place each one or count it failed."""
    if not any(t.gpus for t in tasks):  # else the arrivals would never stop
        raise ValueError("inflate: no task asks for a GPU; give tasks with gpus > 0")
    rng = np.random.default_rng(seed)
    curve, asked, k = Curve(), 0, 0
    while asked < tune * pool.capacity:
        task = tasks[int(rng.integers(len(tasks)))]
        asked += task.gpu_milli
        choice = place(pool, task)
        if choice is None:
            curve.failed += 1
            if curve.first_failure is None:
                curve.first_failure = 100.0 * pool.allocated / pool.capacity
        else:
            pool.take(task, choice)
            curve.placed += 1
        curve.arrived.append(100.0 * asked / pool.capacity)
        curve.allocated.append(100.0 * pool.allocated / pool.capacity)
        k += 1
        if progress is not None and k % 1000 == 0:
            progress(k)
    return curve


__all__ = ["Curve", "Pool", "inflate", "placer", "tasks_of"]
