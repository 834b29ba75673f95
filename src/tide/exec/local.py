"""LocalExecutor: runs jobs as real processes on this machine (the embedded default).

Every virtual node of the cluster file is this host. Each job gets a
supervisor process (tide.exec.supervisor) that runs detached from the
controller, so jobs keep running, keep their time limits and record their
exits while the controller is down; a new LocalExecutor on the same state_dir
re-adopts them (running) and collects what ended meanwhile (poll).

When the executor runs as root and a job names its OS user (LaunchSpec.os_user),
the job directory is given to that user and the supervisor starts as that
user (tide.exec.identity), so the script, srun and every task run as the
submitter and open their files as the submitter. What the controller then
reads from the directory is the user's to write: pids are checked against the
directory's owner, documents are read without following links (tide.exec.jobdir)
and sweeps kill only the owner's processes.

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
import threading
import time
from pathlib import Path

from tide.exec import fence, identity, jobdir, procs
from tide.exec.agent import HEARTBEAT_TIMEOUT, AgentPool, NodeHealth
from tide.exec.base import Executor, ExitReport, LaunchSpec
from tide.exec.env import DEFAULT_PATH, this_host

_SUPERVISOR_MODULE = "tide.exec.supervisor"
_START_TIMEOUT = 60.0  # seconds a supervisor may take to fork and record its pid
_TIDE_DIR = str(Path(__file__).resolve().parents[2])  # holds the tide package
# Seconds past a cancel's grace, or past a time limit and KillWait, after which the
# executor ends a job itself: its supervisor runs as the job's user, who can stop it.
BACKSTOP = 30.0
_SHARED_DIR_MODE = 0o711  # jobs/, checkpoints/: job users pass through, list nothing
# What a supervisor started as another user keeps of the controller's environment
# (the rest may hold the controller's secrets: a database URL, a token).
_KEPT_ENV = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TIDE_RAY_AGENT")


class LocalExecutor(Executor):
    """Run jobs on this host.

    kill_wait: seconds between SIGTERM and SIGKILL at the time limit and when a
        script leaves processes behind (Slurm's KillWait, default 30).
    step_grace: seconds srun waits after a failed task before SIGKILLing the
        step's other tasks.
    cluster_name: SLURM_CLUSTER_NAME.
    backstop: seconds past a cancel's grace, or a time limit plus KillWait, after
        which the executor ends a job its supervisor did not end (enforce()).
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
        node_timeout: float | None = None,
        backstop: float = BACKSTOP,
    ) -> None:
        self.state_dir = Path(state_dir).resolve()
        self.jobs_dir = self.state_dir / "jobs"
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # users enter their own job's directory only
            self.jobs_dir.chmod(_SHARED_DIR_MODE)
        self.checkpoints_dir = self.state_dir / "checkpoints"
        # the executor's own copy of each launch spec: the job's spec.json is its
        # user's to rewrite, so what root acts on (fencing) is read from here
        self.launched_dir = self.state_dir / "launched"
        self.launched_dir.mkdir(mode=0o700, exist_ok=True)
        self.kill_wait = kill_wait
        self.backstop = backstop
        self.step_grace = step_grace
        self.cluster_name = cluster_name
        self.python = python or sys.executable
        self._reported: set[int] = set()
        self._user_python: str | None = None  # for other users' jobs (_python_for)
        # job -> (monotonic start, limit s) of jobs launched here, and job -> (when the
        # executor ends it itself, reason, message): see enforce()
        self._limits: dict[int, tuple[float, int]] = {}
        self._deadlines: dict[int, tuple[float, str, str]] = {}
        self._alive_at: dict[int, float] = {}  # job -> when poll() last saw it running
        self._spawners: dict[int, subprocess.Popen[bytes]] = {}  # reaped by poll()
        self._lock = threading.Lock()  # the controller may call from several threads
        self.agents = AgentPool(
            self.state_dir / "nodes", self.python, node_timeout or HEARTBEAT_TIMEOUT
        )

    # -- paths and liveness -------------------------------------------------

    def job_dir(self, job_id: int) -> Path:
        return self.jobs_dir / str(job_id)

    def supervisor_pid(self, job_id: int) -> int | None:
        """The pid of the job's supervisor if it is alive and really ours: its
        command line names the job's directory and it runs as the directory's
        owner (the pid file is the job user's to write)."""
        d = self.job_dir(job_id)
        pid = jobdir.read_pid(d / jobdir.PIDFILE)
        if pid is None or not procs.is_alive(pid):
            return None
        if procs.HAVE_PROC:
            argv = procs.cmdline(pid)
            if _SUPERVISOR_MODULE not in argv or str(d) not in argv:
                return None  # the pid was reused by another process
            if procs.owner(pid) != _owner(d):
                return None
        return pid

    def _starting(self, job_id: int) -> bool:
        """Launched, but the supervisor has not reported its pid yet: its spawner
        (which writes the pid file, then exits) still runs. Ask this before reading
        the pid file: a spawner seen gone has left the file (or failed)."""
        spawner = self._spawners.get(job_id)
        if spawner is not None:
            return spawner.poll() is None
        d = self.job_dir(job_id)
        if (d / jobdir.PIDFILE).exists():
            return False
        # launched by an earlier controller that died before the pid came: the
        # spawner's own process says so (a loaded machine may take any time to start
        # it, so no deadline), else, without /proc, the spec's age
        if procs.HAVE_PROC:
            return bool(procs.pids_with_args(_SUPERVISOR_MODULE, str(d), uid=_owner(d)))
        try:
            age = time.time() - (d / jobdir.SPEC).stat().st_mtime
        except OSError:
            return False
        return age < _START_TIMEOUT

    def _live(self, job_id: int) -> bool:
        # starting first: checked the other way round, a spawner that writes the pid
        # file and exits between the two looks like a dead supervisor (a false
        # node failure, and a second run of a job that is running)
        return self._starting(job_id) or self.supervisor_pid(job_id) is not None

    def _supervisor(self, job_id: int) -> tuple[int | None, bool]:
        """(the supervisor's pid or None, still starting), asked in _live's order."""
        starting = self._starting(job_id)
        return self.supervisor_pid(job_id), starting

    def _job_ids(self) -> list[int]:
        try:
            return sorted(int(n) for n in os.listdir(self.jobs_dir) if n.isdigit())
        except FileNotFoundError:
            return []

    def _reap_spawners(self) -> None:
        for job_id, proc in list(self._spawners.items()):
            # a spawner that exited without a pid file stays: _ended() buries its
            # job at once instead of waiting out _START_TIMEOUT on the spec's age
            if proc.poll() is not None and (self.job_dir(job_id) / jobdir.PIDFILE).exists():
                del self._spawners[job_id]

    # -- Executor -----------------------------------------------------------

    def launch(self, spec: LaunchSpec) -> None:
        if not spec.nodes:
            raise ValueError(f"job {spec.job_id}: LaunchSpec.nodes is empty; give it one node")
        try:
            ident = identity.for_job(spec.os_user)
            python = self._python_for(ident)
        except identity.IdentityError as e:
            raise RuntimeError(f"job {spec.job_id}: {e}") from None
        d = self.job_dir(spec.job_id)
        with self._lock:
            if d.exists():
                if self._live(spec.job_id):
                    raise RuntimeError(f"job {spec.job_id} is already running; cancel it first")
                shutil.rmtree(d)  # an earlier run of a requeued job; its exit was collected
            d.mkdir(parents=True, mode=0o700)
            config = {**self._config(spec), "python": python}
            jobdir.write_json_atomic(d / jobdir.SPEC, jobdir.spec_to_json(spec))
            jobdir.write_json_atomic(self._launched_file(spec.job_id), jobdir.spec_to_json(spec))
            jobdir.write_json_atomic(d / jobdir.CONFIG, config)
            for sub in (jobdir.REQUESTS, jobdir.STEPS):  # made now, so they become the user's
                (d / sub).mkdir()
            if ident is not None:
                self._checkpoint_for(Path(str(config["checkpoint_dir"])), ident, spec.job_id)
            self._reported.discard(spec.job_id)
            self._deadlines.pop(spec.job_id, None)
            if spec.time_limit is not None:
                self._limits[spec.job_id] = (time.monotonic(), int(spec.time_limit))
            self._spawners[spec.job_id] = self._spawn_supervisor(spec, d, ident, python)

    def _python_for(self, ident: identity.Identity | None) -> str:
        """This interpreter, or for another user's job one they can run."""
        if ident is None:
            return self.python
        if self._user_python is None:
            self._user_python = identity.python_for_users(self.python, _TIDE_DIR)
        return self._user_python

    def _checkpoint_for(self, path: Path, ident: identity.Identity, job_id: int) -> None:
        """The job's default checkpoint directory, made here and given to its user
        (checkpoints/ is root's; a requeued run finds its own directory again)."""
        if path.parent == self.checkpoints_dir:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.parent.chmod(_SHARED_DIR_MODE)
        try:
            path.mkdir(mode=0o700)
            identity.own(path, ident)
        except FileExistsError:
            st = os.lstat(path)
            if st.st_uid != ident.uid:
                raise RuntimeError(
                    f"job {job_id}: its checkpoint directory {path} belongs to uid "
                    f"{st.st_uid}, not to {ident.name}; remove it"
                ) from None

    def _config(self, spec: LaunchSpec) -> dict[str, object]:
        return {
            "kill_wait": self.kill_wait,
            "step_grace": self.step_grace,
            "cluster": self.cluster_name,
            "submit_host": spec.env.get("HOSTNAME") or this_host(),
            "python": self.python,
            "checkpoint_dir": str(self.state_dir / "checkpoints" / str(spec.job_id)),
        }

    def _spawn_supervisor(
        self, spec: LaunchSpec, d: Path, ident: identity.Identity | None, python: str
    ) -> subprocess.Popen[bytes]:
        """Start the supervisor without waiting: it forks, records its pid and detaches.
        For another OS user the directory becomes theirs and the supervisor starts
        as them, with an environment that carries nothing of the controller's."""
        src = _TIDE_DIR
        extra: dict[str, object] = {}
        if ident is None:
            env = dict(os.environ)
            if "SLURM_UMASK" in spec.env:
                extra["umask"] = identity.umask_of(spec.env)
        else:
            env = {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}
            env.update(PATH=DEFAULT_PATH, HOME=ident.home, USER=ident.name, LOGNAME=ident.name)
            extra = identity.popen_args(ident, identity.umask_of(spec.env))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        with open(d / jobdir.LOG, "ab") as log:
            try:
                if ident is not None:
                    for name in os.listdir(d):
                        identity.own(d / name, ident)
                    identity.own(d, ident)
                return subprocess.Popen(  # type: ignore[call-overload,no-any-return]
                    [python, "-m", _SUPERVISOR_MODULE, str(d)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd=d,
                    env=env,
                    start_new_session=True,
                    **extra,
                )
            except OSError as e:
                shutil.rmtree(d, ignore_errors=True)
                with contextlib.suppress(OSError):
                    self._launched_file(spec.job_id).unlink()
                who = f" as {ident.name}" if ident is not None else ""
                raise RuntimeError(
                    f"job {spec.job_id}: cannot start the supervisor{who} with "
                    f"{python!r}: {e.strerror}; check LocalExecutor(python=...) and "
                    "that the job's user can reach it and the job directory"
                ) from None

    def set_time_limit(self, job_id: int, seconds: int) -> None:
        """A running job's new time limit, in seconds from its start (scontrol
        update TimeLimit; also a suspended job's limit pushed back on resume)."""
        if seconds <= 0:
            raise ValueError(f"job {job_id}: time limit must be positive, got {seconds}")
        with self._lock:
            pid, starting = self._supervisor(job_id)
            if pid is None and not starting:
                raise RuntimeError(f"job {job_id} is not running")
            self._ask(job_id, pid, {"op": "time_limit", "seconds": int(seconds)})
            if job_id in self._limits:
                self._limits[job_id] = (self._limits[job_id][0], int(seconds))

    def signal(self, job_id: int, sig: int) -> None:
        """Every process of the job gets `sig` (a job still starting gets it once started)."""
        d = self.job_dir(job_id)
        if not d.is_dir():
            return
        with self._lock:
            pid, starting = self._supervisor(job_id)
            if pid is not None or starting:
                self._ask(job_id, pid, {"op": "signal", "sig": int(sig), "scope": "all"})
                return
        procs.kill_all(procs.pids_with_env(jobdir.ENV_JOB_DIR, str(d), _owner(d)), sig)

    def cancel(self, job_id: int, grace: float = 30.0) -> None:
        """SIGCONT+SIGTERM, SIGKILL after `grace`; a job still starting never runs."""
        d = self.job_dir(job_id)
        if not d.is_dir():
            return
        with self._lock:
            pid, starting = self._supervisor(job_id)  # before reading exit.json
            if pid is not None or starting:
                self._ask(
                    job_id, pid, {"op": "cancel", "grace": float(grace)}, ("cancelled", "cancelled")
                )
                when = time.monotonic() + max(0.0, grace) + self.backstop
                why = "cancelled; the executor ended it (its supervisor did not)"
                if when < self._deadlines.get(job_id, (when + 1,))[0]:
                    self._deadlines[job_id] = (when, "cancelled", why)
            elif jobdir.read_exit(d) is None and (d / jobdir.SPEC).exists():
                self._bury(job_id, "cancelled", "cancelled; its supervisor was already gone")

    def watch_limit(self, job_id: int, started: float, seconds: int) -> None:
        """A re-adopted job's time limit, from the controller's store (Unix time of
        its start, seconds), for enforce(): never from the job's own directory."""
        with self._lock:
            ago = max(0.0, time.time() - started)
            self._limits[job_id] = (time.monotonic() - ago, int(seconds))

    def enforce(self) -> None:
        """End, as the executor, a job whose supervisor did not end it: BACKSTOP
        seconds past a cancel's grace, or past its time limit and KillWait. The
        supervisor runs as the job's user, who could stop it (SIGSTOP) to outrun
        either; for jobs launched by this executor (limits are not read back
        from a directory the user can write)."""
        now = time.monotonic()
        due = dict(self._deadlines)  # cancels
        for job_id, (start, limit) in self._limits.items():
            when = start + limit + self.kill_wait + self.backstop
            if when < due.get(job_id, (when + 1,))[0]:
                why = f"time limit of {limit} s reached; the executor ended it (not its supervisor)"
                due[job_id] = (when, "timeout", why)
        for job_id, (when, reason, message) in due.items():
            if now < when or job_id in self._reported:
                continue
            if not self._live(job_id):
                continue  # ended meanwhile: _ended() reports it (an exit record alone is not
                # an end: the user may have written one and stopped the supervisor)
            pid = self.supervisor_pid(job_id)
            if pid is not None:
                procs.kill_quietly(pid, signal.SIGKILL)
            self._bury(job_id, reason, message)

    def poll(self) -> list[ExitReport]:
        with self._lock:
            self.enforce()
            reports = [r for j in self._job_ids() if (r := self._ended(j)) is not None]
            self._reap_spawners()
        return reports

    def _ended(self, job_id: int) -> ExitReport | None:
        if job_id in self._reported:
            return None
        d = self.job_dir(job_id)
        live = self._live(job_id)  # before reading exit.json: the supervisor writes it, then exits
        rec = jobdir.read_exit(d)
        if rec is not None and live:
            # the supervisor writes its record last and exits at once; a record while
            # it lives may be the job user's, written to free the job's resources
            # while its processes run on: the end is the supervisor's end
            return None
        if rec is None:
            if live:
                self._alive_at[job_id] = time.time()
            if live or not (d / jobdir.SPEC).exists():
                return None
            if (d / jobdir.PIDFILE).exists():
                if self._outlived(d):
                    return None  # SIGKILLed: reported (and requeued) once known dead
                rec = self._bury(job_id, "node_fail", "the job's supervisor died")
            else:
                rec = self._bury(
                    job_id, "node_fail", f"the supervisor did not start; see {d / jobdir.LOG}"
                )
                self._spawners.pop(job_id, None)
        self._reported.add(job_id)
        self._limits.pop(job_id, None)
        self._deadlines.pop(job_id, None)
        return rec.to_report()

    def running(self) -> set[int]:
        with self._lock:
            live = {j for j in self._job_ids() if self._live(j)}
            self._reap_spawners()
        return live

    def close(self) -> None:
        """Wait for supervisors still forking (a fraction of a second); jobs keep running."""
        with self._lock:
            for proc in self._spawners.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=_START_TIMEOUT)
            self._spawners.clear()

    # -- beyond the interface -----------------------------------------------

    def exit_record(self, job_id: int) -> jobdir.ExitRecord | None:
        """The full exit record (timestamps, message, "code:signal") of an ended job.
        Its end time is the job user's to write: it is kept between the last time
        this executor saw the job running and now (accounting charges up to it)."""
        rec = jobdir.read_exit(self.job_dir(job_id))
        if rec is not None:
            now = time.time()
            end = min(rec.ended if rec.ended is not None else now, now)
            rec.ended = max(end, self._alive_at.get(job_id, end))
        return rec

    def report_again(self, job_id: int) -> None:
        """The controller could not store this end: poll() reports it again."""
        with self._lock:
            self._reported.discard(job_id)

    def forget(self, job_id: int) -> None:
        """Drop an ended job's state once the controller has stored its exit."""
        with self._lock:
            if self._live(job_id):
                raise RuntimeError(f"job {job_id} is still running; cancel it before forget()")
            shutil.rmtree(self.job_dir(job_id), ignore_errors=True)
            with contextlib.suppress(OSError):
                self._launched_file(job_id).unlink()
            self._reported.discard(job_id)
            self._alive_at.pop(job_id, None)

    # -- nodes (tide.exec.agent) ------------------------------------------

    def start_nodes(
        self, names: list[str], health_program: str = "", interval: float = 30.0
    ) -> None:
        """One agent per virtual node; the controller watches them with node_health()."""
        self.agents.start(names, health_program, interval)

    def node_health(self, name: str) -> NodeHealth:
        return self.agents.health(name, time.time())

    def fail_node(self, name: str) -> bool:
        """Simulate a node failure: its agent is killed (the controller then sees
        the node stop answering, as when a machine dies)."""
        return self.agents.fail(name)

    def resume_node(self, name: str) -> None:
        """A node back in service: first every job process still placed on it that
        no running job owns dies (tide.exec.fence), then it gets an agent."""
        fence.clean(name, self.jobs_dir, self._attempt_on)
        self.agents.resume(name)

    def fence_node(self, name: str) -> list[int]:
        """Power a failed node off before its jobs are failed (tide.exec.fence): its
        agent, the job processes placed on it and, stopped with it, the supervisor
        of a job whose batch shell ran there. Returns the job pids killed."""
        killed = fence.power_off(name, self.jobs_dir, self.agents.pid(name))
        with self._lock:
            for job_id in self._job_ids():
                pid = self.supervisor_pid(job_id)
                if pid is not None and procs.stopped(pid) and self._nodes_of(job_id)[:1] == [name]:
                    procs.kill_quietly(pid, signal.SIGKILL)  # poll() then buries the job
                    killed.append(pid)
        return killed

    def _nodes_of(self, job_id: int) -> list[str]:
        """The job's nodes, batch node first, from its launch spec ([] if unreadable)."""
        try:
            return [n.node for n in self.launched_spec(job_id).nodes]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def _launched_file(self, job_id: int) -> Path:
        return self.launched_dir / f"{job_id}.json"

    def launched_spec(self, job_id: int) -> LaunchSpec:
        """The spec the job was launched with, from the executor's own copy (a job
        launched by an older version has none: its spec.json is read)."""
        data = jobdir.read_json(self._launched_file(job_id))
        if data is None:
            return jobdir.load_spec(self.job_dir(job_id))
        return jobdir.spec_from_json(data)

    def _attempt_on(self, job_id: int, node: str) -> int | None:
        """The attempt of `job_id` running on `node` now, or None."""
        if not self._live(job_id) or node not in self._nodes_of(job_id):
            return None
        try:
            return self.launched_spec(job_id).restart_count
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def node_failed(self, job_id: int, node: str, message: str) -> None:
        """The job lost `node`: its processes there die at once, the rest after
        the step grace, and the job ends with reason node_fail."""
        with self._lock:
            pid, starting = self._supervisor(job_id)
            if pid is None and not starting:
                return  # poll() reports a dead supervisor as a node failure anyway
            request: dict[str, object] = {"op": "node_fail", "node": node, "message": message}
            self._ask(job_id, pid, request, ("node_fail", message or f"node {node} failed"))

    def _ask(
        self,
        job_id: int,
        pid: int | None,
        request: dict[str, object],
        or_end: tuple[str, str] | None = None,
    ) -> None:
        """Post a request for the supervisor and wake it. The job's user owns the
        folder: if they made it unusable, a request that ends the job (`or_end`:
        reason, message) ends it here, as root, instead of being lost."""
        try:
            jobdir.post_request(self.job_dir(job_id), request)
        except OSError as e:
            if or_end is None:
                raise RuntimeError(f"job {job_id}: cannot reach its supervisor: {e}") from None
            if pid is not None:
                procs.kill_quietly(pid, signal.SIGKILL)
            self._bury(job_id, *or_end)
            return
        if pid is not None:
            procs.kill_quietly(pid, signal.SIGUSR1)

    def stop_nodes(self) -> None:
        self.agents.stop()

    def _outlived(self, d: Path) -> bool:
        """Processes of the job that outlived its supervisor: SIGKILL them and say
        whether any is still there (the end waits for the next poll, so a requeue
        never runs beside them)."""
        pids = procs.pids_with_env(jobdir.ENV_JOB_DIR, str(d), _owner(d))
        procs.kill_all(pids, signal.SIGKILL)
        return any(procs.is_alive(p) for p in pids)

    def _bury(self, job_id: int, reason: str, message: str) -> jobdir.ExitRecord:
        """A job whose supervisor is gone: kill what is left, record the end."""
        d = self.job_dir(job_id)
        uid = _owner(d)
        procs.kill_all(procs.pids_with_env(jobdir.ENV_JOB_DIR, str(d), uid), signal.SIGKILL)
        runtime = jobdir.read_json(d / jobdir.RUNTIME) or {}
        rec = jobdir.ExitRecord(
            job_id=job_id,
            exit_code=0,
            signal=signal.SIGKILL if "batch_pid" in runtime else 0,
            reason=reason,
            started=runtime.get("started"),
            ended=time.time(),
            message=message,
        )
        with contextlib.suppress(OSError):
            jobdir.write_json_atomic(d / jobdir.EXIT, rec.to_json())
        return rec


def _owner(d: Path) -> int | None:
    """The uid a job directory belongs to (its job's processes run as it)."""
    try:
        return os.lstat(d).st_uid
    except OSError:
        return None
