"""`srun` inside a tide batch job: launch a step's tasks across the job's nodes.

The shim in tide/exec/bin/srun runs `main` with the job's interpreter. The
allocation comes from the job directory ($TIDE_JOB_DIR/spec.json and
runtime.json), never from the network. Each node's share of the tasks runs
here as local processes, one process group per task, so a task's whole tree
can be signalled.

Semantics follow srun(1) (https://slurm.schedmd.com/srun.html) where tide has
them: block task distribution, -l labels, %-patterns for -o/-e, the return
value (a task's exit code, or 128 + signal). One deliberate difference: a
task that fails (non-zero exit or killed) ends the step at once, as with
Slurm's --kill-on-bad-exit=1: the other tasks get SIGTERM, then SIGKILL after
a short grace, so a hung rank never keeps a step alive.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tide.exec import jobdir, procs
from tide.exec.base import LaunchSpec, NodeLaunch
from tide.exec.env import StepInfo, TaskPlacement, filter_export, task_env
from tide.exec.outputs import PatternFields, resolve


class SrunError(Exception):
    """A user-facing error: printed as "srun: error: <message>"; srun exits with `code`."""

    def __init__(self, message: str, code: int = 1, node: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.node = node  # the node where starting a task failed, if any


# --- options ---------------------------------------------------------------

_VALUED = {
    "-n": "ntasks", "--ntasks": "ntasks",
    "-N": "nodes", "--nodes": "nodes",
    "--ntasks-per-node": "ntasks_per_node",
    "-c": "cpus_per_task", "--cpus-per-task": "cpus_per_task",
    "--gpus-per-task": "gpus_per_task",
    "--cpu-bind": "cpu_bind", "--cpu_bind": "cpu_bind",
    "--export": "export",
    "-o": "output", "--output": "output",
    "-e": "error", "--error": "error",
    "-D": "chdir", "--chdir": "chdir",
    "-J": "job_name", "--job-name": "job_name",
    "--open-mode": "open_mode",
}  # fmt: skip
_FLAGS = {"-l": "label", "--label": "label"}
# Accepted without effect: they change nothing a local step can honour, or
# they are already tide's behaviour (-u: output is never buffered by srun).
_QUIET_FLAGS = {"-u", "--unbuffered", "--exact", "--overlap", "-Q", "--quiet", "-v", "--verbose"}
_QUIET_VALUED = {"--mpi"}
_REFUSED = {"--multi-prog": "run one srun per program", "--pty": "tide runs batch steps only"}
# Known srun options that take a value but have no effect here (warned).
_IGNORED_VALUED = {
    "-m", "--distribution", "--mem", "--mem-per-cpu", "--mem-per-gpu", "--gres", "-G",
    "--gpus", "--gpus-per-node", "--gpu-bind", "--cpus-per-gpu", "-t", "--time", "-p",
    "--partition", "-A", "--account", "-q", "--qos", "-w", "--nodelist", "-x", "--exclude",
    "--jobid", "--propagate", "--network", "-i", "--input", "--signal", "--hint",
    "--threads-per-core", "--ntasks-per-gpu", "--ntasks-per-socket", "--ntasks-per-core",
    "--mem-bind", "-C", "--constraint", "-W", "--wait", "--comment", "--tres-per-task",
    "--reservation", "-r", "--relative", "--het-group", "--container", "--gres-flags",
}  # fmt: skip


@dataclass(slots=True)
class SrunOptions:
    ntasks: int | None = None
    nodes: tuple[int, int] | None = None  # min, max
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    gpus_per_task: int | None = None
    cpu_bind: str = ""
    export: str = "ALL"
    output: str = ""
    error: str = ""
    chdir: str = ""
    job_name: str = ""
    open_mode: str = "truncate"
    label: bool = False
    kill_on_bad_exit: bool = True
    command: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _positive(option: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise SrunError(f"{option}={value}: expected a whole number of at least 1, e.g. {option} 2")
    return int(value)


def _node_range(option: str, value: str) -> tuple[int, int]:
    lo, _, hi = value.partition("-")
    low = _positive(option, lo)
    high = _positive(option, hi) if hi else low
    if high < low:
        raise SrunError(f"{option}={value}: the maximum is below the minimum; write {option} {lo}")
    return low, high


def _set(opts: SrunOptions, dest: str, option: str, value: str) -> None:
    if dest in ("ntasks", "ntasks_per_node", "cpus_per_task"):
        setattr(opts, dest, _positive(option, value))
    elif dest == "gpus_per_task":
        if not value.isdigit():
            raise SrunError(f"{option}={value}: expected a GPU count, e.g. {option} 1")
        opts.gpus_per_task = int(value)
    elif dest == "nodes":
        opts.nodes = _node_range(option, value)
    else:
        setattr(opts, dest, value)


def _take_value(option: str, inline: str | None, args: Sequence[str], i: int) -> tuple[str, int]:
    if inline is not None:
        return inline, i
    if i + 1 >= len(args):
        raise SrunError(f"option {option} needs a value")
    return args[i + 1], i + 1


def _long(opts: SrunOptions, args: Sequence[str], i: int) -> int:
    option, eq, rest = args[i].partition("=")
    inline = rest if eq else None
    if option in _REFUSED:
        raise SrunError(f"{option} is not supported by tide: {_REFUSED[option]}")
    if option in ("-K", "--kill-on-bad-exit"):
        opts.kill_on_bad_exit = inline != "0"
    elif option in _VALUED:
        value, i = _take_value(option, inline, args, i)
        _set(opts, _VALUED[option], option, value)
    elif option in _FLAGS:
        setattr(opts, _FLAGS[option], True)
    elif option in _QUIET_VALUED:
        _, i = _take_value(option, inline, args, i)
    elif option in _IGNORED_VALUED:
        value, i = _take_value(option, inline, args, i)
        opts.warnings.append(f"{option}={value} has no effect in tide's local executor; ignored")
    elif option not in _QUIET_FLAGS:
        opts.warnings.append(f"{option} is not supported by tide; ignored")
    return i + 1


def _short(opts: SrunOptions, args: Sequence[str], i: int) -> int:
    """-n4, -n 4, -l, -lN2: flags may be bundled, a valued letter ends the bundle."""
    word = args[i]
    pos = 1
    while pos < len(word):
        option = f"-{word[pos]}"
        rest = word[pos + 1 :]
        if option in _FLAGS:
            setattr(opts, _FLAGS[option], True)
        elif option == "-K":
            opts.kill_on_bad_exit = rest != "0"
            return i + 1
        elif option in _VALUED or option in _IGNORED_VALUED:
            return _long(
                opts, [*args[:i], f"{option}={rest}" if rest else option, *args[i + 1 :]], i
            )
        elif option not in _QUIET_FLAGS:
            opts.warnings.append(f"{option} is not supported by tide; ignored")
        pos += 1
    return i + 1


def parse_args(args: Sequence[str]) -> SrunOptions:
    """srun's options up to the command; the command and its arguments are kept as given."""
    opts = SrunOptions()
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        i = _long(opts, args, i) if word.startswith("--") else _short(opts, args, i)
    opts.command = list(args[i:])
    if not opts.command:
        raise SrunError("no command given: write srun [options] <program> [args...]")
    return opts


# --- layout ----------------------------------------------------------------


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def _distribute(ntasks: int, caps: Sequence[int]) -> list[int]:
    """Block distribution: one task per node, then fill nodes in order up to their
    capacity, then (overcommit) round-robin."""
    counts = [1] * len(caps)
    left = ntasks - len(caps)
    for i, cap in enumerate(caps):
        add = min(left, max(cap - 1, 0))
        counts[i] += add
        left -= add
    i = 0
    while left > 0:
        counts[i % len(counts)] += 1
        left -= 1
        i += 1
    return counts


def _step_shape(
    nodes: Sequence[NodeLaunch], opts: SrunOptions, env: Mapping[str, str]
) -> tuple[int, list[int]]:
    """(number of nodes, tasks per node) for the step."""
    avail = len(nodes)
    names = ",".join(n.node for n in nodes)
    if opts.nodes is not None:
        low, high = opts.nodes
        if low > avail:
            raise SrunError(
                f"--nodes={low}: the job has {avail} node(s) ({names}); ask for at most {avail}"
            )
        nnodes = min(high, avail)
    elif opts.ntasks is not None:
        nnodes = min(opts.ntasks, avail)
    elif opts.ntasks_per_node is not None:
        nnodes = avail
    else:
        nnodes = min(_env_int(env, "SLURM_NNODES") or avail, avail)
    tpn = opts.ntasks_per_node
    ntasks = opts.ntasks
    if ntasks is None:
        if tpn is not None:
            ntasks = nnodes * tpn
        elif nnodes == avail and (from_env := _env_int(env, "SLURM_NTASKS")):
            ntasks = from_env
        else:
            ntasks = sum(n.ntasks for n in nodes[:nnodes])
    if ntasks < nnodes:
        opts.warnings.append(f"{ntasks} task(s) cannot use {nnodes} nodes; using {ntasks}")
        nnodes = ntasks
    if tpn is not None and ntasks > nnodes * tpn:
        raise SrunError(
            f"--ntasks={ntasks} with --ntasks-per-node={tpn} needs "
            f"{-(-ntasks // tpn)} nodes; the step has {nnodes}"
        )
    caps = [tpn or n.ntasks for n in nodes[:nnodes]]
    return nnodes, _distribute(ntasks, caps)


def layout(
    nodes: Sequence[NodeLaunch], opts: SrunOptions, env: Mapping[str, str], cpus_per_task: int
) -> tuple[list[NodeLaunch], list[int], list[TaskPlacement]]:
    """Place the step's tasks: (step nodes, tasks per node, placements by rank)."""
    nnodes, counts = _step_shape(nodes, opts, env)
    cpt = opts.cpus_per_task or _env_int(env, "SLURM_CPUS_PER_TASK") or cpus_per_task
    gpt = opts.gpus_per_task
    placements: list[TaskPlacement] = []
    for index, (node, count) in enumerate(zip(nodes[:nnodes], counts, strict=True)):
        if gpt and count * gpt > len(node.gpus):
            raise SrunError(
                f"--gpus-per-task={gpt} with {count} task(s) on {node.node} needs "
                f"{count * gpt} GPUs; the job has {len(node.gpus)} there"
            )
        for local in range(count):
            gpus = node.gpus[local * gpt : (local + 1) * gpt] if gpt else node.gpus
            if opts.cpu_bind.lower().startswith("none") or not node.cores:
                cores = node.cores
            else:
                cores = tuple(node.cores[(local * cpt + k) % len(node.cores)] for k in range(cpt))
            placements.append(TaskPlacement(len(placements), index, local, gpus, cores))
    return list(nodes[:nnodes]), counts, placements


# --- output ----------------------------------------------------------------


class Sinks:
    """Output files of a step, opened once per distinct path and shared by tasks."""

    def __init__(self, mode: str) -> None:
        self.mode = "ab" if mode == "append" else "wb"
        self.files: dict[Path, IO[bytes]] = {}
        self.locks: dict[int, threading.Lock] = {}

    def open(self, path: Path) -> IO[bytes]:
        if path not in self.files:
            try:
                self.files[path] = open(path, self.mode)  # noqa: SIM115 - closed in close()
            except OSError as e:
                raise SrunError(f"cannot open output file {path}: {e.strerror}") from None
        return self.files[path]

    def lock(self, fd: int) -> threading.Lock:
        return self.locks.setdefault(fd, threading.Lock())

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def _pump(pipe: IO[bytes], fd: int, prefix: bytes, lock: threading.Lock) -> None:
    """Copy a task's output to `fd`, each line prefixed (srun -l)."""
    for line in iter(pipe.readline, b""):
        with lock:
            os.write(fd, prefix + line if line.endswith(b"\n") else prefix + line + b"\n")
    pipe.close()


# --- the step --------------------------------------------------------------

_FORWARDED = {
    signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
    signal.SIGUSR1, signal.SIGUSR2, signal.SIGCONT, signal.SIGALRM,
}  # fmt: skip
_ENDING = {signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM}


@dataclass(slots=True)
class Task:
    place: TaskPlacement
    node: NodeLaunch
    proc: subprocess.Popen[bytes]
    code: int | None = None  # srun-style: exit code, or 128 + signal


@dataclass(slots=True)
class Step:
    job_dir: Path
    spec: LaunchSpec
    runtime: dict[str, Any]
    opts: SrunOptions
    step_id: int
    nodes: list[NodeLaunch]
    counts: list[int]
    places: list[TaskPlacement]
    tasks: list[Task] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)  # the job's config.json

    @property
    def name(self) -> str:
        return f"{self.spec.job_id}.{self.step_id}"

    def save(self) -> None:
        jobdir.write_json_atomic(self.job_dir / jobdir.STEPS / f"{self.step_id}.json", self.record)


def _targets(step: Step, place: TaskPlacement, node: NodeLaunch, sinks: Sinks, cwd: str):
    """(stdout, stderr) for a task: None inherits srun's own."""
    fields = PatternFields(
        job_id=step.spec.job_id,
        name=step.opts.job_name or step.spec.name,
        user=step.spec.user,
        array_job_id=step.spec.array_job_id,
        array_task_id=step.spec.array_task_id,
        node=node.node,
        node_id=place.node_index,
        task_id=place.rank,
        step=step.step_id,
        restart_count=step.spec.restart_count,
    )
    out = sinks.open(resolve(step.opts.output, fields, cwd)) if step.opts.output else None
    err = sinks.open(resolve(step.opts.error, fields, cwd)) if step.opts.error else out
    return out, err


def _task_command(step: Step, node: NodeLaunch, place: TaskPlacement) -> list[str]:
    """A task's argv. Tasks on another machine start through the executor's
    launcher (config.json "remote_launcher", e.g. `python -m tide.exec.ray.task`):
    srun runs that stand-in here, and it relays output, signals and the exit
    status, so everything below treats local and remote tasks alike."""
    launcher = step.config.get("remote_launcher")
    if not launcher or node.node == step.config.get("local_node"):
        return step.opts.command
    cores = ",".join(str(c) for c in place.cores)
    return [*launcher, node.node, cores, "--", *step.opts.command]


def _spawn(step: Step, base_env: Mapping[str, str], sinks: Sinks) -> list[threading.Thread]:
    """Start every task; returns the label threads (started after all forks)."""
    info = StepInfo(
        step_id=step.step_id,
        nodes=tuple(step.nodes),
        counts=tuple(step.counts),
        job_nodes=tuple(step.spec.nodes),
        master_port=int(step.runtime.get("master_port", 0)),
    )
    cwd = step.opts.chdir or os.getcwd()
    cpus = list(step.runtime.get("cpus") or procs.machine_cpus())
    width = len(str(info.ntasks - 1))
    pumps: list[tuple[IO[bytes], int, bytes, threading.Lock]] = []
    for place in step.places:
        node = step.nodes[place.node_index]
        out, err = _targets(step, place, node, sinks, cwd)
        pipe = subprocess.PIPE if step.opts.label else None
        cores = place.cores

        def prepare(cores: tuple[int, ...] = cores) -> None:
            procs.reset_signals_in_child()
            procs.pin(cores, cpus)

        try:
            proc = subprocess.Popen(
                _task_command(step, node, place),
                env=task_env(base_env, info, place),
                cwd=cwd,
                stdin=None if place.rank == 0 else subprocess.DEVNULL,
                stdout=pipe or out,
                stderr=pipe or err,
                process_group=0,
                preexec_fn=prepare,
            )
        except OSError as e:
            # Slurm reports a failed execve as the task exiting with status 2.
            raise SrunError(
                f"{node.node}: task {place.rank}: cannot run {step.opts.command[0]!r}: "
                f"{e.strerror}",
                code=2,
                node=node.node,
            ) from None
        step.tasks.append(Task(place, node, proc))
        if step.opts.label:
            prefix = f"{place.rank:>{width}}: ".encode()
            for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
                fd = sink.fileno() if sink else (1 if stream is proc.stdout else 2)
                assert stream is not None
                pumps.append((stream, fd, prefix, sinks.lock(fd)))
    threads = [threading.Thread(target=_pump, args=p, daemon=True) for p in pumps]
    for t in threads:
        t.start()
    return threads


def _terminate(tasks: Sequence[Task], sig: int) -> None:
    for t in tasks:
        if t.code is None:
            procs.killpg_quietly(t.proc.pid, sig)


def _sweep_groups(tasks: Sequence[Task]) -> None:
    """At step end, kill what tasks left behind in their groups (as Slurm ends a step).

    Only groups that still hold a process of our session: a group id whose
    members are all gone could in principle name someone else's group later.
    """
    sid = os.getsid(0)
    table = procs.process_table()
    live_groups = {p.pgid for p in table.values() if p.sid == sid and not p.zombie}
    for t in tasks:
        if t.proc.pid in live_groups:
            procs.killpg_quietly(t.proc.pid, signal.SIGKILL)


def _describe(code: int) -> str:
    if code > 128:
        try:
            return f"killed by {signal.Signals(code - 128).name}"
        except ValueError:
            return f"killed by signal {code - 128}"
    return f"exited with exit code {code}"


def _wait(step: Step, supervisor_pid: int, grace: float) -> Task | None:
    """Wait for all tasks; on the first failure tear the rest down. Returns it."""
    waited = _FORWARDED | {signal.SIGCHLD}
    first_bad: Task | None = None
    kill_at: float | None = None
    while any(t.code is None for t in step.tasks):
        got = signal.sigtimedwait(waited, 0.1)
        if got is not None and got.si_signo in _FORWARDED and got.si_pid != supervisor_pid:
            # The supervisor signals tasks itself; anything else we pass on, as srun does.
            _terminate(step.tasks, got.si_signo)
            if got.si_signo in _ENDING and kill_at is None:
                kill_at = time.monotonic() + grace
        for t in step.tasks:
            if t.code is None and (rc := t.proc.poll()) is not None:
                t.code = rc if rc >= 0 else 128 - rc
                if t.code != 0 and first_bad is None:
                    first_bad = t
                    if step.opts.kill_on_bad_exit:
                        _terminate(step.tasks, signal.SIGCONT)
                        _terminate(step.tasks, signal.SIGTERM)
                        kill_at = time.monotonic() + grace
        if kill_at is not None and time.monotonic() >= kill_at:
            _terminate(step.tasks, signal.SIGKILL)
    return first_bad


def _abort(step: Step, error: SrunError) -> None:
    """A task could not be started: end the ones that were, and record the step's end."""
    _terminate(step.tasks, signal.SIGKILL)
    for t in step.tasks:
        t.proc.wait()
    step.record.update(
        ended=time.time(), exit_code=error.code, failed_node=error.node or step.nodes[0].node
    )
    step.save()


def run_step(job_dir: Path, opts: SrunOptions, environ: Mapping[str, str]) -> int:
    spec = jobdir.load_spec(job_dir)
    runtime = jobdir.read_json(job_dir / jobdir.RUNTIME) or {}
    base_env = filter_export(environ, opts.export)
    if opts.cpus_per_task is not None:
        base_env["SLURM_CPUS_PER_TASK"] = str(opts.cpus_per_task)
    step_nodes, counts, places = layout(spec.nodes, opts, base_env, spec.cpus_per_task)
    for w in dict.fromkeys(opts.warnings):
        print(f"srun: warning: {w}", file=sys.stderr, flush=True)
    step_id = jobdir.next_step_id(job_dir)
    step = Step(job_dir, spec, runtime, opts, step_id, step_nodes, counts, places)
    step.config = jobdir.read_json(job_dir / jobdir.CONFIG) or {}
    step.record = {
        "step_id": step.step_id,
        "srun_pid": os.getpid(),
        "started": time.time(),
        "ntasks": sum(counts),
        "nodes": [n.node for n in step_nodes],
        "kill_on_bad_exit": opts.kill_on_bad_exit,  # the supervisor ends the job on a failure
    }
    step.save()
    # Block the signals we wait for before any thread or child exists; children unblock.
    signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED | {signal.SIGCHLD})
    sinks = Sinks(opts.open_mode)
    try:
        try:
            threads = _spawn(step, base_env, sinks)
        except SrunError as e:
            _abort(step, e)
            raise
        step.record["running"] = time.time()
        step.record["tasks"] = [
            {"rank": t.place.rank, "node": t.node.node, "pid": t.proc.pid} for t in step.tasks
        ]
        step.save()
        bad = _wait(
            step, int(runtime.get("supervisor_pid", 0)), float(runtime.get("step_grace", 3))
        )
        _sweep_groups(step.tasks)
        for t in threads:
            t.join(timeout=1.0)
    finally:
        sinks.close()
    code = bad.code if bad is not None and bad.code is not None else 0
    step.record.update(ended=time.time(), exit_code=code)
    if bad is not None:
        step.record.update(failed_rank=bad.place.rank, failed_node=bad.node.node)
        print(
            f"srun: error: {bad.node.node}: task {bad.place.rank}: {_describe(code)}",
            file=sys.stderr,
            flush=True,
        )
        if opts.kill_on_bad_exit and len(step.tasks) > 1:
            print(
                f"srun: error: step {step.name}: terminated the other tasks",
                file=sys.stderr,
                flush=True,
            )
    step.save()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    job_dir = os.environ.get(jobdir.ENV_JOB_DIR, "")
    try:
        if not job_dir or not (Path(job_dir) / jobdir.SPEC).is_file():
            raise SrunError(
                "not inside a tide job (TIDE_JOB_DIR is unset or stale); "
                "srun runs from a batch script submitted with tide"
            )
        return run_step(Path(job_dir), parse_args(args), os.environ)
    except SrunError as e:
        print(f"srun: error: {e}", file=sys.stderr, flush=True)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
