"""Shape: a job's request reduced to what placement needs per node.

Two kinds, as cons_tres distinguishes them:
- fixed: every node gets the same GPUs, CPUs and memory (--gpus-per-node,
  --gres, --ntasks-per-node, or a single-node job);
- spread: a total GPU count (--gpus=N without a per-node count) that may be
  split unevenly over nodes, fewest nodes first.
CPUs are counted as logical CPUs and turned into cores per node with that
node's ThreadsPerCore (CR_Core: whole cores).
"""

from __future__ import annotations

from dataclasses import dataclass

from tide.defaults import TIME_INFINITE
from tide.model import Job, JobRequest, Partition

UNLIMITED = 365 * 86400  # planning horizon for jobs without a time limit


@dataclass(slots=True, frozen=True)
class Shape:
    nodes_min: int
    nodes_max: int
    gpus_per_node: int  # fixed shape; 0 for CPU-only
    total_gpus: int  # spread shape when spread=True
    spread: bool
    cpus_per_node: int  # logical CPUs per node (fixed shape)
    cpus_per_gpu: int  # spread shape: CPUs that travel with each GPU
    mem_per_node: int  # MB (fixed)
    mem_per_gpu: int  # MB (spread)
    exclusive: bool
    gpu_type: str
    enforce_binding: bool
    time_limit: int  # seconds
    mem_per_cpu: int = 0  # MB, as asked (an exclusive job gets it for every CPU of its nodes)

    @property
    def gpus(self) -> int:
        return self.total_gpus if self.spread else self.gpus_per_node * self.nodes_min

    def gpus_for(self, nodes: int) -> int:
        return self.total_gpus if self.spread else self.gpus_per_node * nodes


def time_limit(job: Job, part: Partition | None) -> int:
    """--time, else the partition's DefaultTime, else its MaxTime, else unlimited."""
    req = job.request.time_limit
    if req is not None and req >= TIME_INFINITE:  # --time=UNLIMITED: more than any MaxTime
        return UNLIMITED if part is None or part.max_time is None else TIME_INFINITE
    if req is not None:
        return int(req)
    if part is not None and part.default_time is not None:
        return part.default_time
    if part is not None and part.max_time is not None:
        return part.max_time
    return UNLIMITED


def shape_of(req: JobRequest, time_limit: int) -> Shape:
    lo, hi = req.node_range()
    explicit_nodes = req.nodes_min is not None
    gpn = req.gpus_per_node
    spread = False
    total = 0
    if gpn is None and req.gpus is not None:
        if lo == hi and lo == 1 and not explicit_nodes:
            spread = req.gpus > 0
            hi = max(hi, req.gpus) if spread else hi
        elif lo == hi:
            spread = lo > 1 and req.gpus % lo != 0
            gpn = 0 if spread else req.gpus // lo
        else:
            spread = True
        total = req.gpus
    elif gpn is None and req.gpus_per_task is not None:
        tasks_per_node = _tasks_per_node(req, lo)
        gpn = req.gpus_per_task * tasks_per_node
    gpn = gpn or 0
    if spread:
        lo = max(1, lo if explicit_nodes else 1)
        if not explicit_nodes:
            hi = max(1, total)
    tpn = _tasks_per_node(req, lo)
    cpus = max(1, req.cpus_per_task) * tpn
    if req.cpus_per_gpu:
        cpus = max(cpus, req.cpus_per_gpu * gpn) if not spread else cpus
    mem = 0
    if req.mem_per_node is not None:
        mem = req.mem_per_node
    elif req.mem_per_gpu is not None and not spread:
        mem = req.mem_per_gpu * gpn
    elif req.mem_per_cpu is not None:
        mem = req.mem_per_cpu * cpus
    return Shape(
        nodes_min=lo,
        nodes_max=max(lo, hi),
        gpus_per_node=gpn,
        total_gpus=total if spread else gpn * lo,
        spread=spread,
        cpus_per_node=cpus,
        cpus_per_gpu=req.cpus_per_gpu or 0,
        mem_per_node=mem,
        mem_per_gpu=req.mem_per_gpu or 0,
        exclusive=req.exclusive,
        gpu_type=req.gpu_type,
        enforce_binding=req.enforce_binding,
        time_limit=time_limit,
        mem_per_cpu=req.mem_per_cpu or 0,
    )


def _tasks_per_node(req: JobRequest, nodes: int) -> int:
    return req.tasks_per_node(nodes)


def job_gpus(job: Job) -> int:
    """GPUs the job asks for in all (at its smallest node count)."""
    req = job.request
    return req.total_gpus(req.node_range()[0])
