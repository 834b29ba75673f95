"""Alibaba GPU cluster trace v2023 ("openb", FGD, USENIX ATC'23) reader.

Pods CSV columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec,
qos, pod_phase, creation_time, deletion_time, scheduled_time (seconds from
the trace start; scheduled_time is empty for pods that stayed Pending).
Nodes CSV columns: sn, cpu_milli, memory_mib, gpu, model.

Mapping (docs/workloads.md says it once, with the reasons):
- a pod is a one-node job: cpus_per_task = ceil(cpu_milli / 1000),
  mem = memory_mib (MiB taken as Slurm MB), gpus_per_node = num_gpu;
- a GPU-sharing pod (num_gpu = 1, gpu_milli < 1000) asks for one whole GPU
  and keeps its fraction in original["gpu_milli"] (fractional="whole"), or
  is dropped (fractional="drop"); tide allocates whole GPUs;
- gpu_spec "A|B" becomes the node-feature constraint "A|B" (nodes carry their
  GPU model as a feature);
- submit = creation_time, duration = deletion_time - scheduled_time, and the
  time limit is that duration (the trace has no user estimates);
- Pending pods never ran: dropped (pending="drop"), or kept with duration
  deletion_time - creation_time (pending="keep");
- account = the pod's QoS class in lower case (ls, be, burstable,
  guaranteed), user "openb".
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

from tide.model import Cluster, Gpu, JobRequest, Node, Partition
from tide.sim.workload.base import SimJob, Workload, WorkloadError, WorkloadInfo

POD_COLUMNS = (
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
    "pod_phase", "creation_time", "deletion_time", "scheduled_time",
)  # fmt: skip
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


def _check_columns(path: Path, header: Sequence[str] | None, want: tuple[str, ...]) -> None:
    missing = [c for c in want if c not in (header or [])]
    if missing:
        raise WorkloadError(f"{path}: missing column(s) {', '.join(missing)}; is it an openb CSV?")


def _int(row: dict[str, str], key: str, where: str) -> int:
    try:
        return int(row[key])
    except (ValueError, TypeError):
        raise WorkloadError(f"{where}: column {key!r}: {row[key]!r} is not an integer") from None


def read_openb(
    pods_csv: str | Path,
    *,
    fractional: Literal["whole", "drop"] = "whole",
    pending: Literal["drop", "keep"] = "drop",
    cpu_pods: Literal["keep", "drop"] = "keep",
) -> Workload:
    """Stream the pods of an openb pod list as one-node SimJobs, in file
    (creation-time) order; the id is the pod's row number from 0."""
    p = Path(pods_csv)
    if not p.is_file():
        raise WorkloadError(f"openb pod list {str(p)!r} does not exist")
    for opt, val, allowed in (("fractional", fractional, ("whole", "drop")),
                              ("pending", pending, ("drop", "keep")),
                              ("cpu_pods", cpu_pods, ("keep", "drop"))):  # fmt: skip
        if val not in allowed:
            raise WorkloadError(f"{opt}={val!r}: use one of {', '.join(allowed)}")
    info = WorkloadInfo(source=str(p), kind="openb")
    return Workload(info, lambda inf: _pods(p, inf, fractional, pending, cpu_pods))


def _pods(path: Path, info: WorkloadInfo, fractional: str, pending: str, cpu_pods: str
          ) -> Iterator[SimJob]:  # fmt: skip
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        _check_columns(path, reader.fieldnames, POD_COLUMNS)
        for row in reader:
            where = f"{path}:{reader.line_num}"
            seq = info.read
            info.read += 1
            job = _pod(row, seq, where, info, fractional, pending, cpu_pods)
            if job is not None:
                yield job


def _pod(row: dict[str, str], seq: int, where: str, info: WorkloadInfo, fractional: str,
         pending: str, cpu_pods: str) -> SimJob | None:  # fmt: skip
    gpus, milli = _int(row, "num_gpu", where), _int(row, "gpu_milli", where)
    if gpus == 0 and cpu_pods == "drop":
        info.drop("CPU-only pod (cpu_pods='drop')")
        return None
    shared = gpus == 1 and 0 < milli < 1000
    if shared and fractional == "drop":
        info.drop("GPU-sharing pod, gpu_milli < 1000 (fractional='drop')")
        return None
    created, deleted = _int(row, "creation_time", where), _int(row, "deletion_time", where)
    if row["scheduled_time"].strip():
        duration = deleted - _int(row, "scheduled_time", where)
    elif pending == "drop":
        info.drop("never scheduled (Pending; pending='drop')")
        return None
    else:
        duration = deleted - created
        info.adjust("Pending pod kept: duration = deletion - creation")
    if shared:
        info.adjust("GPU-sharing pod asks for one whole GPU")
    duration = max(0, duration)
    spec = row["gpu_spec"].strip()
    request = JobRequest(
        name=row["name"],
        nodes_min=1,
        nodes_max=1,
        ntasks=1,
        gpus_per_node=gpus,
        cpus_per_task=max(1, math.ceil(_int(row, "cpu_milli", where) / 1000)),
        mem_per_node=_int(row, "memory_mib", where),
        time_limit=max(1, duration),
        constraint=spec,
        account=row["qos"].lower(),
    )
    original: dict[str, object] = {"qos": row["qos"], "pod_phase": row["pod_phase"],
                                   "cpu_milli": _int(row, "cpu_milli", where)}  # fmt: skip
    if shared:
        original["gpu_milli"] = milli
    return SimJob(id=seq, submit=float(created), duration=float(duration), request=request,
                  user="openb", account=request.account, original=original)  # fmt: skip


def openb_cluster(nodes_csv: str | Path, *, name: str = "openb") -> Cluster:
    """One tide Node per CSV row: cpus = cpu_milli / 1000, real_memory =
    memory_mib, `gpu` GPUs of type `model`, the model also as a feature.
    One default partition "default" with every node; flat topology."""
    p = Path(nodes_csv)
    if not p.is_file():
        raise WorkloadError(f"openb node list {str(p)!r} does not exist")
    nodes: list[Node] = []
    with p.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        _check_columns(p, reader.fieldnames, NODE_COLUMNS)
        for row in reader:
            where = f"{p}:{reader.line_num}"
            cpus = max(1, _int(row, "cpu_milli", where) // 1000)
            model = row["model"].strip()
            nodes.append(Node(
                name=row["sn"], cpus=cpus, cores_per_socket=cpus,
                real_memory=_int(row, "memory_mib", where),
                gpus=[Gpu(index=i, type=model) for i in range(_int(row, "gpu", where))],
                features=(model,) if model else (), partitions=("default",),
            ))  # fmt: skip
    part = Partition("default", nodes=tuple(n.name for n in nodes), default=True)
    return Cluster(name=name, nodes=nodes, partitions=[part])
