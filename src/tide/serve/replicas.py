"""Replicas are jobs: a replica is submitted, scheduled (same core, same
limits, same pending reasons), launched, accounted and cancelled exactly as
a batch job is. This module turns a service into its replica jobs and reads
their states back."""

from __future__ import annotations

import shlex
import socket
from dataclasses import dataclass
from typing import Any

from tide.model.service import ServiceSpec
from tide.server.auth import Principal
from tide.server.schemas import SubmitBody
from tide.store import jobs as jobrepo

SERVICE_ACTOR = Principal("tide-serve", "admin")  # the controller acting for a service
FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
         "OUT_OF_MEMORY", "DEADLINE")  # fmt: skip


@dataclass(slots=True, frozen=True)
class JobView:
    state: str
    nodelist: str
    reason: str
    exit_code: int | None
    start: float | None
    fail_cause: str


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the replica binds it a moment later)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def output_name(service: str, job_id: int | str) -> str:
    """Replicas write stdout and stderr here, in their working directory."""
    return f"tide-{service}-{job_id}.out"


def job_name(service: str, replica_id: int) -> str:
    return f"{service}.r{replica_id}"


def submit_body(
    spec: ServiceSpec, replica_id: int, port: int, bind: str, workdir: str
) -> SubmitBody:
    """The replica's job: its command as a batch script, one node, its shape."""
    job: dict[str, Any] = {
        "name": job_name(spec.name, replica_id),
        "nodes_min": 1,
        "nodes_max": 1,
        "ntasks": 1,
        "cpus_per_task": spec.cpus,
        "requeue": False,  # a failed replica is replaced by a new one, not requeued
        "output": output_name(spec.name, "%j"),
    }
    if spec.gpus:
        job["gpus_per_node"] = spec.gpus
        job["gpu_type"] = spec.gpu_type
    if spec.mem:
        job["mem_per_node"] = spec.mem
    for key, value in (("account", spec.account), ("qos", spec.qos)):
        if value:
            job[key] = value
    if spec.partition:
        job["partitions"] = [spec.partition]
    env = dict(spec.env)
    env.update({
        "PORT": str(port), "HOST": bind, "SERVICE_NAME": spec.name,
        "REPLICA_ID": str(replica_id),
    })  # fmt: skip
    script = (
        "#!/bin/bash\n"
        f"# tide service {shlex.quote(spec.name)}, replica {replica_id}\n"
        f"{spec.command}\n"
    )
    return SubmitBody(script=script, job=job, env=env, cwd=workdir or "/tmp")


def job_views(s: Any, job_ids: list[int]) -> dict[int, JobView]:
    if not job_ids:
        return {}
    rows = jobrepo.columns_by_id(s, job_ids, "state", "nodelist", "reason", "exit_code",
                                 "start_time", "fail_cause")  # fmt: skip
    return {r[0]: JobView(r[1], r[2] or "", r[3] or "", r[4], r[5], r[6] or "") for r in rows}


def first_node(nodelist: str) -> str:
    from tide.hostlist import expand

    names = expand(nodelist) if nodelist else []
    return names[0] if names else ""


def ended_reason(view: JobView | None) -> str:
    if view is None:
        return "its job is gone"
    text = f"job {view.state}"
    if view.exit_code is not None:
        text += f", exit code {view.exit_code}"
    if view.fail_cause:
        text += f": {view.fail_cause}"
    return text
