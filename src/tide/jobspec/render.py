"""JobRequest -> sbatch options, so a request can be shown or resubmitted.

Every value is written as "--name=value" (one word each, so no quoting is
needed when the list becomes an argv). Fields at their defaults are left out.
Reading the result back with parse_args gives the same request for requests
in the form parse_args produces (see tests/jobspec/test_roundtrip.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

from tide.hostlist import compress, index_ranges
from tide.jobspec.timefmt import format_duration, format_mem
from tide.jobspec.values import PRIORITY_TOP
from tide.model import Dependency, DependencyType, JobRequest, SignalSpec


def to_argv(req: JobRequest) -> list[str]:
    out: list[str] = []

    def opt(name: str, value: object) -> None:
        out.append(f"--{name}={value}")

    opt("job-name", req.name)
    nodes = _nodes(req)
    if nodes:
        opt("nodes", nodes)
    for name, value in (
        ("ntasks", req.ntasks), ("ntasks-per-node", req.ntasks_per_node),
        ("cpus-per-gpu", req.cpus_per_gpu),
    ):
        if value is not None:
            opt(name, value)
    if req.cpus_per_task != 1:
        opt("cpus-per-task", req.cpus_per_task)
    gpu_type = f"{req.gpu_type}:" if req.gpu_type else ""
    for name, value in (
        ("gpus", req.gpus), ("gpus-per-node", req.gpus_per_node),
        ("gpus-per-task", req.gpus_per_task),
    ):
        if value is not None:
            opt(name, f"{gpu_type}{value}")
    for name, mb in (
        ("mem", req.mem_per_node), ("mem-per-gpu", req.mem_per_gpu),
        ("mem-per-cpu", req.mem_per_cpu),
    ):
        if mb is not None:
            opt(name, format_mem(mb))
    for name, seconds in (("time", req.time_limit), ("time-min", req.time_min)):
        if seconds is not None:
            opt(name, format_duration(seconds))
    out.extend(_placement(req))
    out.extend(_scheduling(req))
    out.extend(_files(req))
    return out


def _nodes(req: JobRequest) -> str:
    lo, hi = req.nodes_min, req.nodes_max
    if lo is None:
        return f"1-{hi}" if hi is not None else ""
    if hi is None and req.nodelist and len(req.nodelist) == lo:
        return ""  # implied by --nodelist
    return str(lo) if hi is None or hi == lo else f"{lo}-{hi}"


def _placement(req: JobRequest) -> list[str]:
    out: list[str] = []
    if req.partitions:
        out.append(f"--partition={','.join(req.partitions)}")
    for name, text in (
        ("account", req.account), ("qos", req.qos), ("constraint", req.constraint),
        ("reservation", req.reservation),
    ):
        if text:
            out.append(f"--{name}={text}")
    if req.exclusive:
        out.append("--exclusive")
    if req.nodelist:
        out.append(f"--nodelist={compress(req.nodelist)}")
    if req.exclude:
        out.append(f"--exclude={compress(req.exclude)}")
    if req.switches is not None:
        wait = "" if req.switches_wait is None else f"@{format_duration(req.switches_wait)}"
        out.append(f"--switches={req.switches}{wait}")
    if req.enforce_binding:
        out.append("--gres-flags=enforce-binding")
    return out


def _scheduling(req: JobRequest) -> list[str]:
    out: list[str] = []
    if req.nice:
        out.append(f"--nice={req.nice}")
    if req.priority is not None:
        out.append("--priority=" + ("TOP" if req.priority == PRIORITY_TOP else str(req.priority)))
    if req.begin is not None:
        when = datetime.fromtimestamp(int(req.begin), UTC)
        out.append(f"--begin={when:%Y-%m-%dT%H:%M:%S}")
    if req.dependency is not None and req.dependency.items:
        out.append(f"--dependency={format_dependency(req.dependency)}")
    if req.array is not None:
        limit = "" if req.array.max_running is None else f"%{req.array.max_running}"
        out.append(f"--array={index_ranges(req.array.task_ids)}{limit}")
    if req.requeue is not None:
        out.append("--requeue" if req.requeue else "--no-requeue")
    if req.signal is not None:
        out.append(f"--signal={format_signal(req.signal)}")
    if req.hold:
        out.append("--hold")
    return out


def _files(req: JobRequest) -> list[str]:
    out = [
        f"--{name}={text}"
        for name, text in (("output", req.output), ("error", req.error), ("chdir", req.chdir))
        if text
    ]
    if req.export != "ALL":
        out.append(f"--export={req.export}")
    return out


def format_dependency(dep: Dependency) -> str:
    """Dependency -> "afterok:1:2,after:3+5" (delays in whole minutes)."""
    parts = []
    for item in dep.items:
        if item.type is DependencyType.SINGLETON:
            parts.append("singleton")
            continue
        delay = f"+{item.delay // 60}" if item.delay else ""
        parts.append(":".join([item.type.value, *(f"{j}{delay}" for j in item.job_ids)]))
    return ("?" if dep.any_of else ",").join(parts)


def format_signal(sig: SignalSpec) -> str:
    flags = ("R" if sig.reservation else "") + ("B" if sig.batch_only else "")
    return f"{flags + ':' if flags else ''}{sig.signal}@{sig.lead}"
