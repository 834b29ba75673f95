"""Turn the final option state into a JobRequest, applying the rules sbatch
applies across options (sbatch(1) and its option checks):

- --mem, --mem-per-cpu and --mem-per-gpu exclude each other; so do
  --cpus-per-task and --cpus-per-gpu, --gres=gpu and --gpus-per-node, and
  --exclusive and --oversubscribe. Two given in the script or on the command
  line are an error; one from the environment yields to one given there.
- --nodelist without --nodes asks for as many nodes as the list names.
- --ntasks below the node count lowers the node count (with a warning).
- more tasks than --ntasks-per-node times the nodes allow is an error, as is
  --time-min above --time.
- the job name defaults to "wrap" for --wrap, else the script's file name,
  else "sbatch".
"""

from __future__ import annotations

import os

from tide.jobspec.errors import JobSpecError
from tide.jobspec.state import State
from tide.model import JobRequest


def build(state: State, script_path: str | None) -> JobRequest:
    _exclusive_groups(state)
    gpu_type = _gpu_type(state)
    nodes_min, nodes_max = _node_counts(state)
    _check_tasks(state, nodes_min, nodes_max)
    _check_times(state)
    g = state.get
    gpus_per_node = g("gres") or g("gpus-per-node")
    return JobRequest(
        name=_name(state, script_path),
        nodes_min=nodes_min,
        nodes_max=nodes_max,
        ntasks=g("ntasks"),
        ntasks_per_node=g("ntasks-per-node"),
        gpus=_count_of(g("gpus")),
        gpus_per_node=_count_of(gpus_per_node),
        gpus_per_task=_count_of(g("gpus-per-task")),
        gpu_type=gpu_type,
        cpus_per_task=g("cpus-per-task", 1),
        cpus_per_gpu=g("cpus-per-gpu"),
        mem_per_node=g("mem"),
        mem_per_gpu=g("mem-per-gpu"),
        mem_per_cpu=g("mem-per-cpu"),
        time_limit=g("time"),
        time_min=g("time-min"),
        partitions=g("partition", ()),
        account=g("account", ""),
        qos=g("qos", ""),
        nice=g("nice", 0),
        exclusive=_exclusive(state),
        constraint=g("constraint", ""),
        nodelist=g("nodelist", ()),
        exclude=g("exclude", ()),
        switches=g("switch-count"),
        switches_wait=g("switch-wait"),
        enforce_binding=g("enforce-binding", False),
        begin=g("begin"),
        dependency=g("dependency"),
        array=g("array"),
        requeue=g("requeue"),
        signal=g("signal"),
        hold=g("hold", False),
        output=g("output", ""),
        error=g("error", ""),
        chdir=g("chdir", ""),
        export=g("export", "ALL"),
        reservation=g("reservation", ""),
        priority=g("priority"),
        comment=g("comment", ""),
        warnings=tuple(state.warnings),
    )


def _count_of(typed: tuple[str, int] | None) -> int | None:
    return None if typed is None else typed[1]


def _exclusive_groups(state: State) -> None:
    """sbatch's "only one of these" rules; see the module docstring."""
    mem = ("mem", "mem-per-cpu", "mem-per-gpu")
    _only_one(state, mem, "--mem, --mem-per-cpu and --mem-per-gpu")
    _only_one(state, ("cpus-per-task", "cpus-per-gpu"), "--cpus-per-task and --cpus-per-gpu")
    if state.get("gres") is not None and state.has("gpus-per-node"):
        raise JobSpecError(
            "--gres", None, "--gres=gpu and --gpus-per-node both set GPUs per node; give one"
        )
    if state.given("exclusive") and state.given("oversubscribe"):
        raise JobSpecError(
            "--exclusive", None, "--exclusive and --oversubscribe contradict each other; give one"
        )


def _only_one(state: State, keys: tuple[str, ...], listed: str) -> None:
    given = [k for k in keys if state.given(k)]
    if len(given) > 1:
        raise JobSpecError(f"--{given[0]}", None, f"{listed} are mutually exclusive; give one")
    if given:
        for k in keys:
            if k != given[0]:
                state.drop(k)  # an SBATCH_* variable loses to the script / command line
        return
    from_env = [k for k in keys if state.from_env(k)]
    if len(from_env) > 1:
        raise JobSpecError(
            f"--{from_env[0]}", None, f"{listed} are mutually exclusive, also in SBATCH_* variables"
        )


def _gpu_type(state: State) -> str:
    keys = ("gpus", "gpus-per-node", "gres", "gpus-per-task")
    typed = {(k, state.get(k)[0]) for k in keys if state.get(k) and state.get(k)[0]}
    kinds = sorted({t for _, t in typed})
    if len(kinds) > 1:
        listed = ", ".join(f"{t} (--{k})" for k, t in sorted(typed))
        raise JobSpecError("--gpus", None, f"conflicting GPU types {listed}; a job takes one type")
    return kinds[0] if kinds else ""


def _node_counts(state: State) -> tuple[int | None, int | None]:
    lo, hi = state.get("nodes", (None, None))
    nodelist = state.get("nodelist", ())
    if lo is None and nodelist:
        lo = len(nodelist)  # sbatch asks for every listed node
    ntasks = state.get("ntasks")
    if lo is not None and ntasks is not None:
        if hi is not None and ntasks < hi:
            hi = max(ntasks, 1)
        if ntasks < lo:
            state.warn(f"--ntasks={ntasks} is fewer than --nodes={lo}; "
                       f"asking for {ntasks} node(s), one task each")
            lo = hi = ntasks
    return lo, hi


def _check_tasks(state: State, nodes_min: int | None, nodes_max: int | None) -> None:
    ntasks, per_node = state.get("ntasks"), state.get("ntasks-per-node")
    nodes = nodes_max or nodes_min
    if ntasks is None or per_node is None or nodes is None or ntasks <= per_node * nodes:
        return
    raise JobSpecError(
        "--ntasks", str(ntasks),
        f"more tasks than --nodes={nodes} x --ntasks-per-node={per_node} = {per_node * nodes} "
        "can hold; raise --nodes or --ntasks-per-node, or lower --ntasks",
    )


def _check_times(state: State) -> None:
    limit, least = state.get("time"), state.get("time-min")
    if limit is not None and least is not None and least > limit:
        raise JobSpecError(
            "--time-min", None, f"--time-min ({least // 60} min) is above --time "
            f"({limit // 60} min); lower --time-min or raise --time"
        )


def _exclusive(state: State) -> bool:
    excl = state.settings.get("exclusive")
    over = state.settings.get("oversubscribe")
    if excl is None or (over is not None and over.seq > excl.seq):
        return False
    return bool(excl.value == "exclusive")


def _name(state: State, script_path: str | None) -> str:
    if state.get("job-name"):
        return str(state.get("job-name"))
    if state.has("wrap"):
        return "wrap"
    if script_path:
        return os.path.basename(script_path) or "sbatch"
    return "sbatch"
