"""The per-job supervisor: runs one batch job and outlives the controller.

Started as `python -m tide.exec.supervisor <job_dir>`. It forks at once: the
parent writes the child's pid to supervisor.pid and exits, so launch() returns
knowing the pid; the child starts its own session, becomes a child subreaper
(orphaned job processes are reparented to it, not to init) and supervises:

- runs the batch script on the job's first node, with Slurm's environment,
  output files and core pinning;
- enforces the time limit itself, so limits hold while the controller is down:
  --signal's signal at limit - signal_lead, SIGTERM at the limit, SIGKILL
  KillWait seconds later, reason "timeout";
- carries out the executor's requests (signal, cancel), read from requests/;
- when the script ends, ends what it left behind (SIGTERM, KillWait, SIGKILL),
  as Slurm ends a job's processes;
- writes exit.json atomically, last.

Signal scopes follow sbatch --signal (https://slurm.schedmd.com/sbatch.html):
"steps" (default: srun tasks, not the batch shell), "batch" (B:, the batch
shell only), and "all" (every process of the job; what scancel and the time
limit use).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from tide.exec import jobdir, procs
from tide.exec.env import BatchContext, batch_env, choose_master_port
from tide.exec.outputs import PatternFields, batch_paths

SHIM = Path(__file__).parent / "bin" / "srun"
SHIMS = (SHIM, SHIM.with_name("hostname"))
_IDLE_TICK = 0.5  # seconds between checks when nothing is pending
_BUSY_TICK = 0.1  # while ending a job


class _Flags:
    stop_requested = False  # set by SIGTERM/SIGINT/SIGHUP: cancel the job


def _wake(_sig: int, _frame: Any) -> None:
    """SIGCHLD, and SIGUSR1 (the executor's "look at requests/"): just wake the loop."""


def _stop(_sig: int, _frame: Any) -> None:
    _Flags.stop_requested = True


def _install_handlers() -> None:
    # Before the fork, so no signal reaches the supervisor while it still has
    # the default action (SIGUSR1's would kill it).
    signal.signal(signal.SIGCHLD, _wake)
    signal.signal(signal.SIGUSR1, _wake)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)


class LaunchFailure(Exception):
    """The batch script could not be started; carries its exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def parse_job_signal(text: str) -> tuple[int, str]:
    """sbatch --signal's "[{R|B}:]sig" -> (signal number, scope)."""
    flags, colon, name = text.partition(":")
    if not colon:
        flags, name = "", text
    return procs.parse_signal(name), ("batch" if "B" in flags.upper() else "steps")


class Supervisor:
    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.spec = jobdir.load_spec(job_dir)
        self.config = jobdir.read_json(job_dir / jobdir.CONFIG) or {}
        self.kill_wait = float(self.config.get("kill_wait", 30.0))
        self.pid = os.getpid()
        self.batch: subprocess.Popen[bytes] | None = None
        self.status: int | None = None  # the batch script's wait status
        self.reason = ""
        self.message = ""
        self.started: float | None = None
        self.warn: tuple[float, int, str] | None = None  # (when, signal, scope)
        self.limit_at: float | None = None
        self.started_at: float | None = None  # monotonic: when the batch script started
        self.limit: int | None = None  # seconds from started_at (scontrol update TimeLimit)
        self.kill_at: float | None = None
        self.step_grace = float(self.config.get("step_grace", 3.0))
        self.failure: tuple[int, int] | None = None  # (exit code, signal) of the first failed task
        self._steps_seen: set[str] = set()  # step records already ended and checked
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    # -- start ----------------------------------------------------------

    def _workdir(self) -> tuple[str, str]:
        """(directory to run in, notice for the job's stderr)."""
        wanted = self.spec.workdir or self.spec.submit_dir
        if wanted and os.path.isdir(wanted):
            return wanted, ""
        # Slurm runs the job in /tmp when the working directory is unusable.
        return "/tmp", f"tide: working directory {wanted!r} does not exist; running in /tmp\n"

    def _open_outputs(self, cwd: str) -> tuple[Any, Any]:
        spec = self.spec
        fields = PatternFields(
            job_id=spec.job_id,
            name=spec.name,
            user=spec.user,
            array_job_id=spec.array_job_id,
            array_task_id=spec.array_task_id,
            node=spec.nodes[0].node,
            restart_count=spec.restart_count,
        )
        array = spec.array_task_id is not None
        out_path, err_path = batch_paths(spec.output, spec.error, fields, cwd, array)
        # A requeued run appends, so the earlier attempts' output is kept.
        mode = "ab" if spec.restart_count > 0 else "wb"
        opened = []
        which = "stdout"
        try:
            # Opened as the job's user (the supervisor runs as them): a path they
            # cannot write fails here, as in Slurm, and nothing else is touched.
            for path in dict.fromkeys((out_path, err_path)):
                which = "stdout" if path == out_path else "stderr"
                opened.append(open(path, mode))  # noqa: SIM115 - handed to the child
        except OSError as e:
            for f in opened:
                f.close()
            raise LaunchFailure(
                f"Could not open {which} file {e.filename}: {e.strerror} (as OS user "
                f"{_me()}); create its directory, make it writable for that user or "
                "change --output/--error"
            ) from None
        return opened[0], opened[-1]

    def _prepare_dir(self) -> tuple[Path, Path]:
        bin_dir = self.job_dir / "bin"
        bin_dir.mkdir(exist_ok=True)
        for shim in SHIMS:  # srun, and hostname naming the virtual node
            shutil.copyfile(shim, bin_dir / shim.name)
            (bin_dir / shim.name).chmod(0o755)
        script = self.job_dir / "script"
        script.write_text(self.spec.script, encoding="utf-8")
        script.chmod(0o700)
        return bin_dir, script

    def _write_runtime(self, **extra: Any) -> None:
        data = jobdir.read_json(self.job_dir / jobdir.RUNTIME) or {}
        data.update(extra)
        jobdir.write_json_atomic(self.job_dir / jobdir.RUNTIME, data)

    def start(self) -> None:
        spec = self.spec
        bin_dir, script = self._prepare_dir()
        cwd, notice = self._workdir()
        out, err = self._open_outputs(cwd)
        checkpoint = spec.checkpoint_dir or str(self.config.get("checkpoint_dir", ""))
        if checkpoint:
            try:
                Path(checkpoint).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise LaunchFailure(
                    f"cannot create checkpoint directory {checkpoint}: {e.strerror}"
                ) from None
        self.started = time.time()
        ctx = BatchContext(
            job_dir=str(self.job_dir),
            bin_dir=str(bin_dir),
            python=str(self.config.get("python") or sys.executable),
            pythonpath=str(Path(__file__).resolve().parents[2]),
            cluster=str(self.config.get("cluster", "tide")),
            submit_host=str(self.config.get("submit_host", "")),
            uid=os.getuid(),
            started=self.started,
            master_port=choose_master_port(spec.job_id),
            checkpoint_dir=checkpoint,
        )
        cpus = procs.machine_cpus()
        self._write_runtime(
            supervisor_pid=self.pid,
            master_port=ctx.master_port,
            step_grace=float(self.config.get("step_grace", 3.0)),
            cpus=cpus,
            started=self.started,
        )
        if notice:
            err.write(notice.encode())
            err.flush()
        argv = [str(script)] if spec.script.startswith("#!") else ["/bin/sh", str(script)]
        argv += list(spec.script_args)  # `sbatch job.sh A B`: $1=A $2=B
        cores = spec.nodes[0].cores

        def prepare() -> None:
            procs.reset_signals_in_child()
            procs.pin(cores, cpus)

        try:
            self.batch = subprocess.Popen(
                argv,
                cwd=cwd,
                env=batch_env(spec, ctx),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                process_group=0,
                preexec_fn=prepare,
            )
        except OSError as e:
            code = 127 if e.errno == errno.ENOENT else 126
            raise LaunchFailure(f"cannot run the batch script: {e.strerror}", code) from None
        finally:
            out.close()
            if err is not out:
                err.close()
        self._write_runtime(batch_pid=self.batch.pid)
        now = time.monotonic()
        self.started_at = now
        if spec.time_limit is not None:
            self.set_limit(spec.time_limit)

    def set_limit(self, seconds: int) -> None:
        """The job may run `seconds` from its start (a new limit re-arms --signal)."""
        if self.started_at is None or self.status is not None:
            return
        self.limit = seconds
        self.limit_at = self.started_at + seconds
        self.warn = None
        if self.spec.signal:
            self._arm_warning(self.started_at, seconds)

    def _arm_warning(self, now: float, limit: int) -> None:
        try:
            sig, scope = parse_job_signal(self.spec.signal or "")
        except ValueError as e:
            print(f"tide supervisor: --signal ignored: {e}", file=sys.stderr, flush=True)
            return
        self.warn = (now + max(0, limit - self.spec.signal_lead), sig, scope)

    # -- signals --------------------------------------------------------

    def members(self) -> list[procs.ProcInfo]:
        return procs.job_processes(self.pid, procs.process_table())

    def deliver(self, sig: int, scope: str) -> None:
        """Send `sig` to the job: "all", "steps" (not the batch step) or "batch" (shell)."""
        batch_alive = self.batch is not None and self.status is None
        if scope == "batch":
            if batch_alive and self.batch is not None:
                procs.kill_quietly(self.batch.pid, sig)
            return
        members = self.members()
        own = os.getpgid(0)
        groups = {p.pgid for p in members} - {own}
        batch_group = self.batch.pid if self.batch is not None else None
        if scope == "steps":
            groups.discard(batch_group)  # type: ignore[arg-type]
        elif batch_alive and batch_group is not None:
            groups.add(batch_group)
        if not procs.HAVE_PROC:
            groups |= self._known_groups(scope)
        for g in sorted(groups):
            procs.killpg_quietly(g, sig)
        procs.kill_all((p.pid for p in members if p.pgid == own), sig)

    def _known_groups(self, scope: str) -> set[int]:
        """Without /proc: the task groups srun recorded (each task leads its group)."""
        groups = {
            t["pid"]
            for step in jobdir.read_steps(self.job_dir)
            if "ended" not in step
            for t in step.get("tasks", [])
        }
        if scope == "all" and self.batch is not None and self.status is None:
            groups.add(self.batch.pid)
        return groups

    def terminate(self, reason: str, grace: float) -> None:
        """SIGCONT + SIGTERM to everything, SIGKILL after `grace` (the first reason sticks)."""
        if reason and not self.reason and self.status is None:
            self.reason = reason
        self.deliver(signal.SIGCONT, "all")
        self.deliver(signal.SIGTERM, "all")
        deadline = time.monotonic() + max(0.0, grace)
        self.kill_at = deadline if self.kill_at is None else min(self.kill_at, deadline)

    # -- failures (docs/recovery.md) -------------------------------------

    def _check_steps(self) -> None:
        """Gang teardown: a task of a multi-task step failed (srun has already
        stopped the step's other tasks), so the whole job ends: nothing is left
        waiting in a collective, and the script does not carry on as if the step
        had run. The failed task's status and cause become the job's."""
        if self.failure is not None or self.reason:
            return
        for st in jobdir.read_steps(self.job_dir, self._steps_seen):
            if "ended" in st:  # its record is final: never read again (jobs run many steps)
                self._steps_seen.add(f"{st.get('step_id')}.json")
            if "failed_rank" not in st or int(st.get("ntasks", 1)) < 2:
                continue  # no task ran and failed (one that could not start is srun's error)
            if not st.get("kill_on_bad_exit", True):
                continue  # srun -K0: the user lets the others run on
            code = int(st.get("exit_code", 1))
            self.failure = (0, code - 128) if code > 128 else (code, 0)
            sig = code - 128 if code > 128 else 0
            what = f"killed by {_signal_name(sig)}" if sig else f"exited with code {code}"
            self.message = f"task {st.get('failed_rank', '?')} on {st['failed_node']} {what}"
            self.terminate("", self.step_grace)
            return

    def fail_node(self, node: str, message: str) -> None:
        """A node of the job is lost: its processes die at once (SIGKILL, as when a
        machine loses power), the rest get SIGTERM and, after the step grace,
        SIGKILL; the job ends NODE_FAIL."""
        if not self.reason:
            self.reason = "node_fail"
            self.message = message or f"node {node} failed"
        for st in jobdir.read_steps(self.job_dir):
            if "ended" in st:
                continue
            for t in st.get("tasks", []):
                if t.get("node") == node:
                    procs.killpg_quietly(int(t["pid"]), signal.SIGKILL)
        if self.spec.nodes[0].node == node and self.batch is not None and self.status is None:
            procs.killpg_quietly(self.batch.pid, signal.SIGKILL)
        self.terminate("node_fail", self.step_grace)

    # -- loop -----------------------------------------------------------

    def _handle_requests(self) -> None:
        for req in jobdir.take_requests(self.job_dir):
            if req.get("op") == "node_fail":
                self.fail_node(str(req.get("node", "")), str(req.get("message", "")))
            elif req.get("op") == "time_limit":
                self.set_limit(int(req["seconds"]))
            elif req.get("op") == "signal":
                self.deliver(int(req["sig"]), str(req.get("scope", "all")))
            elif req.get("op") == "cancel":
                grace = float(req.get("grace", self.kill_wait))
                self.terminate("cancelled", grace)
                self.message = self.message or "cancelled"
        if _Flags.stop_requested:
            _Flags.stop_requested = False
            self.terminate("cancelled", self.kill_wait)
            self.message = self.message or "the supervisor was asked to stop"

    def _check_clock(self) -> None:
        now = time.monotonic()
        if self.warn is not None and now >= self.warn[0]:
            _, sig, scope = self.warn
            self.warn = None
            self.deliver(sig, scope)
        if self.limit_at is not None and now >= self.limit_at and self.status is None:
            self.limit_at = None
            self.message = f"time limit of {self.limit} s reached"
            self.terminate("timeout", self.kill_wait)

    def _reap(self) -> None:
        """Collect every exited child (we are a subreaper, so orphans come here too)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.batch is not None and pid == self.batch.pid:
                self.status = status
                self.batch.returncode = os.waitstatus_to_exitcode(status)

    def _sleep(self) -> None:
        tick = _BUSY_TICK if (self.status is not None or self.kill_at is not None) else _IDLE_TICK
        pending = [t for t in (self.limit_at, self.kill_at, self.warn and self.warn[0]) if t]
        if pending:
            tick = max(0.0, min(tick, min(pending) - time.monotonic()))
        with contextlib.suppress(InterruptedError):
            select.select([self._wake_r], [], [], tick)
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 512):
                pass

    def loop(self) -> None:
        while True:
            self._handle_requests()
            self._check_clock()
            self._reap()
            self._check_steps()
            if self.status is not None:
                if not self.members():
                    return
                if self.kill_at is None:
                    # leftovers of a finished script get KillWait; of a killed one
                    # (a failure: its srun tasks must not hang on) the step grace
                    killed = os.WIFSIGNALED(self.status) and not self.reason
                    self.terminate("", self.step_grace if killed else self.kill_wait)
            if self.kill_at is not None and time.monotonic() >= self.kill_at:
                self.deliver(signal.SIGKILL, "all")
            self._sleep()

    # -- end ------------------------------------------------------------

    def _failed_node(self, failed: bool) -> str:
        if self.reason:
            return ""  # tide ended the job; no node failed
        steps = [s for s in jobdir.read_steps(self.job_dir) if s.get("failed_node")]
        if steps:
            return str(min(steps, key=lambda s: s.get("ended", 0.0))["failed_node"])
        return self.spec.nodes[0].node if failed else ""

    def record(self, exit_code: int, sig: int) -> jobdir.ExitRecord:
        running = [s["running"] for s in jobdir.read_steps(self.job_dir) if "running" in s]
        return jobdir.ExitRecord(
            job_id=self.spec.job_id,
            exit_code=exit_code,
            signal=sig,
            reason=self.reason,
            node=self._failed_node(exit_code != 0 or sig != 0),
            started=self.started,
            tasks_running=min(running) if running else None,
            ended=time.time(),
            message=self.message,
        )

    def finish(self) -> None:
        code = os.waitstatus_to_exitcode(self.status) if self.status is not None else 0
        exit_code, sig = (0, -code) if code < 0 else (code, 0)
        if self.failure is not None and not self.reason:
            exit_code, sig = self.failure  # the job ended because that task failed
        rec = self.record(exit_code, sig)
        jobdir.write_json_atomic(self.job_dir / jobdir.EXIT, rec.to_json())

    def run(self) -> None:
        procs.become_subreaper()
        signal.set_wakeup_fd(self._wake_w)
        if jobdir.cancel_pending(self.job_dir):
            self.reason, self.message = "cancelled", "cancelled before it started"
            jobdir.write_json_atomic(self.job_dir / jobdir.EXIT, self.record(0, 0).to_json())
            return
        try:
            self.start()
        except LaunchFailure as e:
            self.message = str(e)
            print(f"tide supervisor: job {self.spec.job_id}: {e}", file=sys.stderr, flush=True)
            rec = self.record(e.exit_code, 0)
            jobdir.write_json_atomic(self.job_dir / jobdir.EXIT, rec.to_json())
            return
        self.loop()
        self.finish()


def _me() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _crash(job_dir: Path, error: BaseException) -> None:
    """Last resort: kill what is left and record a node failure."""
    traceback.print_exc()
    table = procs.process_table()
    for p in procs.job_processes(os.getpid(), table):
        procs.kill_quietly(p.pid, signal.SIGKILL)
    job_id = int(job_dir.name) if job_dir.name.isdigit() else 0
    rec = jobdir.ExitRecord(
        job_id=job_id,
        exit_code=0,
        reason="node_fail",
        ended=time.time(),
        message=f"the supervisor failed: {error!r}",
    )
    with contextlib.suppress(OSError):
        jobdir.write_json_atomic(job_dir / jobdir.EXIT, rec.to_json())


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tide.exec.supervisor <job-dir>", file=sys.stderr)
        return 2
    job_dir = Path(argv[0]).resolve()
    _install_handlers()
    child = os.fork()
    if child:
        # The parent only reports the pid; launch() waits for it to exit.
        jobdir.write_pid(job_dir / jobdir.PIDFILE, child)
        return 0
    os.setsid()
    try:
        Supervisor(job_dir).run()
    except Exception as e:  # anything is better than a silent hang
        _crash(job_dir, e)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
