"""The request router of one service: a process listening on the service's
stable address (`python -m tide.serve.router`), started and fed by the
controller (tide.serve.controller), outliving it like a job's supervisor.

* Requests go to the ready replica with the fewest in flight
  (tide.sched.serving.routing, the rule the twin uses too).
* A request whose replica refuses or drops the connection before the first
  response byte is retried on another replica, waiting for one if none is
  ready (a refused connection never reached the replica and is always tried
  elsewhere; at most 3 drops); the replica is left out for 2 s or until the
  controller's next update. A drop by a replica the controller says was lost
  (its node failed: `lost` in its update, often a moment after the drops) is
  not the request's doing and does not count: at the third drop the request
  waits for the controller's word on those replicas (up to 10 s).
* With no ready replica (scaling from zero, a rollout gone wrong) requests
  wait up to `buffer` seconds for one, then get 503.
* Replicas removed by an update get no new requests; their requests in
  flight finish on their own connections (drain). `GET /stats` tells the
  controller when a draining replica is idle, so it can stop it.
* Measured for the autoscaler and Prometheus: requests, responses by class,
  router errors, retries, requests in flight and buffered (and their time
  integrals), latency to the first response byte and to the end (histogram
  buckets and the recent window's percentiles).

The admin API (controller only: a bearer token from a 0600 file) is a second
port on 127.0.0.1: `PUT /endpoints`, `GET /stats?window=S`, `POST /shutdown`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hmac
import json
import os
import signal
import socket
import sys
import time
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tide.sched.serving.routing import least_outstanding
from tide.serve.guardian import Guard
from tide.serve.proxy import (
    ClientProtocol,
    Exchange,
    Request,
    UpstreamClosed,
    UpstreamPool,
    UpstreamProtocol,
    UpstreamRefused,
    simple_response,
)

MAX_TRIES = 3
EJECT_SECONDS = 2.0
UPSTREAM_TIMEOUT = 600.0
VERDICT_SECONDS = 10.0  # the longest a thrice-dropped request waits for the controller's word
LOST_MEMORY = 600.0  # how long a replica the controller said was lost is remembered
DRAIN_SECONDS = 10.0  # a stopping router answers what it holds for this long at most
SWEEP_SECONDS = 1.0  # how often exchanges past UPSTREAM_TIMEOUT are looked for
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CLASSES = tuple(f"{k}xx" for k in range(6))  # status // 100 -> its class
RECENT = 20_000  # latency samples kept for windowed percentiles


@dataclass(slots=True)
class Endpoint:
    id: str
    host: str
    port: int
    pool: UpstreamPool
    outstanding: int = 0
    ejected_until: float = 0.0
    draining: bool = False
    served: int = 0

    def usable(self, now: float) -> bool:
        return not self.draining and now >= self.ejected_until


@dataclass(slots=True)
class Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0
    n: int = 0

    def add(self, v: float) -> None:
        self.counts[bisect_left(BUCKETS, v)] += 1
        self.total += v
        self.n += 1

    def export(self) -> dict[str, Any]:
        return {
            "buckets": list(BUCKETS),
            "counts": list(self.counts),
            "sum": self.total,
            "count": self.n,
        }


@dataclass(slots=True)
class Stats:
    requests: int = 0
    codes: dict[str, int] = field(default_factory=dict)  # "2xx" -> n
    errors: int = 0  # answers the router made itself (502/503/504)
    retries: int = 0
    inflight: int = 0
    buffered: int = 0
    inflight_seconds: float = 0.0  # integral of inflight over time
    buffered_seconds: float = 0.0
    since: float = field(default_factory=time.monotonic)
    _t: float = field(default_factory=time.monotonic)
    ttfb: Histogram = field(default_factory=Histogram)
    latency: Histogram = field(default_factory=Histogram)
    recent: deque[tuple[float, float, float]] = field(default_factory=lambda: deque(maxlen=RECENT))

    def tick(self) -> None:
        now = time.monotonic()
        dt = now - self._t
        self.inflight_seconds += self.inflight * dt
        self.buffered_seconds += self.buffered * dt
        self._t = now

    def answered(self, status: int, ttfb: float, total: float) -> None:
        key = CLASSES[status // 100] if 0 <= status < 600 else "other"
        self.codes[key] = self.codes.get(key, 0) + 1
        self.ttfb.add(ttfb)
        self.latency.add(total)
        self.recent.append((time.monotonic(), ttfb, total))

    def window(self, seconds: float) -> dict[str, Any]:
        start = time.monotonic() - seconds
        firsts = sorted(t for at, t, _ in self.recent if at >= start)
        totals = sorted(t for at, _, t in self.recent if at >= start)
        return {
            "seconds": seconds,
            "answered": len(firsts),
            "ttfb": _percentiles(firsts),
            "latency": _percentiles(totals),
        }


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None}
    n = len(values)
    return {f"p{q}": values[min(n - 1, int(q / 100 * n))] for q in (50, 95, 99)}


class Router:
    def __init__(self, name: str, buffer: float = 30.0) -> None:
        self.name = name
        self.buffer = buffer
        self.endpoints: dict[str, Endpoint] = {}
        self.stats = Stats()
        self._ready = asyncio.Event()
        self._rr = 0
        self.generation = 0  # of the last endpoint update
        self._busy: dict[UpstreamProtocol, tuple[float, Exchange]] = {}  # exchanges under way
        self._sweeper: asyncio.TimerHandle | None = None
        self.lost: dict[str, float] = {}  # replicas lost with their node -> when we heard
        self._news = asyncio.Event()  # set (and replaced) by each update

    # --- endpoints ---------------------------------------------------------------------

    def update(
        self, items: list[dict[str, Any]], buffer: float | None = None, lost: Any = ()
    ) -> None:
        """The controller's view: the ready replicas (others drain), and the
        replicas it knows were lost to something outside them (their node failed)."""
        if buffer is not None:
            self.buffer = buffer
        now = time.monotonic()
        for eid in lost:
            self.lost[str(eid)] = now
        if self.lost:
            self.lost = {k: t for k, t in self.lost.items() if now - t < LOST_MEMORY}
        wanted = {str(i["id"]): i for i in items}
        for eid, ep in list(self.endpoints.items()):
            if eid not in wanted:
                ep.draining = True
                if ep.outstanding == 0:
                    self._drop(eid)
        for eid, item in wanted.items():
            known = self.endpoints.get(eid)
            host, port = str(item["host"]), int(item["port"])
            if known is None or (known.host, known.port) != (host, port):
                if known is not None:
                    known.pool.close()
                self.endpoints[eid] = Endpoint(eid, host, port, UpstreamPool(host, port))
            else:
                known.draining = False  # back from draining; an ejection runs its 2 s
        self.generation += 1
        self._signal_ready()
        self._news.set()  # wakes requests waiting for a verdict (_blamed)
        self._news = asyncio.Event()

    def _drop(self, eid: str) -> None:
        ep = self.endpoints.pop(eid, None)
        if ep is not None:
            ep.pool.close()

    def _signal_ready(self) -> None:
        now = time.monotonic()
        if any(ep.usable(now) for ep in self.endpoints.values()):
            self._ready.set()
        else:
            self._ready.clear()

    def pick(self) -> Endpoint | None:
        now = time.monotonic()
        eps = self.endpoints.values()
        ready = [ep for ep in eps if not ep.draining and now >= ep.ejected_until]
        self._rr += 1
        if len(ready) < 2:
            return ready[0] if ready else None
        return ready[least_outstanding([ep.outstanding for ep in ready], self._rr)]

    async def _wait_ready(self, deadline: float) -> Endpoint | None:
        st = self.stats
        st.tick()
        st.buffered += 1
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._signal_ready()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ready.wait(), timeout=min(left, EJECT_SECONDS))
                ep = self.pick()
                if ep is not None:
                    return ep
        finally:
            st.tick()
            st.buffered -= 1

    # --- requests ------------------------------------------------------------------------

    def fast(self, req: Request, client: ClientProtocol) -> bool:
        """The common case with callbacks only: a ready replica with an idle kept-alive
        connection. False: the coroutine path (`handle`) must take the request."""
        ep = self.pick()
        conn = ep.pool.idle_conn() if ep is not None else None
        if ep is None or conn is None:
            self._rr -= 1  # the slow path picks again: the same turn of the rotation
            return False
        st = self.stats
        st.requests += 1
        st.tick()
        st.inflight += 1
        ep.outstanding += 1

        def finished(ok: bool, error: BaseException | None) -> None:
            self._busy.pop(conn, None)
            st.tick()
            st.inflight -= 1
            self._release(ep)
            if isinstance(error, UpstreamClosed):  # a stale pooled connection: try again
                st.requests -= 1  # `handle` counts it
                client.slow(req)
                return
            if isinstance(error, TimeoutError):
                self._timed_out(conn, ex, client, req)
            else:
                if ok:
                    ep.pool.put(conn)
                self._answered(ep, ex, req)
            client.done(req)

        ex = Exchange(client, req.method == b"HEAD", finished)
        self._watch(conn, ex)
        conn.send(ex, req.encode(ep.pool.hostport, client.peer))
        return True

    def _watch(self, conn: UpstreamProtocol, ex: Exchange) -> None:
        """The exchange must end within UPSTREAM_TIMEOUT (one sweep a second checks,
        not a timer per request: a uvloop timer made and cancelled costs more than
        the rest of the request's Python)."""
        self._busy[conn] = (time.monotonic() + UPSTREAM_TIMEOUT, ex)
        if self._sweeper is None:
            loop = asyncio.get_running_loop()
            self._sweeper = loop.call_later(SWEEP_SECONDS, self._sweep)

    def _sweep(self) -> None:
        now = time.monotonic()
        late = [ex for deadline, ex in self._busy.values() if deadline <= now]
        for ex in late:
            ex.end(False, TimeoutError())
        self._sweeper = None
        if self._busy:
            self._sweeper = asyncio.get_running_loop().call_later(SWEEP_SECONDS, self._sweep)

    async def handle(self, req: Request, client: ClientProtocol) -> None:
        st = self.stats
        st.requests += 1
        st.tick()
        st.inflight += 1
        try:
            await self._route(req, client)
        finally:
            st.tick()
            st.inflight -= 1

    async def _route(self, req: Request, client: ClientProtocol) -> None:
        """Try replicas until one answers. A replica that cannot be reached never
        saw the request: another is tried (waiting for a ready one up to the
        buffer time, as when scaling from zero), so a node failure that takes
        every replica at once costs waiting, not errors. A replica that dropped
        the request may have run it: at most MAX_TRIES such tries, each drop
        giving the request a fresh buffer time to find a ready replica, unless
        the controller says the replica was lost with its node (_blamed)."""
        deadline = time.monotonic() + self.buffer
        why = "no ready replica"
        dropped: list[str] = []  # replicas that dropped it, the request perhaps to blame
        tries = 0
        while True:
            ep = self.pick() or await self._wait_ready(deadline)
            if ep is None:
                break
            if tries:
                self.stats.retries += 1
            tries += 1
            ep.outstanding += 1
            try:
                ex = await self._exchange(ep, req, client)
            except UpstreamClosed as e:
                why = str(e)
                ep.ejected_until = time.monotonic() + EJECT_SECONDS
                self._signal_ready()
                if isinstance(e, UpstreamRefused):
                    continue
                dropped.append(ep.id)
                deadline = time.monotonic() + self.buffer
            else:
                self._answered(ep, ex, req)
                return
            finally:
                self._release(ep)
            if len(dropped) >= MAX_TRIES:
                dropped = await self._blamed(dropped, deadline)
                if len(dropped) >= MAX_TRIES:
                    break
        status = 503 if why == "no ready replica" else 502
        self._error(client, req, status, why)

    async def _blamed(self, dropped: list[str], deadline: float) -> list[str]:
        """The drops still held against a request once the controller has had its
        say. A node failure kills its replicas one after another (each job's
        supervisor, then the fence), so a request can follow them and be dropped
        by each before the controller's update says they were lost; a request
        that kills the replicas it visits (a query of death) sees them removed as
        crashed, or still listed. Waits for updates until every replica that
        dropped it is lost or gone, at most VERDICT_SECONDS (and the buffer)."""
        until = min(deadline, time.monotonic() + VERDICT_SECONDS)
        while True:
            blamed = [eid for eid in dropped if eid not in self.lost]
            if len(blamed) < MAX_TRIES:
                return blamed
            listed = [eid for eid in blamed if self._listed(eid)]
            left = until - time.monotonic()
            if not listed or left <= 0:
                return blamed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._news.wait(), timeout=left)

    def _listed(self, eid: str) -> bool:
        ep = self.endpoints.get(eid)
        return ep is not None and not ep.draining

    async def _exchange(self, ep: Endpoint, req: Request, client: ClientProtocol) -> Exchange:
        payload = req.encode(ep.pool.hostport, client.peer)
        loop = asyncio.get_running_loop()
        for _ in range(2):  # a pooled connection the replica already closed: one fresh try
            conn, fresh = await ep.pool.get()
            done: asyncio.Future[bool] = loop.create_future()
            ex = Exchange(client, req.method == b"HEAD", _resolver(done))
            self._watch(conn, ex)
            conn.send(ex, payload)
            try:
                ok = await done
            except UpstreamClosed:
                if fresh:
                    raise
                continue
            except TimeoutError:
                self._timed_out(conn, ex, client, req)
                return ex
            finally:
                self._busy.pop(conn, None)
            if ok:
                ep.pool.put(conn)
            return ex
        raise UpstreamClosed("the replica closed every connection")

    def _release(self, ep: Endpoint) -> None:
        ep.outstanding -= 1
        if ep.draining and ep.outstanding == 0:
            self._drop(ep.id)

    def _answered(self, ep: Endpoint, ex: Exchange, req: Request) -> None:
        ep.served += 1
        done = time.perf_counter()
        first = ex.first_byte or done
        self.stats.answered(ex.status, first - req.received, done - req.received)

    def _timed_out(self, conn: Any, ex: Exchange, client: ClientProtocol, req: Request) -> None:
        conn.ex = None  # nobody waits for this exchange any more
        if conn.transport is not None:
            conn.transport.close()
        if not ex.started:
            self._error(client, req, 504, "the replica did not answer in time")
            ex.status = 504

    def _error(self, client: ClientProtocol, req: Request, status: int, why: str) -> None:
        self.stats.errors += 1
        key = f"{status // 100}xx"
        self.stats.codes[key] = self.stats.codes.get(key, 0) + 1
        body = json.dumps({"error": why, "service": self.name}).encode()
        client.write(simple_response(status, body, keep_alive=req.keep_alive))

    # --- admin ---------------------------------------------------------------------------

    def snapshot(self, window: float) -> dict[str, Any]:
        st = self.stats
        st.tick()
        return {
            "service": self.name,
            "pid": os.getpid(),
            "uptime": time.monotonic() - st.since,
            "requests": st.requests,
            "codes": dict(st.codes),
            "errors": st.errors,
            "retries": st.retries,
            "inflight": st.inflight,
            "buffered": st.buffered,
            "inflight_seconds": st.inflight_seconds,
            "buffered_seconds": st.buffered_seconds,
            "ttfb": st.ttfb.export(),
            "latency": st.latency.export(),
            "window": st.window(window),
            "generation": self.generation,
            "endpoints": [
                {
                    "id": ep.id,
                    "host": ep.host,
                    "port": ep.port,
                    "outstanding": ep.outstanding,
                    "draining": ep.draining,
                    "served": ep.served,
                    "ejected": ep.ejected_until > time.monotonic(),
                }
                for ep in self.endpoints.values()
            ],
        }


def _resolver(done: asyncio.Future[bool]) -> Any:
    """An exchange callback that settles a future (the coroutine path)."""

    def settle(ok: bool, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(ok)

    return settle


class Admin:
    """The controller's side door: token-checked JSON over HTTP on 127.0.0.1."""

    def __init__(self, router: Router, token: str, stop: asyncio.Event) -> None:
        self.router, self.token, self.stop = router, token, stop

    async def handle(self, req: Request, client: ClientProtocol) -> None:
        status, body = self._answer(req)
        client.write(
            b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (status, len(body), body)
        )

    def _answer(self, req: Request) -> tuple[int, bytes]:
        auth = dict((k.lower(), v) for k, v in req.headers).get(b"authorization", b"")
        if not hmac.compare_digest(auth, b"Bearer " + self.token.encode()):
            return 401, b'{"error": "bad token"}'
        url = urlsplit(req.url.decode("latin-1"))
        if req.method == b"GET" and url.path == "/stats":
            window = float(parse_qs(url.query).get("window", ["10"])[0])
            return 200, json.dumps(self.router.snapshot(window)).encode()
        if req.method == b"PUT" and url.path == "/endpoints":
            try:
                doc = json.loads(req.body)
                lost = [str(x) for x in doc.get("lost", [])]
                self.router.update(list(doc["endpoints"]), doc.get("buffer"), lost)
            except (ValueError, KeyError, TypeError) as e:
                return 400, json.dumps({"error": f"bad endpoints: {e}"}).encode()
            return 200, b'{"ok": true}'
        if req.method == b"POST" and url.path == "/shutdown":
            self.stop.set()
            return 200, b'{"ok": true}'
        return 404, b'{"error": "no such admin route"}'


async def serve(args: argparse.Namespace, guard: Guard | None = None) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    token = Path(args.token_file).read_text().strip()
    router = Router(args.name, args.buffer)
    admin = Admin(router, token, stop)

    def client() -> ClientProtocol:
        return ClientProtocol(router.handle, router.fast, guard)

    if args.fd >= 0:  # the controller's listening socket: it outlives this process
        listening = socket.socket(fileno=args.fd)
        main = await loop.create_server(client, sock=listening, backlog=1024)
    else:
        main = await loop.create_server(
            client, args.host, args.port, reuse_address=True, backlog=1024
        )
    side = await loop.create_server(
        lambda: ClientProtocol(admin.handle), "127.0.0.1", args.admin_port
    )
    port = main.sockets[0].getsockname()[1]
    admin_port = side.sockets[0].getsockname()[1]
    state = {"pid": os.getpid(), "port": port, "admin_port": admin_port, "name": args.name}
    if args.state_file:
        tmp = Path(args.state_file + ".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(args.state_file)
    print(json.dumps(state), flush=True)
    # What was made at start-up lives as long as the router: out of the collector's
    # sight, so its full passes walk only what requests make.
    gc.collect()
    gc.freeze()
    await stop.wait()
    main.close()  # new connections wait in the socket's backlog for the next router
    side.close()
    deadline = time.monotonic() + DRAIN_SECONDS
    while router.stats.inflight > 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # what it holds is answered; then the guardian answers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tide-router", description="tide's request router")
    p.add_argument("--name", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--admin-port", type=int, default=0)
    p.add_argument("--token-file", required=True)
    p.add_argument("--buffer", type=float, default=30.0)
    p.add_argument("--state-file", default="")
    p.add_argument("--fd", type=int, default=-1, help="an inherited listening socket")
    p.add_argument(
        "--no-guardian",
        action="store_true",
        help="no guardian process answering for a router that dies (tide.serve.guardian)",
    )
    args = p.parse_args(argv)
    guard = None
    if not args.no_guardian:
        try:
            guard = Guard(args.name)  # forks: before any event loop
        except OSError as e:
            print(f"tide-router: no guardian ({e}); a router that dies drops what it holds",
                  file=sys.stderr, flush=True)  # fmt: skip
    try:
        import uvloop
    except ImportError:  # plain asyncio works, a little slower
        asyncio.run(serve(args, guard))
    else:
        uvloop.run(serve(args, guard))
    if guard is not None:
        guard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
