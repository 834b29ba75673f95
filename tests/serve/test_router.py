"""The router process on its own (tide.serve.router): bodies both ways,
streamed answers arriving as they are produced, HEAD and 204, retries when a
replica is gone, buffering with no replica, draining an endpoint with a
request in flight, the admin token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serverproc import wait_for

pytestmark = pytest.mark.slow

UPSTREAM = r"""
import asyncio, sys, uvicorn
NAME = sys.argv[2].encode()
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            break
    path = scope["path"]
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for i in range(4):
            await send({"type": "http.response.body", "body": b"t%d;" % i, "more_body": True})
            await asyncio.sleep(0.3)
        await send({"type": "http.response.body", "body": b""})
        return
    if path == "/empty":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    if path == "/hop":  # hop-by-hop headers the router must not pass on
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-length", b"4"), (b"keep-alive", b"timeout=99"), (b"x-up", NAME)]})
        await send({"type": "http.response.body", "body": b"hop!"})
        return
    if path == "/slow":
        await asyncio.sleep(1.5)
    if path == "/hang":
        await asyncio.sleep(60)
    out = NAME + b":" + body
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(out)).encode()), (b"x-up", NAME)]})
    await send({"type": "http.response.body", "body": out})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Rig:
    def __init__(self, tmp: Path, buffer: float = 1.5) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ups: dict[str, int] = {}
        (tmp / "token").write_text("secret")
        os.chmod(tmp / "token", 0o600)
        self.port = free_port()
        self.procs.append(subprocess.Popen([
            sys.executable, "-m", "tide.serve.router", "--name", "t", "--port", str(self.port),
            "--token-file", str(tmp / "token"), "--state-file", str(tmp / "r.json"),
            "--buffer", str(buffer)]))  # fmt: skip
        state = wait_for("the router", lambda: (tmp / "r.json").exists()
                         and json.loads((tmp / "r.json").read_text()), 30)  # fmt: skip
        self.admin = f"http://127.0.0.1:{state['admin_port']}"
        self.url = f"http://127.0.0.1:{self.port}"

    def upstream(self, name: str) -> int:
        port = free_port()
        self.procs.append(subprocess.Popen([sys.executable, "-c", UPSTREAM, str(port), name]))
        self.ups[name] = port

        def up() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/x", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(f"upstream {name}", up, 60)
        return port

    def named(self, name: str) -> int:
        """The upstream called `name`, started if no earlier test did (tests of this
        module may run alone, or on different xdist workers)."""
        return self.ups[name] if name in self.ups else self.upstream(name)

    def endpoints(self, **ports: int) -> None:
        self.update({"endpoints": [{"id": n, "host": "127.0.0.1", "port": p}
                                   for n, p in ports.items()]})  # fmt: skip

    def update(self, doc: dict) -> None:  # type: ignore[type-arg]
        r = httpx.put(self.admin + "/endpoints", json=doc,
                      headers={"Authorization": "Bearer secret"})  # fmt: skip
        r.raise_for_status()

    def stats(self) -> dict:  # type: ignore[type-arg]
        r = httpx.get(self.admin + "/stats", headers={"Authorization": "Bearer secret"})
        return r.json()  # type: ignore[no-any-return]

    def close(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(timeout=10)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    r = Rig(tmp_path_factory.mktemp("router"))
    try:
        yield r
    finally:
        r.close()


def test_bodies_headers_head_and_204(rig: Rig):
    rig.endpoints(a=rig.upstream("a"))
    r = httpx.post(rig.url + "/echo", content=b"x" * 100_000, timeout=30)
    assert r.status_code == 200 and r.content == b"a:" + b"x" * 100_000
    assert r.headers["x-up"] == "a"
    h = httpx.head(rig.url + "/echo", timeout=30)
    assert h.status_code == 200 and h.content == b""
    assert httpx.get(rig.url + "/empty", timeout=30).status_code == 204
    assert httpx.get(rig.url + "/after", timeout=30).text == "a:"  # the connection survived


def _one_shot(port: int, head: bytes) -> bytes:
    """A request with `Connection: close` on its own connection: all that comes back."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def test_connection_close_requests_get_their_answer(rig: Rig):
    """A client that asks to close after its request (curl -H 'Connection: close',
    HTTP/1.0 clients) gets the whole answer, also once the router's connections to
    the replica are warm (the answer used to be dropped: the client connection was
    closed before the answer was written)."""
    rig.endpoints(a=rig.named("a"))
    for _ in range(4):
        data = _one_shot(rig.port, b"POST /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                   b"Content-Length: 3\r\n\r\nabc")  # fmt: skip
        assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"\r\n\r\na:abc"), data
        data = _one_shot(rig.port, b"GET /c HTTP/1.0\r\n\r\n")
        assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"\r\n\r\na:"), data


def test_hop_by_hop_headers_stay_behind(rig: Rig):
    """Most answers pass through byte for byte; one with a hop-by-hop header gets a
    head of the router's own, with its end-to-end headers and body."""
    rig.endpoints(a=rig.named("a"))
    with httpx.Client(timeout=30) as c:
        for _ in range(3):
            r = c.get(rig.url + "/hop")
            assert r.content == b"hop!" and r.headers["x-up"] == "a"
            assert "keep-alive" not in r.headers and r.headers["content-length"] == "4"
            r = c.get(rig.url + "/plain")
            assert r.text == "a:" and r.headers["x-up"] == "a"


def test_which_heads_pass_through_unchanged():
    from tide.serve.proxy import _passable

    head = b"HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 12\r\nX-Te: 1\r\n\r\n"
    assert _passable(head) == 12
    for other in (
        b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Length: 12\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nkeep-alive: timeout=5\r\ncontent-length: 1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1,2\r\n\r\n",
    ):
        assert _passable(other) is None, other


def test_streamed_answers_arrive_as_they_are_produced(rig: Rig):
    rig.endpoints(a=rig.named("a"))
    seen: list[tuple[float, bytes]] = []
    t0 = time.perf_counter()
    with httpx.stream("GET", rig.url + "/stream", timeout=30) as r:
        for chunk in r.iter_raw():
            seen.append((time.perf_counter() - t0, chunk))
    assert b"".join(c for _, c in seen) == b"t0;t1;t2;t3;"
    assert seen[0][0] < seen[-1][0] - 0.5  # the first token did not wait for the last


def test_a_gone_replica_costs_a_retry_not_a_request(rig: Rig):
    dead = free_port()  # nothing listens there
    rig.endpoints(a=rig.named("a"), dead=dead)
    before = rig.stats()["retries"]
    answers = [httpx.get(rig.url + "/r", timeout=30) for _ in range(6)]
    assert all(a.status_code == 200 for a in answers)
    st = rig.stats()
    assert st["retries"] > before
    assert any(e["ejected"] for e in st["endpoints"] if e["id"] == "dead")


def test_every_replica_gone_at_once_costs_waiting_not_errors(rig: Rig):
    """A node failure takes every replica: refused connections never reached a
    replica, so the request waits (buffer) for a new one instead of failing."""
    rig.endpoints(dead1=free_port(), dead2=free_port(), dead3=free_port())
    out: list[httpx.Response] = []
    t = threading.Thread(target=lambda: out.append(httpx.get(rig.url + "/w", timeout=30)))
    t.start()
    time.sleep(0.6)
    rig.endpoints(dead1=free_port(), dead2=free_port(), dead3=free_port())  # still none
    time.sleep(0.3)
    rig.endpoints(a=rig.named("a"))  # the replacement is ready
    t.join()
    assert out[0].status_code == 200 and out[0].text == "a:", out[0].text


def test_a_request_every_replica_drops_ends_after_three_tries(rig: Rig):
    """A replica that takes the request and drops it may have run it: a request
    that kills replicas (a query of death) is tried 3 times, then 502."""
    seen: list[int] = []
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(30)

    def drop_all() -> None:
        with srv:
            while len(seen) < 3:
                conn, _ = srv.accept()
                with conn:
                    if conn.recv(65536):
                        seen.append(1)

    t = threading.Thread(target=drop_all)
    t.start()
    port = srv.getsockname()[1]
    rig.endpoints(d1=port, d2=port, d3=port, d4=port)  # four replicas that all drop it
    r = httpx.get(rig.url + "/kill", timeout=30)
    t.join()
    assert r.status_code == 502 and "closed" in r.json()["error"], r.text
    assert len(seen) == 3


def _dying_replicas(
    prefix: str, n: int, seen: list[str]
) -> tuple[dict[str, int], list[threading.Thread]]:
    """`n` replicas that each take one request and die with it in flight (the
    connection and the listening socket closed): a node's processes killed one
    after another while a request moves from one to the next."""
    ports: dict[str, int] = {}
    threads = []
    for i in range(n):
        srv = socket.create_server(("127.0.0.1", 0))
        srv.settimeout(30)

        def die(srv: socket.socket = srv, name: str = f"{prefix}{i}") -> None:
            with srv:
                conn, _ = srv.accept()
                with conn:
                    if conn.recv(65536):
                        seen.append(name)

        ports[f"{prefix}{i}"] = srv.getsockname()[1]
        threads.append(threading.Thread(target=die))
    for t in threads:
        t.start()
    return ports, threads


def _dropped_by_each(
    rig: Rig, prefix: str
) -> tuple[threading.Thread, list[httpx.Response], list[str], dict[str, int]]:
    """Three dying replicas as the service's endpoints and one request sent to it,
    returned once each replica has dropped it: (the request's thread, its response
    once joined, the replicas that saw it, their ports)."""
    seen: list[str] = []
    ports, threads = _dying_replicas(prefix, 3, seen)
    rig.endpoints(**ports)
    out: list[httpx.Response] = []
    t = threading.Thread(target=lambda: out.append(httpx.get(f"{rig.url}/{prefix}", timeout=30)))
    t.start()
    for th in threads:
        th.join()
    return t, out, seen, ports


def test_drops_by_replicas_the_controller_says_were_lost_are_not_the_requests(rig: Rig):
    """A node fails under traffic: its replicas die one after another, and one
    request is dropped by each in turn. The controller tells the router they were
    lost with their node (`lost` in its update, which may come after the drops):
    those drops are not the request's doing, so it waits for a replacement."""
    t, out, seen, ports = _dropped_by_each(rig, "nf")
    assert sorted(seen) == ["nf0", "nf1", "nf2"]  # three drops: the old limit
    time.sleep(0.2)
    rig.update({"endpoints": [], "lost": list(ports)})  # the controller's word, late
    time.sleep(0.2)
    rig.endpoints(a=rig.named("a"))  # the replacement is ready
    t.join()
    assert out[0].status_code == 200 and out[0].text == "a:", out[0].text


def test_a_request_that_kills_the_replicas_it_visits_ends_after_three(rig: Rig):
    """The same drops with replicas the controller removes as crashed (not lost
    with a node): the request killed them, so 502 (a query of death)."""
    t, out, seen, _ = _dropped_by_each(rig, "qod")
    time.sleep(0.2)
    rig.endpoints(a=rig.named("a"))  # the crashed ones are gone, not lost
    t.join()
    assert out[0].status_code == 502 and "closed" in out[0].json()["error"], out[0].text
    assert sorted(seen) == ["qod0", "qod1", "qod2"]


def test_no_replica_buffers_then_503(rig: Rig):
    rig.endpoints()
    t0 = time.perf_counter()
    r = httpx.get(rig.url + "/b", timeout=30)
    assert r.status_code == 503 and "no ready replica" in r.json()["error"]
    assert time.perf_counter() - t0 >= 1.4  # it waited for the 1.5 s buffer
    # a replica that turns up while a request waits gets it
    out: list[httpx.Response] = []
    t = threading.Thread(target=lambda: out.append(httpx.get(rig.url + "/b2", timeout=30)))
    t.start()
    time.sleep(0.5)
    rig.endpoints(a=rig.named("a"))
    t.join()
    assert out[0].status_code == 200


def test_draining_lets_requests_in_flight_finish(rig: Rig):
    rig.endpoints(b=rig.upstream("b"))
    out: list[httpx.Response] = []
    t = threading.Thread(target=lambda: out.append(httpx.get(rig.url + "/slow", timeout=30)))
    t.start()
    time.sleep(0.5)  # the slow request is on b
    rig.endpoints(a=rig.named("a"))  # b leaves: it drains
    st = rig.stats()
    assert [e["id"] for e in st["endpoints"] if e["draining"]] == ["b"]
    assert httpx.get(rig.url + "/n", timeout=30).text == "a:"  # new ones go to a
    t.join()
    assert out[0].status_code == 200 and out[0].text == "b:"
    wait_for("b gone once idle", lambda: all(e["id"] != "b" for e in rig.stats()["endpoints"]), 10)


def test_the_admin_port_wants_the_token(rig: Rig):
    r = httpx.get(rig.admin + "/stats", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    r = httpx.put(rig.admin + "/endpoints", content=b"not json",
                  headers={"Authorization": "Bearer secret"})  # fmt: skip
    assert r.status_code == 400


def test_a_router_that_cannot_start_is_restarted_with_back_off(tmp_path: Path):
    """Its port taken by another program: the router dies at once; the controller's
    handle starts it again after 1, 2, 4 ... s, not at every tick (0.5 s)."""
    from tide.serve.routerproc import RouterHandle, router_token

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        h = RouterHandle(tmp_path, "busy", "127.0.0.1", taken.getsockname()[1],
                         router_token(tmp_path))  # fmt: skip
        log = tmp_path / "busy" / "router.log"
        try:
            end = time.monotonic() + 6
            while time.monotonic() < end:
                assert not h.ensure(30.0)  # never up: the port is not its
                time.sleep(0.1)
            assert 1 <= h.starts <= 4, h.starts  # at 0, ~1 and ~3 s; every tick: ~12
            wait_for("the bind error in the router's log",
                     lambda: "address already in use" in log.read_text(), 60)  # fmt: skip
        finally:
            h.stop()


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_the_guardian_lets_go_of_closed_connections(rig: Rig):
    """Each client connection's copy in the guardian is closed with it: 100
    connections opened and closed leave the guardian (and the router) with the
    descriptors they had."""
    rig.endpoints(a=rig.named("a"))
    router = rig.procs[0].pid
    (guardian,) = map(int, Path(f"/proc/{router}/task/{router}/children").read_text().split())
    before = _fds(guardian), _fds(router)
    for _ in range(100):
        data = _one_shot(rig.port, b"GET /g HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert data.endswith(b"\r\n\r\na:"), data
    wait_for("the copies closed", lambda: _fds(guardian) <= before[0] + 2, 30)
    wait_for("the router's closed", lambda: _fds(router) <= before[1] + 2, 30)


def test_a_router_that_dies_has_its_guardian_answer_what_it_held(tmp_path: Path):
    """kill -9 of the router: its guardian answers each request it held with a 502
    that says whether a replica had it (tide.serve.guardian) and closes idle
    connections, instead of the clients seeing bare resets."""
    rig = Rig(tmp_path, buffer=60)
    try:
        rig.endpoints(a=rig.upstream("a"))
        idle = socket.create_connection(("127.0.0.1", rig.port), timeout=60)
        idle.sendall(b"GET /i HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while not answer.endswith(b"\r\n\r\na:"):  # head and body may come apart
            chunk = idle.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        out: dict[str, httpx.Response | Exception] = {}

        def call(key: str, path: str) -> None:
            try:
                out[key] = httpx.get(rig.url + path, timeout=60)
            except httpx.HTTPError as e:
                out[key] = e

        calls = [threading.Thread(target=call, args=("at_replica", "/hang"))]
        calls[0].start()
        wait_for("a request at the replica", lambda: rig.stats()["inflight"] == 1, 30)
        rig.endpoints()  # no replica left: the next request waits at the router
        calls.append(threading.Thread(target=call, args=("waiting", "/w")))
        calls[1].start()
        wait_for("a request waiting", lambda: rig.stats()["buffered"] == 1, 30)
        rig.procs[0].kill()
        for t in calls:
            t.join(60)
        at, waiting = out["at_replica"], out["waiting"]
        assert isinstance(at, httpx.Response) and at.status_code == 502, at
        assert at.json()["reached_replica"] is True and "may have run" in at.json()["error"]
        assert isinstance(waiting, httpx.Response) and waiting.status_code == 502, waiting
        assert waiting.json()["reached_replica"] is False
        assert "safe to send again" in waiting.json()["error"]
        assert idle.recv(65536) == b""  # closed, not left hanging
        idle.close()
    finally:
        for p in rig.procs:  # the replica still sleeps on /hang
            p.kill()
            p.wait(timeout=30)


def test_a_stopped_router_answers_what_it_holds_and_leaves_nothing_behind(tmp_path: Path):
    """SIGTERM with a request at a replica: the router stops taking connections,
    the request gets its answer, then the router reaps its guardian and exits."""
    rig = Rig(tmp_path)
    try:
        rig.endpoints(a=rig.upstream("a"))
        router = rig.procs[0]
        (guardian,) = map(int, Path(f"/proc/{router.pid}/task/{router.pid}/children")
                          .read_text().split())  # fmt: skip
        out: list[httpx.Response] = []
        t = threading.Thread(target=lambda: out.append(httpx.get(rig.url + "/slow", timeout=60)))
        t.start()
        wait_for("the request at the replica", lambda: rig.stats()["inflight"] == 1, 30)
        router.terminate()
        t.join(60)
        assert out and out[0].status_code == 200 and out[0].text == "a:", out
        assert router.wait(timeout=30) == 0
        wait_for("no guardian left", lambda: not Path(f"/proc/{guardian}").exists(), 30)
    finally:
        rig.close()
