"""Decisions -> LaunchSpec: what the executor needs to start one job."""

from __future__ import annotations

import json
from typing import Any

from tide.defaults import TIME_INFINITE
from tide.exec.base import LaunchSpec, NodeLaunch
from tide.model import Cluster, JobRequest, SignalSpec
from tide.sched.types import Allocation
from tide.server.auth import job_token
from tide.store.models import JobRow


def tasks_per_node(req: JobRequest, nnodes: int) -> list[int]:
    """Block distribution (srun's default): the first nodes take the extra tasks."""
    if req.ntasks_per_node is not None and req.ntasks is None:
        return [req.ntasks_per_node] * nnodes
    total = req.task_count(nnodes)
    if req.ntasks_per_node is not None:
        total = min(total, req.ntasks_per_node * nnodes)
    base, extra = divmod(max(total, nnodes), nnodes)
    return [base + (1 if i < extra else 0) for i in range(nnodes)]


def launch_spec(
    row: JobRow,
    req: JobRequest,
    alloc: Allocation,
    partition: str,
    cluster: Cluster,
    url: str,
    secret: bytes,
    os_user: str = "",
) -> LaunchSpec:
    ntasks = tasks_per_node(req, len(alloc.nodes))
    nodes = []
    for na, n in zip(alloc.nodes, ntasks, strict=True):
        node = cluster.nodes[na.node]
        nodes.append(
            NodeLaunch(
                node=node.name,
                address=node.address or "127.0.0.1",
                gpus=na.gpus,
                cores=na.cores,
                mem_mb=na.mem,
                ntasks=n,
                threads_per_core=node.threads_per_core,
            )
        )
    env: dict[str, Any] = json.loads(row.env or "{}")
    env.update({"TIDE_URL": url, "TIDE_JOB_TOKEN": job_token(secret, row.id, row.restarts)})
    sig = req.signal
    return LaunchSpec(
        job_id=row.id,
        name=row.name,
        user=row.user,
        account=row.account,
        partition=partition,
        script=row.script,
        workdir=row.workdir or row.submit_dir,
        submit_dir=row.submit_dir,
        nodes=nodes,
        env=env,
        output=req.output,
        error=req.error,
        time_limit=req.time_limit if (req.time_limit or 0) < TIME_INFINITE else None,
        signal=_signal_text(sig),
        signal_lead=sig.lead if sig else 60,
        array_job_id=row.array_job_id,
        array_task_id=row.array_task_id,
        restart_count=row.restarts,
        cpus_per_task=req.cpus_per_task,
        ntasks=sum(ntasks),
        script_args=tuple(json.loads(row.script_args or "[]")),
        qos=row.qos or "",
        array_tasks=tuple(req.array.task_ids) if req.array is not None else (),
        gpus_per_node=req.gpus_per_node,
        os_user=os_user,
        mem_per_node=req.mem_per_node,
        mem_per_cpu=req.mem_per_cpu,
        mem_per_gpu=req.mem_per_gpu,
        tasks_asked=req.ntasks is not None or req.ntasks_per_node is not None,
        ntasks_per_node=req.ntasks_per_node,
    )


def _signal_text(sig: SignalSpec | None) -> str | None:
    """--signal as the executor takes it: "[{R|B}:]SIG" (B: the batch shell only)."""
    if sig is None:
        return None
    flags = ("B" if sig.batch_only else "") + ("R" if sig.reservation else "")
    return f"{flags}:{sig.signal}" if flags else sig.signal
