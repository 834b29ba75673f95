"""A router's guardian: a small child process that holds a copy of every client
connection of the router, so a router that dies (kill -9, out of memory, a
bug) does not leave its clients with a bare reset.

Each client connection of the router has a slot in a journal shared with the
guardian (an anonymous shared mapping made before the fork): one byte saying
whether the connection is idle, holds a request no replica has seen yet,
holds one a replica has, or is answering. The router hands the guardian a
copy of each connection's descriptor when it accepts it (SCM_RIGHTS over a
socketpair) and tells it when the connection is gone. When the router's end
of the socketpair closes (the router exited, however), the guardian answers
every connection that held an unanswered request with a 502 that says what
happened and whether the request reached a replica, closes the others (an
idle keep-alive connection closing is ordinary HTTP: clients open another),
and exits. The controller meanwhile starts a new router on the same
listening socket (tide.serve.routerproc), which takes the next connections.

Knative does the same job with more machinery: its activator buffers
requests and is itself a replicated Deployment behind the ingress proxy
(Envoy), which turns an activator that dies mid-request into a 502/503 for
the client and may retry it; kube-proxy has no process in the data path to
die. A request in flight is lost in both: only the client can know whether
to send it again. Here the client at least learns which case it is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mmap
import os
import resource
import signal
import socket
import struct
import sys
import time
from collections import deque

SLOTS = 1 << 16  # client connections guarded at once (more: unguarded)
IDLE, RECEIVED, SENT, ANSWERING = 0, 1, 2, 3
OPEN, CLOSE = 1, 2
_MSG = struct.Struct("!BI")


class Guard:
    """The router's side: slots, the journal, the channel to the guardian."""

    def __init__(self, name: str) -> None:
        self.journal = mmap.mmap(-1, SLOTS)
        self._free = list(range(SLOTS - 1, -1, -1))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the guardian: keeps its channel, stdout and stderr, nothing else
            keep = theirs.fileno()
            os.closerange(3, keep)
            os.closerange(keep + 1, max(keep + 1, _max_fd()))
            code = 0
            try:
                _guard(theirs, self.journal, name)
            except BaseException:
                code = 1
            os._exit(code)
        theirs.close()
        ours.setblocking(False)
        self.pid = pid
        self._chan = ours
        self._backlog: deque[tuple[bytes, int | None]] = deque()
        self._writing = False

    def close(self, timeout: float = 5.0) -> None:
        """The router is leaving by its own choice: let the guardian go (it answers
        what is still held, closes the rest) and reap it, so no zombie is left."""
        self._drop_backlog()
        self._chan.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    return
            time.sleep(0.02)

    def adopt(self, sock: socket.socket | None) -> int:
        """A slot for a new client connection (-1: not guarded)."""
        if sock is None or not self._free:
            return -1
        slot = self._free.pop()
        self.journal[slot] = IDLE
        self._send(_MSG.pack(OPEN, slot), sock.fileno())
        return slot

    def release(self, slot: int) -> None:
        self.journal[slot] = IDLE
        self._free.append(slot)
        self._send(_MSG.pack(CLOSE, slot), None)

    def _send(self, msg: bytes, fd: int | None) -> None:
        if not self._backlog:
            try:
                if fd is None:
                    self._chan.send(msg)
                else:
                    socket.send_fds(self._chan, [msg], [fd])
                return
            except BlockingIOError:
                pass
            except OSError:  # the guardian is gone: connections go unguarded
                return
        # the guardian is behind: queued, with a copy of the descriptor made now
        # (the connection may be closed before the guardian reads)
        self._backlog.append((msg, os.dup(fd) if fd is not None else None))
        if not self._writing:
            self._writing = True
            asyncio.get_running_loop().add_writer(self._chan, self._writable)

    def _flush(self) -> None:
        while self._backlog:
            msg, fd = self._backlog[0]
            try:
                if fd is None:
                    self._chan.send(msg)
                else:
                    socket.send_fds(self._chan, [msg], [fd])
            except BlockingIOError:  # still behind: go on when it reads
                if not self._writing:
                    self._writing = True
                    asyncio.get_running_loop().add_writer(self._chan, self._writable)
                return
            except OSError:  # the guardian is gone: connections go unguarded
                self._drop_backlog()
                return
            self._backlog.popleft()
            if fd is not None:
                os.close(fd)

    def _writable(self) -> None:
        asyncio.get_running_loop().remove_writer(self._chan)
        self._writing = False
        self._flush()

    def _drop_backlog(self) -> None:
        for _, fd in self._backlog:
            if fd is not None:
                os.close(fd)
        self._backlog.clear()


def _guard(chan: socket.socket, journal: mmap.mmap, name: str) -> None:
    """The guardian's loop: keep copies until the router goes, then answer for it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the router's stop is its to handle
    held: dict[int, socket.socket] = {}
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(chan, 16, 4)
        except OSError:
            break
        if not msg:
            break  # the router is gone
        kind, slot = _MSG.unpack(msg[: _MSG.size])
        if kind == OPEN and fds:
            old = held.pop(slot, None)
            if old is not None:
                old.close()
            held[slot] = socket.socket(fileno=fds[0])
        elif kind == CLOSE:
            old = held.pop(slot, None)
            if old is not None:
                old.close()
    for slot, sock in held.items():
        with contextlib.suppress(OSError):
            state = journal[slot]
            if state == IDLE and _unread(sock):
                state = RECEIVED  # a request came that the router never read
            if state in (RECEIVED, SENT):
                sock.settimeout(2.0)
                sock.sendall(died_response(name, reached=state == SENT))
            _drain(sock)  # closing with unread bytes would reset, losing the answer
            sock.shutdown(socket.SHUT_WR)
        sock.close()


def _unread(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


def _drain(sock: socket.socket, limit: int = 1 << 20) -> None:
    sock.setblocking(False)
    with contextlib.suppress(BlockingIOError):
        while limit > 0:
            data = sock.recv(65536)
            if not data:
                return
            limit -= len(data)


def _max_fd() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if 0 < soft < (1 << 20) else 1 << 16


def died_response(name: str, reached: bool) -> bytes:
    if reached:
        why = ("the service's router stopped while a replica had this request: it may "
               "have run; send it again only if that is safe")  # fmt: skip
    else:
        why = ("the service's router stopped before any replica got this request: "
               "it is safe to send again")  # fmt: skip
    body = json.dumps({"error": why, "service": name, "reached_replica": reached}).encode()
    return (
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\nX-Tide-Router: stopped\r\n\r\n%s"
        % (len(body), body)
    )
