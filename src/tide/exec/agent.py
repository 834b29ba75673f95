"""The node agent: one small process per virtual node of the local executor.

It stands for the node's slurmd as far as health goes: while it runs, the node
answers. It touches `heartbeat` every second and, when the cluster sets a
HealthCheckProgram, runs it every HealthCheckInterval seconds with the node's
name in SLURMD_NODENAME and TIDE_NODE, writing the result to `health.json`.
The controller (tide.server.services.nodes.watch) marks a node DOWN when its
agent is dead (at once) or its heartbeat is older than the cluster's
SlurmdTimeout (HEARTBEAT_TIMEOUT, 30 s, by default), and drains it
when the health check exits non-zero, with the program's output as the reason.
Killing an agent (`kill -9`) is therefore a node failure, which is what
`tide node fail NAME` does.

    <state_dir>/nodes/agents.json   health program, interval, controller pid
    <state_dir>/nodes/<node>/agent.pid, heartbeat, health.json, stop

Agents outlive a controller crash (jobs keep running, and the restarted
controller finds its nodes still answering). One exits cleanly, removing its
pid file, when asked (`stop`), when its directory disappears, or when no
controller has run for ORPHAN_TIMEOUT seconds.

Started as `python -m tide.exec.agent <nodes_dir> <node>`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tide.exec import jobdir, procs

CONFIG = "agents.json"
PIDFILE = "agent.pid"
HEARTBEAT = "heartbeat"
HEALTH = "health.json"
STOP = "stop"
BEAT_EVERY = 1.0  # seconds between heartbeats
# SlurmdTimeout's default here: a heartbeat older than this and the node does not
# answer. Generous, because a loaded machine delays a heartbeat by seconds, and a
# slow heartbeat is not a dead node (a dead agent is seen at once, by its pid).
HEARTBEAT_TIMEOUT = 30.0
ORPHAN_TIMEOUT = 120.0  # no controller for this long: the agent exits
CHECK_TIMEOUT = 60.0  # a health check running longer than this failed


def run_check(program: str, node: str, timeout: float) -> dict[str, object]:
    """Run the health-check program once; its output (trimmed) is the reason."""
    env = {**os.environ, "SLURMD_NODENAME": node, "TIDE_NODE": node}
    started = time.time()
    try:
        done = subprocess.run(
            [program],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        code, out = done.returncode, (done.stdout + done.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired:
        code, out = 124, f"health check {program} ran longer than {timeout:g} s"
    except OSError as e:
        code, out = 127, f"cannot run health check {program}: {e.strerror}"
    text = " ".join(out.split())[:200] or f"{program} exited {code}"
    return {"time": started, "ok": code == 0, "exit": code, "output": text}


class Agent:
    def __init__(self, nodes_dir: Path, node: str) -> None:
        self.nodes_dir = nodes_dir
        self.node = node
        self.dir = nodes_dir / node
        self.next_check = 0.0
        self.orphan_since: float | None = None
        self.checking: threading.Thread | None = None

    def config(self) -> dict[str, object]:
        return jobdir.read_json(self.nodes_dir / CONFIG) or {}

    def _controller_gone(self, cfg: dict[str, object], now: float) -> bool:
        pid = cfg.get("controller_pid")
        if isinstance(pid, int) and procs.is_alive(pid):
            self.orphan_since = None
            return False
        self.orphan_since = self.orphan_since or now
        return now - self.orphan_since > ORPHAN_TIMEOUT

    def _maybe_check(self, cfg: dict[str, object], now: float) -> None:
        """Start the health check in a thread, so a slow one never stops heartbeats."""
        program = str(cfg.get("health_program") or "")
        if not program or now < self.next_check:
            return
        if self.checking is not None and self.checking.is_alive():
            return
        interval = float(cfg.get("health_interval") or 30.0)  # type: ignore[arg-type]
        self.next_check = now + interval
        timeout = min(CHECK_TIMEOUT, max(1.0, interval))

        def check() -> None:
            result = run_check(program, self.node, timeout)
            with contextlib.suppress(OSError):
                jobdir.write_json_atomic(self.dir / HEALTH, result)

        self.checking = threading.Thread(target=check, daemon=True)
        self.checking.start()

    def run(self) -> None:
        while True:
            now = time.time()
            if not self.dir.is_dir() or (self.dir / STOP).exists():
                return
            cfg = self.config()
            if self._controller_gone(cfg, now):
                return
            (self.dir / HEARTBEAT).write_text(f"{now}\n", encoding="ascii")
            self._maybe_check(cfg, now)
            time.sleep(BEAT_EVERY)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tide.exec.agent <nodes-dir> <node>", file=sys.stderr)
        return 2
    nodes_dir, node = Path(argv[0]).resolve(), argv[1]
    agent = Agent(nodes_dir, node)
    agent.dir.mkdir(parents=True, exist_ok=True)
    jobdir.write_pid(agent.dir / PIDFILE, os.getpid())
    try:
        agent.run()
    finally:
        # a clean exit: the controller starts a new agent instead of calling it a failure
        with contextlib.suppress(OSError):
            if jobdir.read_pid(agent.dir / PIDFILE) == os.getpid():
                (agent.dir / PIDFILE).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# --- the controller's side --------------------------------------------------

START_GRACE = 15.0  # seconds a new agent may take to write its pid file
LEAVE_WAIT = 10.0  # seconds a starting controller waits for an agent asked to stop


@dataclass(slots=True, frozen=True)
class NodeHealth:
    """One node as the controller's watcher sees it."""

    alive: bool
    why: str = ""  # why the node does not answer
    failed_check: str | None = None  # output of a new failed health check, reported once


class AgentPool:
    """Starts, watches, fails and stops the agents of the local executor's nodes."""

    def __init__(self, nodes_dir: Path, python: str, timeout: float = HEARTBEAT_TIMEOUT) -> None:
        self.timeout = timeout  # SlurmdTimeout: seconds without a heartbeat before DOWN
        self.dir = nodes_dir
        self.python = python
        self.names: list[str] = []
        self._spawned: dict[str, tuple[float, subprocess.Popen[bytes]]] = {}
        self._seen_check: dict[str, float] = {}
        self._lock = threading.Lock()

    def start(self, names: list[str], program: str = "", interval: float = 30.0) -> None:
        """Adopt live agents, start missing ones. An agent whose pid file is left
        (it died without a clean exit) is a failed node: it stays dead until resumed."""
        self.dir.mkdir(parents=True, exist_ok=True)
        cfg = {"controller_pid": os.getpid(), "health_program": program}
        cfg["health_interval"] = interval
        jobdir.write_json_atomic(self.dir / CONFIG, cfg)
        self.names = list(names)
        for name in names:
            self._let_leave(name)
            if self.pid(name) is None and not (self.dir / name / PIDFILE).exists():
                self.spawn(name)

    def _let_leave(self, name: str) -> None:
        """An agent asked to stop by the last controller is leaving: wait for its clean
        exit, so it is replaced, not adopted. Adopted, it exited a moment later and its
        node looked dead (DOWN, fenced: its jobs killed). The last controller waits only
        for the agents it spawned, and a loaded machine may take any time to run one."""
        if not (self.dir / name / STOP).exists():
            return
        deadline = time.time() + LEAVE_WAIT
        while self.pid(name) is not None and time.time() < deadline:
            time.sleep(0.05)
        if self.pid(name) is not None:  # still there: it serves on instead
            with contextlib.suppress(FileNotFoundError):
                (self.dir / name / STOP).unlink()

    def spawn(self, name: str) -> None:
        d = self.dir / name
        d.mkdir(parents=True, exist_ok=True)
        for stale in (STOP, PIDFILE, HEALTH, HEARTBEAT):
            with contextlib.suppress(FileNotFoundError):
                (d / stale).unlink()
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        with open(d / "agent.log", "ab") as log:
            proc = subprocess.Popen(
                [self.python, "-m", "tide.exec.agent", str(self.dir), name],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,  # a controller crash leaves it running
            )
        with self._lock:
            self._spawned[name] = (time.time(), proc)

    def pid(self, name: str) -> int | None:
        """The live agent's pid, checked to be that node's agent (pids get reused)."""
        pid = jobdir.read_pid(self.dir / name / PIDFILE)
        if pid is None or not procs.is_alive(pid):
            return None
        argv = procs.cmdline(pid)
        if procs.HAVE_PROC and ("tide.exec.agent" not in argv or name not in argv):
            return None
        return pid

    def _starting(self, name: str, now: float) -> bool:
        with self._lock:
            got = self._spawned.get(name)
        return got is not None and got[1].poll() is None and now - got[0] < START_GRACE

    def health(self, name: str, now: float) -> NodeHealth:
        pid = self.pid(name)
        if pid is None:
            if self._starting(name, now):
                return NodeHealth(True)
            return NodeHealth(False, "its agent process is gone")
        try:
            age = now - (self.dir / name / HEARTBEAT).stat().st_mtime
        except OSError:
            age = 0.0 if self._starting(name, now) else self.timeout + 1
        if age > self.timeout:
            return NodeHealth(False, f"no heartbeat from its agent for {age:.0f} s")
        return NodeHealth(True, failed_check=self._new_failed_check(name))

    def _new_failed_check(self, name: str) -> str | None:
        result = jobdir.read_json(self.dir / name / HEALTH)
        if not result or result.get("ok"):
            return None
        when = float(result.get("time", 0.0))
        if when <= self._seen_check.get(name, 0.0):
            return None
        self._seen_check[name] = when
        return str(result.get("output", ""))

    def fail(self, name: str) -> bool:
        """Simulate the node's failure: SIGKILL its agent. False when none ran."""
        pid = self.pid(name)
        if pid is None:
            return False
        procs.kill_quietly(pid, 9)
        return True

    def resume(self, name: str) -> None:
        """A node back in service gets a fresh agent if its old one is gone."""
        if self.pid(name) is None:
            self.spawn(name)

    def stop(self) -> None:
        """Ask every agent to exit (a clean controller shutdown)."""
        for name in self.names:
            with contextlib.suppress(OSError):
                (self.dir / name / STOP).write_text("stop\n")
        with self._lock:
            for _, proc in self._spawned.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=3 * BEAT_EVERY)
            self._spawned.clear()
