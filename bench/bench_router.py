"""Service benchmarks (figures for docs/services.md).

1. Router overhead: the same small HTTP answer (a uvicorn app, httptools and
   uvloop) called directly and through a service router, in the same run:
   - latency: one keep-alive connection, requests one after another, direct
     and routed rounds interleaved; the router's added p50 and p99 (goal:
     added p50 under 1 ms);
   - throughput: C connections for D seconds, requests/s direct and routed
     (goal: within 20%), and the router's CPU time per request. Twice: with
     the instant answer (the worst case: on a machine short of cores the
     router's CPU competes with the client's and the replica's, so this ratio
     is their CPU shares as much as the router), and with answers that take
     --work-ms (10 ms: a model server's forward pass; the replica, not the
     router, bounds the rate, as in a real service).
   - the router's own Python per request with no sockets (CPU time, so the
     load of a shared machine hardly moves it), against httptools parsing
     the same request and answer alone.
2. Scale-up latency: a real server (local executor) scales a service from 1
   to N replicas: seconds from the decision to each new replica ready, split
   into decision -> job started (scheduling, launch) and started -> ready
   (the process starts, the readiness probe passes).
3. Reclaim latency: a training job borrows the serving pool (tidal lending);
   a scale-up needs its GPUs: decision -> checkpoint signal -> borrower gone
   -> replica ready, against the pool's objective.

Usage: .venv/bin/python bench/bench_router.py [--seconds 5] [--clients 16] [--rounds 5]
       [--work-ms 10] [--only router|scale|reclaim]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httptools

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "server"))
sys.path.insert(0, str(ROOT / "tests" / "serve"))
from serverproc import DATA, ServerProc, free_port, submit, wait_for, wait_state  # noqa: E402
from svc_support import REPLICA, delete_all, kill_routers  # noqa: E402

UPSTREAM = """
import asyncio, uvicorn
BODY = b'{"ok": true, "text": "' + b"x" * 40 + b'"}'
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["query_string"].startswith(b"ms="):  # an answer that takes this long
        await asyncio.sleep(float(scope["query_string"][3:]) / 1000)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": BODY})
uvicorn.run(app, host="127.0.0.1", port=int(__import__("sys").argv[1]), log_level="error",
            loop="uvloop", http="httptools", access_log=False)
"""


# --- a lean HTTP/1.1 client (the client must not be what is measured) -------------------


class _Reader:
    def __init__(self) -> None:
        self.done = False

    def on_message_complete(self) -> None:
        self.done = True


async def _conn(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def _request(reader, writer, payload: bytes) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    writer.write(payload)
    state = _Reader()
    parser = httptools.HttpResponseParser(state)
    while not state.done:
        data = await reader.read(65536)
        if not data:
            raise ConnectionError("closed")
        parser.feed_data(data)
    return time.perf_counter() - t0


def _payload(port: int, ms: float = 0) -> bytes:
    query = f"?ms={ms:g}" if ms else ""
    return f"GET /x{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()


async def _latency(port: int, n: int) -> list[float]:
    reader, writer = await _conn(port)
    payload = _payload(port)
    for _ in range(50):  # warm the connection and both sides
        await _request(reader, writer, payload)
    out = [await _request(reader, writer, payload) for _ in range(n)]
    writer.close()
    return out


async def _throughput(port: int, clients: int, seconds: float, ms: float = 0) -> int:
    payload = _payload(port, ms)
    stop = time.perf_counter() + seconds
    counts = [0] * clients

    async def one(k: int) -> None:
        reader, writer = await _conn(port)
        while time.perf_counter() < stop:
            await _request(reader, writer, payload)
            counts[k] += 1
        writer.close()

    await asyncio.gather(*(one(k) for k in range(clients)))
    return sum(counts)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))]


def bench_router(seconds: float, clients: int, rounds: int, work_ms: float) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="tide-bench-router-"))
    up_port, r_port = free_port(), free_port()
    (tmp / "token").write_text("bench")
    os.chmod(tmp / "token", 0o600)
    quiet = {"stdout": subprocess.DEVNULL}
    up = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(up_port)], **quiet)
    router = subprocess.Popen([sys.executable, "-m", "tide.serve.router", "--name", "bench",
                               "--port", str(r_port), "--token-file", str(tmp / "token"),
                               "--state-file", str(tmp / "router.json")], **quiet)  # fmt: skip
    try:
        state = wait_for("the router", lambda: (tmp / "router.json").exists()
                         and json.loads((tmp / "router.json").read_text()), 30)  # fmt: skip
        import httpx

        wait_for("the upstream", lambda: _up(httpx, up_port), 30)
        doc = {"endpoints": [{"id": "1", "host": "127.0.0.1", "port": up_port}]}
        httpx.put(f"http://127.0.0.1:{state['admin_port']}/endpoints", json=doc,
                  headers={"Authorization": "Bearer bench"}).raise_for_status()  # fmt: skip
        direct_lat, routed_lat = [], []
        for _ in range(rounds):  # interleaved: drift hits both alike
            direct_lat += asyncio.run(_latency(up_port, 400))
            routed_lat += asyncio.run(_latency(r_port, 400))
        tp_direct, tp_routed, cpu, up_cpu = [], [], [], []
        for _ in range(max(1, rounds // 2)):
            u0 = _cpu_seconds(up.pid)
            n = asyncio.run(_throughput(up_port, clients, seconds))
            up_cpu.append((_cpu_seconds(up.pid) - u0) / max(1, n))
            tp_direct.append(n / seconds)
            c0 = _cpu_seconds(router.pid)
            n = asyncio.run(_throughput(r_port, clients, seconds))
            cpu.append((_cpu_seconds(router.pid) - c0) / max(1, n))
            tp_routed.append(n / seconds)
        busy_direct, busy_routed = [], []  # a replica whose answers take `work_ms`
        for _ in range(max(1, rounds // 2)):
            busy_direct.append(asyncio.run(_throughput(up_port, clients, seconds, work_ms)))
            busy_routed.append(asyncio.run(_throughput(r_port, clients, seconds, work_ms)))
    finally:
        for p in (router, up):
            p.terminate()
            p.wait(timeout=10)
    d50, r50 = statistics.median(direct_lat), statistics.median(routed_lat)
    return {
        "direct_p50_ms": 1000 * d50, "routed_p50_ms": 1000 * r50,
        "added_p50_ms": 1000 * (r50 - d50),
        "direct_p99_ms": 1000 * _pct(direct_lat, 99), "routed_p99_ms": 1000 * _pct(routed_lat, 99),
        "added_p99_ms": 1000 * (_pct(routed_lat, 99) - _pct(direct_lat, 99)),
        "direct_rps": statistics.median(tp_direct), "routed_rps": statistics.median(tp_routed),
        "routed_over_direct": statistics.median(tp_routed) / statistics.median(tp_direct),
        "router_cpu_us_per_request": 1e6 * statistics.median(cpu),
        "work_ms": work_ms,
        "work_direct_rps": statistics.median(busy_direct) / seconds,
        "work_routed_rps": statistics.median(busy_routed) / seconds,
        "work_routed_over_direct": statistics.median(busy_routed) / statistics.median(busy_direct),
        "upstream_cpu_us_per_request": 1e6 * statistics.median(up_cpu),
        "clients": clients,
    } | python_cost(50_000)  # fmt: skip


# --- the router's own Python per request, no sockets ---------------------------------------

_REQ = b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:1234\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"
_BODY = b'{"ok": true, "text": "' + b"x" * 40 + b'"}'
_RESP = (
    b"HTTP/1.1 200 OK\r\ndate: Tue, 01 Dec 2026 22:59:53 GMT\r\nserver: uvicorn\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(_BODY), _BODY)
)


class _Sink:
    """A transport that takes writes and does nothing (the syscalls are not measured)."""

    def write(self, data: bytes) -> None:
        pass

    def get_extra_info(self, key: str, default: object = None) -> object:
        return ("127.0.0.1", 5555) if key == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


def python_cost(n: int) -> dict[str, float]:
    """CPU seconds of the router's Python for one request and its answer (the client's
    request parsed, a replica picked, the request sent, the answer parsed and passed
    on, the measurements), against httptools parsing the same two messages alone (the
    floor for any proxy on this parser), in the same run."""
    import gc

    import uvloop

    from tide.serve import proxy
    from tide.serve.router import Router

    out: dict[str, float] = {}

    async def routed() -> None:
        router = Router("bench")
        router.update([{"id": "1", "host": "127.0.0.1", "port": 1234}])
        up = proxy.UpstreamProtocol()
        up.connection_made(_Sink())  # type: ignore[arg-type]
        router.endpoints["1"].pool.put(up)
        client = proxy.ClientProtocol(router.handle, router.fast)
        client.connection_made(_Sink())  # type: ignore[arg-type]
        gc.collect()
        t = time.process_time()
        for _ in range(n):
            client.data_received(_REQ)
            up.data_received(_RESP)
        out["router_python_us_per_request"] = 1e6 * (time.process_time() - t) / n
        assert router.stats.codes.get("2xx") == n, router.stats.codes

    class _Done:
        def on_message_complete(self) -> None:
            pass

    uvloop.run(routed())
    req = httptools.HttpRequestParser(_Done())
    resp = httptools.HttpResponseParser(_Done())
    t = time.process_time()
    for _ in range(n):
        req.feed_data(_REQ)
        resp.feed_data(_RESP)
    out["parse_only_us_per_request"] = 1e6 * (time.process_time() - t) / n
    out["python_over_parse_only"] = (
        out["router_python_us_per_request"] / out["parse_only_us_per_request"]
    )
    return out


def _up(httpx, port: int) -> bool:  # type: ignore[no-untyped-def]
    try:
        return httpx.get(f"http://127.0.0.1:{port}/x", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


# --- scale-up and reclaim on a real server -----------------------------------------------


def _service(name: str, **spec: object) -> dict[str, object]:
    body = {"command": f"{sys.executable} {REPLICA}", "resources": {"gpus": 1},
            "readinessProbe": {"path": "/health", "periodSeconds": 0.25}}  # fmt: skip
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


def _replicas(c, name: str) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    return c.get(f"/v1/services/{name}").json()["replicas"]


def bench_scale(n: int, rounds: int) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="tide-bench-scale-"))
    srv = ServerProc(tmp / "data", ["--cluster", str(DATA / "tiny.yaml"), "--kill-wait", "1"])
    srv.start()
    ready_after, to_start, to_ready = [], [], []
    try:
        with srv.client() as c:
            c.post("/v1/services", json={"service": _service("bench", replicas=1),
                                         "cwd": str(tmp)}).raise_for_status()  # fmt: skip
            wait_for("1 ready", lambda: sum(r["state"] == "Ready" for r in _replicas(c, "bench"))
                     == 1, 120)  # fmt: skip
            for _ in range(rounds):
                before = {r["id"] for r in _replicas(c, "bench")}
                c.post("/v1/services/bench/scale", json={"replicas": n}).raise_for_status()

                def fresh_ready(before: set[object] = before) -> list[dict[str, object]] | None:
                    reps = [r for r in _replicas(c, "bench")
                            if r["id"] not in before and r["state"] == "Ready"]  # fmt: skip
                    return reps if len(reps) == n - 1 else None

                new = wait_for(f"{n} ready", fresh_ready, 180)
                for r in new:
                    ready_after.append(r["ready_after"])
                    job = c.get(f"/v1/jobs/{r['job_id']}").json()["jobs"][0]
                    decided = r["ready"] - r["ready_after"]
                    to_start.append(job["start_time"] - decided)
                    to_ready.append(r["ready"] - job["start_time"])
                c.post("/v1/services/bench/scale", json={"replicas": 1}).raise_for_status()
                wait_for("back to 1", lambda: sum(r["state"] not in ("Stopped", "Failed")
                         for r in _replicas(c, "bench")) == 1, 120)  # fmt: skip
            delete_all(srv)
    finally:
        srv.stop()
        kill_routers(tmp / "data")
    return {
        "replicas_measured": len(ready_after),
        "decision_to_ready_p50_s": statistics.median(ready_after),
        "decision_to_ready_max_s": max(ready_after),
        "decision_to_started_p50_s": statistics.median(to_start),
        "started_to_ready_p50_s": statistics.median(to_ready),
    }


TRAIN = f"""#!/bin/bash
#SBATCH -p training,lend
#SBATCH --gpus-per-node=3
#SBATCH --requeue
export PYTHONPATH=$TIDE_PYTHONPATH
exec {sys.executable} {ROOT / "tests" / "serve" / "trainer.py"}
"""
FILLER = "#!/bin/bash\n#SBATCH -p training\n#SBATCH --gpus-per-node=4\nsleep 900\n"


def bench_reclaim(rounds: int) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="tide-bench-reclaim-"))
    tidal = ROOT / "tests" / "serve" / "data" / "tidal.yaml"
    srv = ServerProc(tmp / "data", ["--cluster", str(tidal), "--kill-wait", "1"])
    srv.start()
    out: dict[str, list[float]] = {"to_signal": [], "signal_to_gone": [], "gone_to_ready": [],
                                   "decision_to_ready": []}  # fmt: skip
    try:
        with srv.client() as c:
            filler = submit(c, FILLER, tmp).json()["job_id"]
            c.post("/v1/services", json={"service": _service("rc", replicas=1,
                                                             partition="serving"),
                                         "cwd": str(tmp)}).raise_for_status()  # fmt: skip
            train = submit(c, TRAIN, tmp).json()["job_id"]
            for _ in range(rounds):
                wait_state(c, train, {"RUNNING"}, timeout=120)
                time.sleep(2)  # some steps and a checkpoint
                before = {r["id"] for r in _replicas(c, "rc")}
                c.post("/v1/services/rc/scale", json={"replicas": 4}).raise_for_status()

                def four_ready() -> list[dict[str, object]] | None:
                    reps = [r for r in _replicas(c, "rc") if r["state"] == "Ready"]
                    return reps if len(reps) == 4 else None

                reps = wait_for("4 ready", four_ready, 120)
                job = c.get(f"/v1/jobs/{train}").json()["jobs"][0]
                pre = job["preemption"]
                attempts = job["attempts"]
                gone = max((a["end"] for a in attempts if a["end"] is not None), default=None)
                new = [r for r in reps if r["id"] not in before]
                ready = max(r["ready"] for r in new)
                decided = min(r["ready"] - r["ready_after"] for r in new)
                out["to_signal"].append(pre["time"] - decided)
                out["signal_to_gone"].append((gone or pre["time"]) - pre["time"])
                out["gone_to_ready"].append(ready - (gone or pre["time"]))
                out["decision_to_ready"].append(ready - decided)
                c.post("/v1/services/rc/scale", json={"replicas": 1}).raise_for_status()
            c.post(f"/v1/jobs/{train}/cancel")
            c.post(f"/v1/jobs/{filler}/cancel")
            delete_all(srv)
    finally:
        srv.stop()
        kill_routers(tmp / "data")
    return {f"{k}_p50_s": statistics.median(v) for k, v in out.items()} | {
        "decision_to_ready_max_s": max(out["decision_to_ready"]), "objective_s": 40.0,
        "rounds": rounds,
    }  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description="service benchmarks")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--work-ms", type=float, default=10.0,
                   help="the replica-bound case: each answer takes this long")  # fmt: skip
    p.add_argument("--only", choices=["router", "scale", "reclaim"])
    args = p.parse_args()
    results = {}
    if args.only in (None, "router"):
        results["router"] = bench_router(args.seconds, args.clients, args.rounds, args.work_ms)
        print(json.dumps({"router": results["router"]}, indent=2), flush=True)
    if args.only in (None, "scale"):
        results["scale"] = bench_scale(4, max(1, args.rounds // 2))
        print(json.dumps({"scale": results["scale"]}, indent=2), flush=True)
    if args.only in (None, "reclaim"):
        results["reclaim"] = bench_reclaim(max(1, args.rounds // 2))
        print(json.dumps({"reclaim": results["reclaim"]}, indent=2), flush=True)
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
