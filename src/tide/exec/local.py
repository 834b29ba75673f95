"""LocalExecutor: runs jobs as real processes on this machine (the embedded default).

Every virtual node of the cluster file is this host. Each job gets a
supervisor process (tide.exec.supervisor) that runs detached from the
controller, so jobs keep running, keep their time limits and record their
exits while the controller is down; a new LocalExecutor on the same state_dir
re-adopts them (running) and collects what ended meanwhile (poll).

All state is in <state_dir>/jobs/<job_id>/ (see tide.exec.jobdir). Exits are
reported at least once: poll() reports each exit once per executor instance,
and again after a restart until the controller calls forget(job_id), so the
controller must treat a repeated report as a no-op.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tide.exec import jobdir, procs
from tide.exec.base import Executor, ExitReport, LaunchSpec
from tide.exec.env import this_host

_SUPERVISOR_MODULE = "tide.exec.supervisor"
_START_TIMEOUT = 60.0  # seconds for the supervisor to fork and report its pid


class LocalExecutor(Executor):
    """Run jobs on this host.

    kill_wait: seconds between SIGTERM and SIGKILL at the time limit and when a
        script leaves processes behind (Slurm's KillWait, default 30).
    step_grace: seconds srun waits after a failed task before SIGKILLing the
        step's other tasks.
    cluster_name: SLURM_CLUSTER_NAME.
    python: interpreter for the supervisor and srun (default: this one).
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        kill_wait: float = 30.0,
        step_grace: float = 3.0,
        cluster_name: str = "tide",
        python: str | None = None,
    ) -> None:
        self.state_dir = Path(state_dir).resolve()
        self.jobs_dir = self.state_dir / "jobs"
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        self.kill_wait = kill_wait
        self.step_grace = step_grace
        self.cluster_name = cluster_name
        self.python = python or sys.executable
        self._reported: set[int] = set()

    # -- paths and liveness -------------------------------------------------

    def job_dir(self, job_id: int) -> Path:
        return self.jobs_dir / str(job_id)

    def supervisor_pid(self, job_id: int) -> int | None:
        """The pid of the job's supervisor if it is alive and really ours."""
        d = self.job_dir(job_id)
        pid = jobdir.read_pid(d / jobdir.PIDFILE)
        if pid is None or not procs.is_alive(pid):
            return None
        if procs.HAVE_PROC:
            argv = procs.cmdline(pid)
            if _SUPERVISOR_MODULE not in argv or str(d) not in argv:
                return None  # the pid was reused by another process
        return pid

    def _job_ids(self) -> list[int]:
        try:
            return sorted(int(n) for n in os.listdir(self.jobs_dir) if n.isdigit())
        except FileNotFoundError:
            return []

    # -- Executor -----------------------------------------------------------

    def launch(self, spec: LaunchSpec) -> None:
        if not spec.nodes:
            raise ValueError(f"job {spec.job_id}: LaunchSpec.nodes is empty; give it one node")
        d = self.job_dir(spec.job_id)
        if d.exists():
            if (pid := self.supervisor_pid(spec.job_id)) is not None:
                raise RuntimeError(f"job {spec.job_id} is already running (supervisor pid {pid})")
            shutil.rmtree(d)  # an earlier run of a requeued job; its exit was collected
        d.mkdir(parents=True)
        jobdir.write_json_atomic(d / jobdir.SPEC, jobdir.spec_to_json(spec))
        jobdir.write_json_atomic(d / jobdir.CONFIG, self._config(spec))
        self._reported.discard(spec.job_id)
        self._spawn_supervisor(spec.job_id, d)

    def _config(self, spec: LaunchSpec) -> dict[str, object]:
        return {
            "kill_wait": self.kill_wait,
            "step_grace": self.step_grace,
            "cluster": self.cluster_name,
            "submit_host": spec.env.get("HOSTNAME") or this_host(),
            "python": self.python,
            "checkpoint_dir": str(self.state_dir / "checkpoints" / str(spec.job_id)),
        }

    def _spawn_supervisor(self, job_id: int, d: Path) -> None:
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        with open(d / jobdir.LOG, "ab") as log:
            proc = subprocess.Popen(
                [self.python, "-m", _SUPERVISOR_MODULE, str(d)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=d,
                env=env,
                start_new_session=True,
            )
        try:
            rc = proc.wait(timeout=_START_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = -1
        if rc != 0 or jobdir.read_pid(d / jobdir.PIDFILE) is None:
            raise RuntimeError(
                f"job {job_id}: the supervisor did not start (status {rc}); see {d / jobdir.LOG}"
            )

    def signal(self, job_id: int, sig: int) -> None:
        d = self.job_dir(job_id)
        if not d.is_dir():
            return
        pid = self.supervisor_pid(job_id)
        if pid is None:
            procs.kill_all(procs.pids_with_env(jobdir.ENV_JOB_DIR, str(d)), sig)
            return
        jobdir.post_request(d, {"op": "signal", "sig": int(sig), "scope": "all"})
        procs.kill_quietly(pid, signal.SIGUSR1)

    def cancel(self, job_id: int, grace: float = 30.0) -> None:
        d = self.job_dir(job_id)
        if not d.is_dir() or jobdir.read_exit(d) is not None:
            return
        pid = self.supervisor_pid(job_id)
        if pid is None:
            self._bury(job_id, "cancelled", "cancelled; its supervisor was already gone")
            return
        jobdir.post_request(d, {"op": "cancel", "grace": float(grace)})
        procs.kill_quietly(pid, signal.SIGUSR1)

    def poll(self) -> list[ExitReport]:
        reports = []
        for job_id in self._job_ids():
            if job_id in self._reported:
                continue
            d = self.job_dir(job_id)
            alive = self.supervisor_pid(job_id) is not None  # before reading exit.json
            rec = jobdir.read_exit(d)
            if rec is None:
                if alive or jobdir.read_pid(d / jobdir.PIDFILE) is None:
                    continue  # running, or not launched by anyone
                rec = self._bury(job_id, "node_fail", "the job's supervisor died")
            self._reported.add(job_id)
            reports.append(rec.to_report())
        return reports

    def running(self) -> set[int]:
        return {j for j in self._job_ids() if self.supervisor_pid(j) is not None}

    # -- beyond the interface -----------------------------------------------

    def exit_record(self, job_id: int) -> jobdir.ExitRecord | None:
        """The full exit record (timestamps, message, "code:signal") of an ended job."""
        return jobdir.read_exit(self.job_dir(job_id))

    def forget(self, job_id: int) -> None:
        """Drop an ended job's state once the controller has stored its exit."""
        if self.supervisor_pid(job_id) is not None:
            raise RuntimeError(f"job {job_id} is still running; cancel it before forget()")
        shutil.rmtree(self.job_dir(job_id), ignore_errors=True)
        self._reported.discard(job_id)

    def _bury(self, job_id: int, reason: str, message: str) -> jobdir.ExitRecord:
        """A job whose supervisor is gone: kill what is left, record the end."""
        d = self.job_dir(job_id)
        procs.kill_all(procs.pids_with_env(jobdir.ENV_JOB_DIR, str(d)), signal.SIGKILL)
        runtime = jobdir.read_json(d / jobdir.RUNTIME) or {}
        rec = jobdir.ExitRecord(
            job_id=job_id,
            exit_code=0,
            signal=signal.SIGKILL,
            reason=reason,
            started=runtime.get("started"),
            ended=time.time(),
            message=message,
        )
        with contextlib.suppress(OSError):
            jobdir.write_json_atomic(d / jobdir.EXIT, rec.to_json())
        return rec
