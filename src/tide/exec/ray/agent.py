"""The node agent: one Ray actor per tide node, pinned to its Ray node.

It does two things there, both with tide's local pieces:

- **batch jobs** whose first node this is: a LocalExecutor on this node's
  state directory starts the job's supervisor (tide.exec.supervisor), which
  runs the script, enforces limits, carries out signal/cancel requests and
  writes exit.json, exactly as on one machine;
- **srun tasks** of jobs whose batch script runs on another node: srun there
  starts `python -m tide.exec.ray.task`, which asks this agent to start the
  task here (start_task), then relays its output and exit (task_poll) and
  signals (task_signal). A task whose relay stops asking for LEASE seconds is
  killed: its srun is gone.

The agent is a detached actor, so jobs outlive the controller as they do
with the local executor. If the agent dies with its Ray node, a watchdog
process it started (tide.exec.ray.watchdog) sees its pipe close and kills
every process the agent started here: a node Ray gave up on must not keep
running a job tide is about to requeue elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tide.exec import jobdir, procs
from tide.exec.local import LocalExecutor

LEASE = 10.0  # seconds a remote task lives without its relay asking about it
MARKER = "TIDE_RAY_AGENT"  # env of every process an agent starts: its state dir
NODE_ID = "RAY_NODE_ID"  # env of a job's processes: the Ray node they run on


# Ray settings a task relay must share with this node's Ray processes, though
# the job's environment (the user's) does not carry them. Without the first,
# Ray on one machine dials the network interface's address, not 127.0.0.1.
RELAY_ENV = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",)


def relay_env() -> list[str]:
    """`--ray-env NAME=VALUE` arguments for the relay, from this process's env."""
    return [a for k in RELAY_ENV if k in os.environ for a in ("--ray-env", f"{k}={os.environ[k]}")]


class _NodeLocal(LocalExecutor):
    """The local executor, telling srun how to reach the job's other nodes."""

    def __init__(self, state_dir: Path, node: str, launcher: list[str], **kw: Any) -> None:
        super().__init__(state_dir, **kw)
        self.node = node
        self.launcher = launcher

    def _config(self, spec: Any) -> dict[str, object]:
        config = super()._config(spec)
        config.update(remote_launcher=self.launcher, local_node=self.node)
        if spec.checkpoint_dir:
            config["checkpoint_dir"] = spec.checkpoint_dir
        return config


@dataclass(slots=True)
class _Task:
    job_id: int
    proc: subprocess.Popen[bytes]
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    seen: float = field(default_factory=time.monotonic)  # the relay's last question
    code: int | None = None  # Popen.returncode once ended and fully read


class NodeAgent:
    """Runs on one Ray node; every method is a remote call from the executor
    or from a task relay. Threaded (max_concurrency), so calls may overlap."""

    def __init__(self, node: str, state_dir: str, relay_args: list[str], **local: Any) -> None:
        self.node = node
        self.state_dir = str(Path(state_dir).resolve())
        Path(self.state_dir).mkdir(parents=True, exist_ok=True)
        os.environ[MARKER] = self.state_dir  # inherited by supervisors started here
        # srun's command for a task on another node: this node's interpreter
        # (the controller's path need not exist here) running the relay.
        launcher = [sys.executable, "-m", "tide.exec.ray.task", *relay_args, *relay_env()]
        self.local = _NodeLocal(Path(self.state_dir), node, launcher, **local)
        self.tasks: dict[str, _Task] = {}
        self.cond = threading.Condition()
        # ends offered until the controller has stored them (see poll, forget)
        self.offered: dict[int, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        self.offered_lock = threading.Lock()
        self.watchdog = subprocess.Popen(
            [sys.executable, "-m", "tide.exec.ray.watchdog", self.state_dir],
            stdin=subprocess.PIPE,
            start_new_session=True,  # not killed with our process group; it outlives us
        )
        threading.Thread(target=self._expire_leases, daemon=True).start()

    def info(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "node_id": self._node_id(),
            "pid": os.getpid(),
            "state_dir": self.state_dir,
        }

    # -- batch jobs (the job's first node) ----------------------------------

    def launch(self, spec: dict[str, Any]) -> None:
        job = jobdir.spec_from_json(spec)
        job.env = {**job.env, NODE_ID: self._node_id()}  # the script's own node
        with self.offered_lock:  # a requeued job's earlier end here is old news
            self.offered.pop(job.job_id, None)
        self.local.launch(job)

    def _node_id(self) -> str:
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def signal(self, job_id: int, sig: int) -> None:
        self.local.signal(job_id, sig)

    def cancel(self, job_id: int, grace: float) -> None:
        self.local.cancel(job_id, grace)

    def poll(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Ended jobs not yet stored: (ExitReport fields, ExitRecord JSON).
        An end is offered again on every poll until the controller forgets the
        job, which it does once its store has the end: a reply lost to a
        timed-out get, or an end the controller could not store (a busy
        database on a loaded machine), must not be lost (the job would stay
        COMPLETING for good)."""
        with self.offered_lock:
            for r in self.local.poll():
                rec = self.local.exit_record(r.job_id)
                fields = {
                    "job_id": r.job_id,
                    "exit_code": r.exit_code,
                    "signal": r.signal,
                    "reason": r.reason,
                    "node": r.node,
                }
                self.offered[r.job_id] = (fields, rec.to_json() if rec is not None else None)
            return list(self.offered.values())

    def running(self) -> list[int]:
        return sorted(self.local.running())

    def jobs(self) -> dict[int, list[str]]:
        """Running jobs with all their nodes, batch node first (from spec.json),
        for a controller that restarted and must know where each job runs."""
        out = {}
        for job_id in self.local.running():
            try:
                out[job_id] = [n.node for n in self.local.launched_spec(job_id).nodes]
            except (OSError, ValueError, KeyError):
                out[job_id] = [self.node]
        return out

    def forget(self, job_id: int) -> None:
        with self.offered_lock:
            self.offered.pop(job_id, None)
        self.local.forget(job_id)

    def steps(self, job_id: int) -> list[dict[str, Any]]:
        return jobdir.read_steps(self.local.job_dir(job_id))

    # -- srun tasks of jobs whose script runs elsewhere ---------------------

    def start_task(
        self, key: str, argv: list[str], env: dict[str, str], cwd: str, cores: list[int]
    ) -> int:
        """Start one task here, in its own process group; returns its pid."""
        job_id = int(env.get("SLURM_JOB_ID", "0") or 0)
        cpus = procs.machine_cpus()

        def prepare() -> None:
            procs.reset_signals_in_child()
            procs.pin(cores, cpus)

        proc = subprocess.Popen(
            argv,
            env={**env, MARKER: self.state_dir, NODE_ID: self._node_id()},
            cwd=cwd if os.path.isdir(cwd) else "/tmp",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
            preexec_fn=prepare,
        )
        task = _Task(job_id, proc)
        with self.cond:
            self.tasks[key] = task
        readers = [
            threading.Thread(target=self._read, args=(proc.stdout, task.out), daemon=True),
            threading.Thread(target=self._read, args=(proc.stderr, task.err), daemon=True),
        ]
        for t in readers:
            t.start()
        threading.Thread(target=self._reap, args=(task, readers), daemon=True).start()
        return proc.pid

    def _read(self, pipe: IO[bytes], buf: bytearray) -> None:
        for chunk in iter(lambda: os.read(pipe.fileno(), 65536), b""):
            with self.cond:
                buf.extend(chunk)
                self.cond.notify_all()
        pipe.close()

    def _reap(self, task: _Task, readers: list[threading.Thread]) -> None:
        code = task.proc.wait()
        for t in readers:
            t.join(timeout=5.0)
        # As at the end of a Slurm step: what the task left in its group goes.
        procs.killpg_quietly(task.proc.pid, signal.SIGKILL)
        with self.cond:
            task.code = code
            self.cond.notify_all()

    def task_poll(
        self, key: str, out_at: int, err_at: int, wait: float
    ) -> tuple[bytes, bytes, int | None]:
        """New output since the offsets, and the exit (Popen.returncode) once
        the task has ended; waits up to `wait` s for either. Renews the lease."""
        deadline = time.monotonic() + wait
        with self.cond:
            task = self.tasks.get(key)
            if task is None:
                return b"", b"tide: the task is unknown on this node (its lease ran out)\n", 1
            task.seen = time.monotonic()
            while (task.code is None and len(task.out) <= out_at and len(task.err) <= err_at) and (
                left := deadline - time.monotonic()
            ) > 0:
                self.cond.wait(left)
            out, err, code = bytes(task.out[out_at:]), bytes(task.err[err_at:]), task.code
            if code is not None:
                del self.tasks[key]  # everything was handed over
            return out, err, code

    def task_signal(self, key: str, sig: int) -> None:
        with self.cond:
            task = self.tasks.get(key)
        if task is not None and task.code is None:
            procs.killpg_quietly(task.proc.pid, sig)

    def end_tasks(self, job_id: int) -> int:
        """SIGKILL this node's tasks of a job that ended (gang teardown)."""
        with self.cond:
            doomed = [t for t in self.tasks.values() if t.job_id == job_id and t.code is None]
        for t in doomed:
            procs.killpg_quietly(t.proc.pid, signal.SIGCONT)
            procs.killpg_quietly(t.proc.pid, signal.SIGKILL)
        return len(doomed)

    def _expire_leases(self) -> None:
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            with self.cond:
                stale = [k for k, t in self.tasks.items() if now - t.seen > LEASE]
                gone = [self.tasks.pop(k) for k in stale]
            for t in gone:
                if t.code is None:
                    procs.killpg_quietly(t.proc.pid, signal.SIGKILL)

    def shutdown(self) -> None:
        """Kill everything started here (tests, and `tide` tearing a node down)."""
        for job_id in self.local.running():
            self.local.cancel(job_id, grace=0)
        with self.cond:
            tasks = list(self.tasks.values())
        for t in tasks:
            procs.killpg_quietly(t.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            assert self.watchdog.stdin is not None
            self.watchdog.stdin.close()  # the watchdog sweeps what is left and exits
