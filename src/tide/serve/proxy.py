"""The router's HTTP/1.1 data path: asyncio protocols with httptools (the
parser uvicorn uses) on uvloop where installed.

A client connection parses requests (keep-alive, pipelined requests served
in order, bodies buffered up to MAX_BODY so a request can be retried); each
request becomes an Exchange on a pooled keep-alive connection to the chosen
replica. The response is streamed back as it arrives (an LLM server's token
stream reaches the client token by token): same status and headers, minus
hop-by-hop ones, with its own framing (Content-Length kept, otherwise
chunked). A replica that refuses the connection or drops it before the
first response byte costs nothing but a retry on another replica.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httptools

from tide.serve.guardian import ANSWERING, IDLE, RECEIVED, SENT, Guard

MAX_BODY = 16 * 1024 * 1024
HOP = {
    b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer",
    b"transfer-encoding", b"upgrade", b"content-length", b"host",
}  # fmt: skip
_HOP_NAMES = b"|".join(sorted(HOP - {b"content-length"}))
_HOP_LINE = re.compile(rb"\n(?:" + _HOP_NAMES.replace(b"-", rb"\-") + rb")[ \t]*:", re.IGNORECASE)
_LENGTH_LINE = re.compile(rb"\ncontent-length[ \t]*:[ \t]*(\d+)[ \t]*(?=\r?\n)", re.IGNORECASE)
STATUS_TEXT = {
    400: b"Bad Request", 404: b"Not Found", 413: b"Payload Too Large",
    502: b"Bad Gateway", 503: b"Service Unavailable", 504: b"Gateway Timeout",
}  # fmt: skip


@dataclass(slots=True)
class Request:
    method: bytes
    url: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    keep_alive: bool
    received: float  # perf_counter when the whole request was in

    def encode(self, host: bytes, client: bytes) -> bytes:
        out = [self.method, b" ", self.url, b" HTTP/1.1\r\nHost: ", host, b"\r\n"]
        for k, v in self.headers:
            if k.lower() not in HOP:
                out += [k, b": ", v, b"\r\n"]
        if self.body or self.method not in (b"GET", b"HEAD"):
            out += [b"Content-Length: ", str(len(self.body)).encode(), b"\r\n"]
        out += [b"X-Forwarded-For: ", client, b"\r\n\r\n", self.body]
        return b"".join(out)


def simple_response(status: int, body: bytes, keep_alive: bool = True) -> bytes:
    head = b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % (
        status,
        STATUS_TEXT.get(status, b"Error"),
        len(body),
    )
    if not keep_alive:
        head += b"Connection: close\r\n"
    return head + b"\r\n" + body


# --- the client side ----------------------------------------------------------------


class ClientProtocol(asyncio.Protocol):
    """One client connection: parse, queue, serve requests one at a time, in order.

    `fast(req, client)` may start a request with callbacks only (no task: the
    common case, an idle pooled connection to a ready replica) and returns
    True; it then calls `client.done(req)` when the answer is out, or
    `client.slow(req)` to hand it to `handle`, the coroutine that can wait
    (connecting, buffering, retrying)."""

    def __init__(
        self,
        handle: Callable[[Request, ClientProtocol], Any],
        fast: Callable[[Request, ClientProtocol], bool] | None = None,
        guard: Guard | None = None,
    ) -> None:
        self._handle = handle
        self._fast = fast
        self._guard = guard
        self._slot = -1  # in the guardian's journal (tide.serve.guardian)
        self._busy = False
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.peer = b"unknown"
        self._queue: deque[Request] = deque()
        self._task: asyncio.Task[None] | None = None  # the slow path's, while it runs
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._size = 0
        self.closed = False
        self._writable = asyncio.Event()
        self._writable.set()

    # asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = str(peer[0]).encode()
        if self._guard is not None:
            self._slot = self._guard.adopt(transport.get_extra_info("socket"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._writable.set()
        if self._slot >= 0 and self._guard is not None:
            self._guard.release(self._slot)
            self._slot = -1

    def mark(self, state: int) -> None:
        """Where the request in progress is, for the guardian (tide.serve.guardian)."""
        if self._slot >= 0 and self._guard is not None:
            self._guard.journal[self._slot] = state

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.fail(400, b'{"error": "upgrades (websockets) are not routed"}')
        except httptools.HttpParserError:
            self.fail(400, b'{"error": "malformed HTTP request"}')

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._url, self._headers, self._body, self._size = b"", [], [], 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))
        expect = len(name) == 6 and name.lower() == b"expect"
        if expect and value.lower() == b"100-continue" and self.transport:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > MAX_BODY:
            self.fail(413, b'{"error": "request body over 16 MiB"}')
            return
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self.closed:
            return
        req = Request(
            self.parser.get_method(), self._url, self._headers, b"".join(self._body),
            self.parser.should_keep_alive(), time.perf_counter(),
        )  # fmt: skip
        self._queue.append(req)
        if len(self._queue) > 32 and self.transport:
            self.transport.pause_reading()
        self._pump()

    def _pump(self) -> None:
        """Start the next request unless one is being served."""
        if self._busy or not self._queue or self.closed:
            return
        req = self._queue.popleft()
        self._busy = True
        self.mark(RECEIVED)
        if self.transport and len(self._queue) <= 8:
            self.transport.resume_reading()
        if self._fast is not None and self._fast(req, self):
            return
        self.slow(req)

    def slow(self, req: Request) -> None:
        self._task = asyncio.get_running_loop().create_task(self._serve(req))

    async def _serve(self, req: Request) -> None:
        await self._handle(req, self)
        self._task = None
        self.done(req)

    def done(self, req: Request) -> None:
        """The request's answer is out: on to the next one."""
        self._busy = False
        self.mark(IDLE)
        if not req.keep_alive:
            self.close()
            return
        self._pump()

    # used by exchanges
    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.mark(ANSWERING)
            self.transport.write(data)

    async def drain(self) -> None:
        await self._writable.wait()

    def fail(self, status: int, body: bytes) -> None:
        self.write(simple_response(status, body, keep_alive=False))
        self.close()

    def close(self) -> None:
        if not self.closed and self.transport is not None:
            self.closed = True
            self.transport.close()


# --- the replica side ---------------------------------------------------------------


class UpstreamClosed(Exception):
    """The replica refused or dropped the connection before the first response byte."""


class UpstreamRefused(UpstreamClosed):
    """No connection to the replica at all: the request never reached it."""


class Exchange:
    """One request on one upstream connection, streaming into the client.
    `callback(ok, error)` runs once: (True, None) answered and the connection
    reusable, (False, None) ended otherwise, (False, UpstreamClosed) nothing
    was answered (safe to retry), (False, TimeoutError) no answer in time."""

    __slots__ = ("callback", "chunked", "client", "first_byte", "head_only", "passed",
                 "started", "status")  # fmt: skip

    def __init__(
        self,
        client: ClientProtocol,
        head_only: bool,
        callback: Callable[[bool, BaseException | None], None],
    ) -> None:
        self.client = client
        self.head_only = head_only
        self.callback: Callable[[bool, BaseException | None], None] | None = callback
        self.started = False  # response bytes went to the client (no retry after this)
        self.status = 0
        self.chunked = False
        self.passed = False  # the response goes to the client as the replica wrote it
        self.first_byte = 0.0  # perf_counter of the response head

    def end(self, ok: bool, error: BaseException | None = None) -> None:
        cb, self.callback = self.callback, None
        if cb is not None:
            cb(ok, error)


class UpstreamProtocol(asyncio.Protocol):
    """A keep-alive connection to one replica; one exchange at a time.

    A response with a Content-Length and no hop-by-hop header (the common
    case) passes through as the replica wrote it, byte for byte: httptools
    only finds where it ends. Any other (chunked, `Connection`, 1xx, HEAD,
    204/304) gets its head rebuilt and its body framed again."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.ex: Exchange | None = None
        self.open = False
        self.reusable = True
        self.deadline = 0.0  # monotonic time the exchange in progress must end by
        self._head: list[bytes] = []  # reads of the response until its head is complete
        self._left = 0  # bytes of a passed-through response still to come
        self._out: list[bytes] = []  # bytes for the client from the current read

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.open = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        ex, self.ex = self.ex, None
        if ex is not None:
            if ex.started:
                ex.client.close()  # half a response went out: the client must see it end
                ex.end(False)
            else:
                ex.end(False, UpstreamClosed("replica closed the connection"))

    def data_received(self, data: bytes) -> None:
        ex = self.ex
        if self._left:  # passing a response through: the rest of it, not a byte more
            part = data if len(data) <= self._left else data[: self._left]
            self._left -= len(part)
            self._out.append(part)
        elif ex is not None and not ex.started:
            self._head.append(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.reusable = False
            if self.transport:
                self.transport.close()
        if self._out and ex is not None:  # what this read produced: one write, not one per part
            self._flush(ex)
            if not ex.client._writable.is_set() and self.transport is not None:
                # a slow client: stop reading the replica until it catches up
                self.transport.pause_reading()
                asyncio.get_running_loop().create_task(self._resume_when(ex.client))

    def _flush(self, ex: Exchange) -> None:
        ex.client.write(self._out[0] if len(self._out) == 1 else b"".join(self._out))
        self._out.clear()

    def send(self, ex: Exchange, payload: bytes) -> None:
        self.ex = ex
        self._head = []
        self._left = 0
        assert self.transport is not None
        ex.client.mark(SENT)
        self.transport.write(payload)

    # httptools callbacks
    def on_headers_complete(self) -> None:
        ex = self.ex
        if ex is None:
            return
        status = self.parser.get_status_code()
        data = self._head[0] if len(self._head) == 1 else b"".join(self._head)
        end = _head_end(data)
        if status < 200:  # 1xx: drop it, wait for the real response
            self._head = [data[end:]]
            return
        self._head = []
        ex.status, ex.started = status, True
        ex.first_byte = time.perf_counter()
        head = data[:end]
        length = _passable(head) if not ex.head_only and status not in (204, 304) else None
        if length is not None:  # the response as it is; the body follows it
            whole = end + length
            if len(data) > whole:  # more than one response: a broken replica
                self.reusable = False
            self._out.append(data[:whole])
            self._left = max(0, whole - len(data))
            ex.chunked = False
            ex.passed = True
            return
        reason, headers = _parse_head(head)
        self._out.append(_rebuilt_head(ex, status, reason, headers))
        if ex.head_only:  # httptools cannot know a HEAD response has no body
            self.reusable = False
            self._finish(True)

    def on_body(self, body: bytes) -> None:
        ex = self.ex
        if ex is None or ex.passed:
            return
        if ex.chunked:
            self._out.append(b"%x\r\n%s\r\n" % (len(body), body))
        else:
            self._out.append(body)

    async def _resume_when(self, client: ClientProtocol) -> None:
        await client.drain()
        if self.open and self.transport is not None:
            self.transport.resume_reading()

    def on_message_complete(self) -> None:
        ex = self.ex
        if ex is not None and ex.chunked:
            self._out.append(b"0\r\n\r\n")
        if not self.parser.should_keep_alive():
            self.reusable = False
        self._finish(True)

    def _finish(self, ok: bool) -> None:
        ex, self.ex = self.ex, None
        if ex is not None:
            if self._out:  # the answer is out before the exchange ends (the client may close)
                self._flush(ex)
            ex.end(ok)


def _head_end(data: bytes) -> int:
    """Where the response head ends in `data` (after its blank line)."""
    crlf = data.find(b"\r\n\r\n")
    lf = data.find(b"\n\n")
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf + 4
    return lf + 2 if lf >= 0 else len(data)


def _parse_head(head: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """(reason phrase, headers) of a head httptools already accepted."""
    lines = head.replace(b"\r\n", b"\n").split(b"\n")
    parts = lines[0].split(b" ", 2)
    reason = parts[2].strip() if len(parts) > 2 else b""
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        if not line:
            continue
        if line[:1] in (b" ", b"\t") and headers:  # an obsolete folded line
            k, v = headers[-1]
            headers[-1] = (k, v + b" " + line.strip())
            continue
        k, _, v = line.partition(b":")
        headers.append((k.strip(), v.strip()))
    return reason, headers


def _passable(head: bytes) -> int | None:
    """The Content-Length of a response head that can pass through unchanged (no
    hop-by-hop header, one valid length), else None. Regular expressions over
    the raw head: one C call each, not a Python loop over its lines."""
    if _HOP_LINE.search(head):
        return None
    lengths = _LENGTH_LINE.findall(head)
    return int(lengths[0]) if len(lengths) == 1 else None


def _rebuilt_head(
    ex: Exchange, status: int, reason: bytes, headers: list[tuple[bytes, bytes]]
) -> bytes:
    length = None
    out = [b"HTTP/1.1 %d " % status, reason or b"OK", b"\r\n"]
    for k, v in headers:
        lk = k.lower()
        if lk == b"content-length":
            length = v
        elif lk not in HOP:
            out += [k, b": ", v, b"\r\n"]
    if length is not None:
        out += [b"Content-Length: ", length, b"\r\n"]
    elif not ex.head_only and status not in (204, 304):
        ex.chunked = True
        out.append(b"Transfer-Encoding: chunked\r\n")
    out.append(b"\r\n")
    return b"".join(out)


class UpstreamPool:
    """Idle keep-alive connections to one replica."""

    def __init__(self, host: str, port: int, limit: int = 64) -> None:
        self.host, self.port = host, port
        self.hostport = f"{host}:{port}".encode()
        self.idle: list[UpstreamProtocol] = []
        self.limit = limit

    def idle_conn(self) -> UpstreamProtocol | None:
        """A kept-alive connection, if one is idle (no waiting)."""
        while self.idle:
            conn = self.idle.pop()
            if conn.open and conn.reusable:
                return conn
        return None

    async def get(self) -> tuple[UpstreamProtocol, bool]:
        """(a connection, whether it is fresh)."""
        conn = self.idle_conn()
        if conn is not None:
            return conn, False
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(UpstreamProtocol, self.host, self.port)
        except OSError as e:
            raise UpstreamRefused(f"cannot connect to {self.host}:{self.port}: {e}") from e
        return conn, True

    def put(self, conn: UpstreamProtocol) -> None:
        if conn.open and conn.reusable and len(self.idle) < self.limit:
            self.idle.append(conn)
        elif conn.transport is not None:
            conn.transport.close()

    def close(self) -> None:
        for c in self.idle:
            if c.transport is not None:
                c.transport.close()
        self.idle.clear()
