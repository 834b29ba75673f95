"""Submit-time checks: reject what can never run, like sbatch does.

Slurm refuses a job at submission when no node of its partition could ever
hold it ("Requested node configuration is not available"); waiting would be
forever. tide says which field asks too much and what the largest node
offers, so the fix is obvious. Limits that may clear later (partition time
limits, association limits) are left to the scheduler's pending reasons.
"""

from __future__ import annotations

from tide.model import Cluster, JobRequest, Node, Partition
from tide.sched.shape import Shape, shape_of
from tide.server.errors import ApiError, bad_request


def check(
    cluster: Cluster,
    req: JobRequest,
    partitions: list[Partition],
    cache: dict[tuple[object, ...], Summary] | None = None,
) -> None:
    """Raise ApiError unless at least one partition could ever run the job.
    `cache` (kept by the caller for one static cluster) holds each partition's
    candidate nodes per (GPU type, constraint), so a submission does not walk
    every node of a big cluster."""
    errors: list[ApiError] = []
    for p in partitions:
        try:
            _check_partition(cluster, req, p, {} if cache is None else cache)
            return
        except ApiError as e:
            errors.append(e)
    raise errors[0]


def _check_partition(
    cluster: Cluster, req: JobRequest, p: Partition, cache: dict[tuple[object, ...], Summary]
) -> None:
    shape = shape_of(req, req.time_limit or 0)
    if req.nodelist or req.exclude:
        _check_nodelist(cluster, req, p)
    key = (p.name, shape.gpu_type, req.constraint)
    summary = cache.get(key)
    if summary is None:
        summary = Summary(_candidates(cluster, req, p, shape))
        cache[key] = summary
    if req.exclude:
        summary = Summary([n for n in summary.nodes if n.name not in req.exclude])
    _check_sizes(summary, shape, p)


def _check_nodelist(cluster: Cluster, req: JobRequest, p: Partition) -> None:
    by_name = {n.name for n in cluster.nodes}
    members = set(p.nodes)
    for name in req.nodelist:
        if name not in by_name:
            raise bad_request(
                f"--nodelist: node {name!r} does not exist",
                "nodelist",
                "name nodes that `tide nodes` lists",
            )
        if name not in members:
            raise bad_request(
                f"--nodelist: node {name!r} is not in partition {p.name!r}",
                "nodelist",
                f"pick nodes of {p.name!r} or another partition with -p",
            )


def _candidates(cluster: Cluster, req: JobRequest, p: Partition, shape: Shape) -> list[Node]:
    """Nodes of the partition with the GPU type and features asked for."""
    by_name = {n.name: n for n in cluster.nodes}
    nodes = [by_name[n] for n in p.nodes if n in by_name]
    if shape.gpu_type:
        typed = [n for n in nodes if any(g.type == shape.gpu_type for g in n.gpus)]
        if not typed:
            types = sorted({g.type for n in nodes for g in n.gpus if g.type})
            raise bad_request(
                f"--gres/--gpus: GPU type {shape.gpu_type!r} is not in partition {p.name!r}",
                "gpu_type",
                f"use one of: {', '.join(types) or '(untyped GPUs: omit the type)'}",
            )
        nodes = typed
    if req.constraint:
        nodes = [n for n in nodes if _features_ok(n, req.constraint)]
        if not nodes:
            raise bad_request(
                f"--constraint={req.constraint!r}: no node of partition {p.name!r} has "
                "these features",
                "constraint",
                "check the features `tide nodes --json` lists",
            )
    return nodes


class Summary:
    """A candidate node set with the numbers the checks need, computed once."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.gpu_max = max((n.gpu_count for n in nodes), default=0)
        self.cpu_max = max((n.cpus for n in nodes), default=0)
        self.mem_max = max((n.real_memory for n in nodes), default=0)
        self.total_gpus = sum(n.gpu_count for n in nodes)
        self._fits: dict[tuple[int, int], int] = {}

    def __bool__(self) -> bool:
        return bool(self.nodes)

    def fit_count(self, gpus: int, cpus: int) -> int:
        key = (gpus, cpus)
        if key not in self._fits:
            self._fits[key] = sum(1 for n in self.nodes if n.gpu_count >= gpus and n.cpus >= cpus)
        return self._fits[key]


def _check_sizes(nodes: Summary, shape: Shape, p: Partition) -> None:
    if not nodes:
        raise bad_request(
            f"partition {p.name!r} has no usable node", "partition", "pick another partition"
        )
    gpu_max, cpu_max, mem_max = nodes.gpu_max, nodes.cpu_max, nodes.mem_max
    if not shape.spread and shape.gpus_per_node > gpu_max:
        raise bad_request(
            f"{shape.gpus_per_node} GPUs per node requested, but no node in partition "
            f"{p.name!r} has more than {gpu_max}",
            "gpus_per_node",
            f"ask for at most {gpu_max} GPUs per node (e.g. --nodes="
            f"{-(-shape.gpus_per_node // max(1, gpu_max))} --gpus-per-node={gpu_max})"
            if gpu_max
            else f"partition {p.name!r} has no GPUs: pick a GPU partition with -p",
        )
    if shape.cpus_per_node > cpu_max:
        raise bad_request(
            f"{shape.cpus_per_node} CPUs per node requested, but no node in partition "
            f"{p.name!r} has more than {cpu_max}",
            "cpus_per_task",
            f"ask for at most {cpu_max} CPUs per node (--cpus-per-task x tasks per node)",
        )
    if shape.mem_per_node > mem_max:
        raise bad_request(
            f"--mem={shape.mem_per_node}M per node requested, but no node in partition "
            f"{p.name!r} has more than {mem_max}M",
            "mem",
            f"ask for at most --mem={mem_max}M",
        )
    fit = nodes.fit_count(0 if shape.spread else shape.gpus_per_node, shape.cpus_per_node)
    if fit < shape.nodes_min:
        raise bad_request(
            f"--nodes={shape.nodes_min} requested, but partition {p.name!r} has only {fit} "
            f"node(s) that fit the per-node request",
            "nodes",
            f"ask for at most --nodes={fit}, or fewer resources per node",
        )
    if shape.spread:
        total = nodes.total_gpus
        if shape.total_gpus > total:
            raise bad_request(
                f"--gpus={shape.total_gpus} requested, but partition {p.name!r} has only "
                f"{total} GPUs",
                "gpus",
                f"ask for at most --gpus={total}",
            )


def _features_ok(node: Node, expr: str) -> bool:
    """Slurm constraint syntax, the common subset: a&b, a|b (no brackets or counts)."""
    have = set(node.features)
    for alt in expr.split("|"):
        if all(f.strip() in have for f in alt.split("&") if f.strip()):
            return True
    return False
