"""The controller's handle on a service's router process: start it (or adopt
the one a previous controller left running), push endpoints, read stats,
stop it. The router outlives the controller, so a controller restart drops
no request. The controller binds the service's port itself and hands the
listening socket to the router: if the router dies, the socket stays open
in the controller, new connections wait in its backlog and the next router
(started at the next tick) takes them, so only the requests the dead
router held are lost."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("tide.serve")
TIMEOUT = 2.0
# A router that dies within QUICK_DEATH s of its start (its port taken, a broken
# install) is started again after 1, 2, 4 ... at most RESTART_MAX s, not every tick.
QUICK_DEATH = 5.0
RESTART_MAX = 30.0


def router_token(root: Path) -> str:
    """The admin token every router of this controller accepts (a 0600 file)."""
    path = root / "router.token"
    if path.exists():
        return path.read_text().strip()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_hex(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    return token


class RouterHandle:
    def __init__(self, root: Path, name: str, host: str, port: int, token: str) -> None:
        self.dir = root / name
        self.name, self.host, self.port, self.token = name, host, port, token
        self.state_file = self.dir / "router.json"
        self.admin_port = 0
        self.pid = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.pushed: str = ""  # the last endpoint document sent
        self.sock: socket.socket | None = None  # the service's listening socket, if ours
        self.starts = 0  # routers started by this handle
        self.started_at = 0.0
        self.quick_deaths = 0  # in a row
        self.next_start = 0.0

    def ensure(self, buffer: float) -> bool:
        """The router is up (adopted or started); False while it is starting."""
        if self.admin_port and self._alive():
            return True
        if self._adopt():
            return True
        if self.proc is not None and self.proc.poll() is None:
            return False  # started, not listening yet
        now = time.monotonic()
        if self.proc is not None and self.started_at:
            if now - self.started_at < QUICK_DEATH:
                self.quick_deaths += 1
                wait = min(RESTART_MAX, 2.0 ** (self.quick_deaths - 1))
                self.next_start = now + wait
                log.warning("service %s: router exited at once (see %s); next start in %g s",
                            self.name, self.dir / "router.log", wait)  # fmt: skip
            else:
                self.quick_deaths = 0
            self.started_at = 0.0
        if now < self.next_start:
            return False
        self._start(buffer)
        self.started_at = now
        return False

    def _alive(self) -> bool:
        # A router this controller started is its child: once dead it stays a
        # zombie that signal 0 still reaches until reaped, so ask the child itself
        # (else a killed router was never restarted).
        if self.proc is not None and self.proc.pid == self.pid:
            alive = self.proc.poll() is None
        else:
            try:
                os.kill(self.pid, 0)
                alive = True
            except OSError:
                alive = False
        if not alive:
            self.admin_port = 0
        return alive

    def _adopt(self) -> bool:
        try:
            state = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return False
        self.pid, self.admin_port = int(state.get("pid", 0)), int(state.get("admin_port", 0))
        if not self.pid or not self._alive() or int(state.get("port", -1)) != self.port:
            self.admin_port = 0
            return False
        try:
            self.stats(1.0)
        except OSError:
            self.admin_port = 0
            return False
        self.pushed = ""  # push again: the router may hold an older view
        return True

    def _start(self, buffer: float) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.state_file.unlink(missing_ok=True)
        token_file = self.dir.parent / "router.token"
        cmd = [
            sys.executable, "-m", "tide.serve.router", "--name", self.name,
            "--host", self.host, "--port", str(self.port), "--token-file", str(token_file),
            "--state-file", str(self.state_file), "--buffer", str(buffer),
        ]  # fmt: skip
        fds: tuple[int, ...] = ()
        sock = self._listening()
        if sock is not None:
            cmd += ["--fd", str(sock.fileno())]
            fds = (sock.fileno(),)
        self.pushed = ""  # a new router knows no endpoint
        self.starts += 1
        with open(self.dir / "router.log", "ab") as out:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # outlives the controller, like a job supervisor
                pass_fds=fds,
            )  # fmt: skip
        log.info("service %s: router starting on %s:%d", self.name, self.host, self.port)

    def _listening(self) -> socket.socket | None:
        """The service's port, bound and listening, kept open here; None if it
        cannot be bound (the router then binds it itself and says why)."""
        if self.sock is not None:
            return self.sock
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(1024)
        except OSError as e:
            sock.close()
            log.warning("service %s: cannot hold port %d: %s", self.name, self.port, e)
            return None
        self.sock = sock
        return sock

    def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=TIMEOUT)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Authorization": f"Bearer {self.token}"}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            out = json.loads(resp.read() or b"{}")
            if resp.status != 200:
                raise OSError(f"router {self.name}: {resp.status} {out}")
            return out  # type: ignore[no-any-return]
        except (http.client.HTTPException, ValueError) as e:
            raise OSError(f"router {self.name}: {e}") from e
        finally:
            conn.close()

    def stats(self, window: float) -> dict[str, Any]:
        return self._call("GET", f"/stats?window={window:g}")

    def push(
        self,
        endpoints: list[dict[str, Any]],
        buffer: float,
        force: bool = False,
        lost: list[str] | None = None,
    ) -> None:
        doc: dict[str, Any] = {"endpoints": endpoints, "buffer": buffer}
        if lost:  # replicas lost with their node (tide.serve.router forgives their drops)
            doc["lost"] = lost
        text = json.dumps(doc, sort_keys=True)
        if text == self.pushed and not force:
            return
        self._call("PUT", "/endpoints", doc)
        self.pushed = text

    def stop(self) -> None:
        if self.admin_port:
            with contextlib.suppress(OSError):
                self._call("POST", "/shutdown")
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.admin_port = 0
        self.state_file.unlink(missing_ok=True)
        if self.sock is not None:  # the service is gone: so is its address
            self.sock.close()
            self.sock = None
