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


def check(cluster: Cluster, req: JobRequest, partitions: list[Partition]) -> None:
    """Raise ApiError unless at least one partition could ever run the job."""
    errors: list[ApiError] = []
    for p in partitions:
        try:
            _check_partition(cluster, req, p)
            return
        except ApiError as e:
            errors.append(e)
    raise errors[0]


def _check_partition(cluster: Cluster, req: JobRequest, p: Partition) -> None:
    shape = shape_of(req, req.time_limit or 0)
    by_name = {n.name: n for n in cluster.nodes}
    nodes = [by_name[n] for n in p.nodes if n in by_name and n not in req.exclude]
    for name in req.nodelist:
        if name not in by_name:
            raise bad_request(
                f"--nodelist: node {name!r} does not exist",
                "nodelist",
                "name nodes that `tide nodes` lists",
            )
        if name not in p.nodes:
            raise bad_request(
                f"--nodelist: node {name!r} is not in partition {p.name!r}",
                "nodelist",
                f"pick nodes of {p.name!r} or another partition with -p",
            )
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
    _check_sizes(nodes, shape, p)


def _check_sizes(nodes: list[Node], shape: Shape, p: Partition) -> None:
    if not nodes:
        raise bad_request(
            f"partition {p.name!r} has no usable node", "partition", "pick another partition"
        )
    gpu_max = max(n.gpu_count for n in nodes)
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
    cpu_max = max(n.cpus for n in nodes)
    if shape.cpus_per_node > cpu_max:
        raise bad_request(
            f"{shape.cpus_per_node} CPUs per node requested, but no node in partition "
            f"{p.name!r} has more than {cpu_max}",
            "cpus_per_task",
            f"ask for at most {cpu_max} CPUs per node (--cpus-per-task x tasks per node)",
        )
    mem_max = max(n.real_memory for n in nodes)
    if shape.mem_per_node > mem_max:
        raise bad_request(
            f"--mem={shape.mem_per_node}M per node requested, but no node in partition "
            f"{p.name!r} has more than {mem_max}M",
            "mem",
            f"ask for at most --mem={mem_max}M",
        )
    fit = [
        n
        for n in nodes
        if (shape.spread or n.gpu_count >= shape.gpus_per_node) and n.cpus >= shape.cpus_per_node
    ]
    if len(fit) < shape.nodes_min:
        raise bad_request(
            f"--nodes={shape.nodes_min} requested, but partition {p.name!r} has only {len(fit)} "
            f"node(s) that fit the per-node request",
            "nodes",
            f"ask for at most --nodes={len(fit)}, or fewer resources per node",
        )
    if shape.spread:
        total = sum(n.gpu_count for n in nodes)
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
