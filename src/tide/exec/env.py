"""The environment a job sees: the batch script's, and each srun task's.

Variable names and value formats follow the OUTPUT ENVIRONMENT VARIABLES of
sbatch(1) and srun(1) (https://slurm.schedmd.com/sbatch.html,
https://slurm.schedmd.com/srun.html), so scripts written for Slurm and
libraries that read SLURM_* (torch, Lightning, submitit, MPI) work unchanged.
The torch.distributed variables (MASTER_ADDR, RANK, ...) are tide's addition
for srun tasks; docs/executor.md has the full table.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from tide.exec.base import LaunchSpec, NodeLaunch
from tide.hostlist import compress

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# Ports for MASTER_PORT sit below Linux's ephemeral range (32768-60999) so an
# outgoing connection elsewhere on the machine does not take the job's port.
PORT_BASE, PORT_SPAN = 20000, 12000
_STALE_PREFIXES = ("SLURM_", "SLURMD_", "TIDE_")
# Set by the controller in LaunchSpec.env for this job (not stale): where the
# server is and the job-scoped token `tide notify` uses.
_CONTROLLER_VARS = frozenset({"TIDE_URL", "TIDE_JOB_TOKEN"})


def tasks_per_node(counts: Sequence[int]) -> str:
    """[2, 2, 2, 1] -> "2(x3),1" (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE)."""
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[i]:
            j += 1
        run = j - i + 1
        parts.append(f"{counts[i]}(x{run})" if run > 1 else str(counts[i]))
        i = j + 1
    return ",".join(parts)


def csv(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def node_address(node: NodeLaunch) -> str:
    return node.address or "127.0.0.1"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def choose_master_port(job_id: int) -> int:
    """A port for the job's rendezvous: 20000 + job_id % 12000, or the next free one."""
    for i in range(64):
        port = PORT_BASE + (job_id + i) % PORT_SPAN
        if _port_free(port):
            return port
    return PORT_BASE + job_id % PORT_SPAN


def _user_base(spec_env: Mapping[str, str], uid: int, own_identity: bool = False) -> dict[str, str]:
    """The user's exported environment, minus job variables left from elsewhere.

    A job submitted from inside another job would otherwise inherit that job's
    SLURM_PROCID, SLURM_STEP_ID, ... and confuse libraries that read them.
    A job run as its OS user (`own_identity`) gets that user's HOME, USER and
    LOGNAME whatever the submitting shell had (a token may be used from anywhere).
    """
    env = {
        k: v
        for k, v in spec_env.items()
        if not k.startswith(_STALE_PREFIXES) or k in _CONTROLLER_VARS
    }
    with contextlib.suppress(KeyError):
        pw = pwd.getpwuid(uid)
        put = env.__setitem__ if own_identity else env.setdefault
        put("HOME", pw.pw_dir)
        put("USER", pw.pw_name)
        put("LOGNAME", pw.pw_name)
        env.setdefault("SHELL", pw.pw_shell or "/bin/sh")
    env.setdefault("PATH", DEFAULT_PATH)
    return env


@dataclass(slots=True, frozen=True)
class BatchContext:
    """What the supervisor knows beyond the LaunchSpec."""

    job_dir: str
    bin_dir: str  # holds the srun shim
    python: str  # interpreter the shim runs srun with
    pythonpath: str  # directory holding the tide package
    cluster: str
    submit_host: str
    uid: int
    started: float
    master_port: int
    checkpoint_dir: str


def batch_env(spec: LaunchSpec, ctx: BatchContext) -> dict[str, str]:
    """The batch script's environment (it runs on spec.nodes[0])."""
    first = spec.nodes[0]
    names = [n.node for n in spec.nodes]
    env = _user_base(spec.env, ctx.uid, own_identity=bool(spec.os_user))
    env["PATH"] = f"{ctx.bin_dir}:{env['PATH']}" if env["PATH"] else ctx.bin_dir
    env.update(
        {
            "ENVIRONMENT": "BATCH",
            "SLURM_JOB_ID": str(spec.job_id),
            "SLURM_JOBID": str(spec.job_id),
            "SLURM_JOB_NAME": spec.name,
            "SLURM_JOB_USER": spec.user,
            "SLURM_JOB_UID": str(ctx.uid),
            "SLURM_JOB_ACCOUNT": spec.account,
            "SLURM_JOB_PARTITION": spec.partition,
            "SLURM_CLUSTER_NAME": ctx.cluster,
            "SLURM_SUBMIT_DIR": spec.submit_dir,
            "SLURM_SUBMIT_HOST": ctx.submit_host,
            "SLURM_JOB_NODELIST": compress(names),
            "SLURM_NODELIST": compress(names),
            "SLURM_JOB_NUM_NODES": str(len(names)),
            "SLURM_NNODES": str(len(names)),
            "SLURM_TASKS_PER_NODE": tasks_per_node([n.ntasks for n in spec.nodes]),
            "SLURM_JOB_CPUS_PER_NODE": tasks_per_node([n.cpus for n in spec.nodes]),
            "SLURM_CPUS_PER_TASK": str(spec.cpus_per_task),
            "SLURM_CPUS_ON_NODE": str(first.cpus),
            "SLURM_GPUS_ON_NODE": str(len(first.gpus)),
            "SLURM_JOB_GPUS": csv(first.gpus),
            "CUDA_VISIBLE_DEVICES": csv(first.gpus),
            "SLURMD_NODENAME": first.node,
            "SLURM_TOPOLOGY_ADDR": first.node,
            "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
            "SLURM_NODEID": "0",
            "SLURM_PROCID": "0",
            "SLURM_LOCALID": "0",
            "SLURM_GTIDS": "0",
            "SLURM_RESTART_COUNT": str(spec.restart_count),
            "SLURM_JOB_START_TIME": str(int(ctx.started)),
            "TIDE_RESTART_COUNT": str(spec.restart_count),
            "TIDE_CHECKPOINT_DIR": ctx.checkpoint_dir,
            "TIDE_JOB_DIR": ctx.job_dir,
            "TIDE_MASTER_PORT": str(ctx.master_port),
            "TIDE_PYTHON": ctx.python,
            "TIDE_PYTHONPATH": ctx.pythonpath,
        }
    )
    if spec.tasks_asked:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(spec.ntasks)
    if spec.ntasks_per_node is not None:
        env["SLURM_NTASKS_PER_NODE"] = str(spec.ntasks_per_node)
    if spec.time_limit is not None:
        env["SLURM_JOB_END_TIME"] = str(int(ctx.started) + spec.time_limit)
    if spec.qos:
        env["SLURM_JOB_QOS"] = spec.qos
    if spec.gpus_per_node is not None:
        env["SLURM_GPUS_PER_NODE"] = str(spec.gpus_per_node)
    for name, mb in (("NODE", spec.mem_per_node), ("CPU", spec.mem_per_cpu),
                     ("GPU", spec.mem_per_gpu)):  # fmt: skip
        if mb is not None:
            env[f"SLURM_MEM_PER_{name}"] = str(mb)
    if spec.array_task_id is not None:
        env.update(array_env(spec))
    return env


def array_env(spec: LaunchSpec) -> dict[str, str]:
    """An array task's variables, as sbatch(1) lists them: the step is the array's
    --array=A-B:STEP stride (1 when the ids have none, e.g. a list)."""
    ids = sorted(spec.array_tasks) or [spec.array_task_id or 0]
    gaps = {b - a for a, b in pairwise(ids)}
    return {
        "SLURM_ARRAY_JOB_ID": str(spec.array_job_id or spec.job_id),
        "SLURM_ARRAY_TASK_ID": str(spec.array_task_id),
        "SLURM_ARRAY_TASK_COUNT": str(len(ids)),
        "SLURM_ARRAY_TASK_MIN": str(ids[0]),
        "SLURM_ARRAY_TASK_MAX": str(ids[-1]),
        "SLURM_ARRAY_TASK_STEP": str(gaps.pop() if len(gaps) == 1 else 1),
    }


@dataclass(slots=True, frozen=True)
class StepInfo:
    """One srun step, as its tasks see it."""

    step_id: int
    nodes: tuple[NodeLaunch, ...]  # the step's nodes, in order
    counts: tuple[int, ...]  # tasks per step node
    job_nodes: tuple[NodeLaunch, ...]  # the whole allocation (for MASTER_ADDR names)
    master_port: int

    @property
    def ntasks(self) -> int:
        return sum(self.counts)


@dataclass(slots=True, frozen=True)
class TaskPlacement:
    rank: int  # SLURM_PROCID / RANK
    node_index: int  # SLURM_NODEID / GROUP_RANK, index into StepInfo.nodes
    local_rank: int  # SLURM_LOCALID / LOCAL_RANK
    gpus: tuple[int, ...]  # CUDA_VISIBLE_DEVICES
    cores: tuple[int, ...]  # node core ids to pin to


def _master_addr(base: Mapping[str, str], step: StepInfo) -> str:
    """The user's MASTER_ADDR if set (a node name becomes that node's address),
    else the step's first node. Scripts often export the first node's *name*,
    which only resolves on a real cluster."""
    given = base.get("MASTER_ADDR", "")
    by_name = {n.node: node_address(n) for n in step.job_nodes}
    if given:
        return by_name.get(given, given)
    return node_address(step.nodes[0])


def task_env(base: Mapping[str, str], step: StepInfo, t: TaskPlacement) -> dict[str, str]:
    """One task's environment: srun's own plus step, task and torch.distributed variables."""
    node = step.nodes[t.node_index]
    names = [n.node for n in step.nodes]
    local_size = step.counts[t.node_index]
    first_rank = sum(step.counts[: t.node_index])
    env = dict(base)
    env.update(
        {
            "SLURM_STEP_ID": str(step.step_id),
            "SLURM_STEPID": str(step.step_id),
            "SLURM_STEP_NUM_TASKS": str(step.ntasks),
            "SLURM_STEP_NUM_NODES": str(len(names)),
            "SLURM_STEP_NODELIST": compress(names),
            "SLURM_STEP_TASKS_PER_NODE": tasks_per_node(step.counts),
            "SLURM_STEP_GPUS": csv(t.gpus),
            "SLURM_NTASKS": str(step.ntasks),
            "SLURM_NPROCS": str(step.ntasks),
            "SLURM_NNODES": str(len(names)),
            "SLURM_NODELIST": compress(names),
            "SLURM_TASKS_PER_NODE": tasks_per_node(step.counts),
            "SLURM_PROCID": str(t.rank),
            "SLURM_LOCALID": str(t.local_rank),
            "SLURM_NODEID": str(t.node_index),
            "SLURM_GTIDS": csv(range(first_rank, first_rank + local_size)),
            "SLURMD_NODENAME": node.node,
            "SLURM_TOPOLOGY_ADDR": node.node,
            "SLURM_CPUS_ON_NODE": str(node.cpus),
            "SLURM_GPUS_ON_NODE": str(len(node.gpus)),
            "CUDA_VISIBLE_DEVICES": csv(t.gpus),
            "MASTER_ADDR": _master_addr(base, step),
            "MASTER_PORT": base.get("MASTER_PORT") or str(step.master_port),
            "WORLD_SIZE": str(step.ntasks),
            "RANK": str(t.rank),
            "LOCAL_RANK": str(t.local_rank),
            "LOCAL_WORLD_SIZE": str(local_size),
            "GROUP_RANK": str(t.node_index),
            "NODE_RANK": str(t.node_index),
            "GROUP_WORLD_SIZE": str(len(names)),
        }
    )
    return env


def filter_export(env: Mapping[str, str], export: str) -> dict[str, str]:
    """srun --export: ALL (default), NONE, or [ALL,]NAME[=value],...

    Without ALL only the named variables, plus SLURM_* and tide's own, pass.
    """
    keep = {k: v for k, v in env.items() if k.startswith(_STALE_PREFIXES)}
    items = [i for i in export.split(",") if i]
    upper = [i.upper() for i in items]
    result = dict(env) if ("ALL" in upper or not items) else keep
    for item in items:
        if item.upper() in ("ALL", "NONE"):
            continue
        name, eq, value = item.partition("=")
        if eq:
            result[name] = value
        elif name in env:
            result[name] = env[name]
    if "PATH" not in result:
        result["PATH"] = DEFAULT_PATH
    return result


def this_host() -> str:
    return socket.gethostname()


def current_uid() -> int:
    return os.getuid()
