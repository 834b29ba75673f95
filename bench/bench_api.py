"""REST benchmarks of the tide server (figures for docs/server.md).

1. Sustained submission rate: C concurrent clients POST /v1/jobs (one job per
   request, an sbatch script with #SBATCH lines) for D seconds against a real
   server on SQLite. Target >= 1,000 jobs/s (Slurm documents 500/s).
2. `tide queue` on a 100,000-job queue: wall time of the CLI process, and of
   the API call alone. Target < 1 s.
3. The API during a scheduling pass over that queue: ping latency while the
   loop runs a full backfill pass.
4. With --modes (root only): the submission rate of 1. in single-user mode and
   in per-user mode (each submission checks the user's OS account), on two
   servers one after the other in the same run, and their ratio.
5. With --baseline REF: the submission rate of 1. with the server code of git
   revision REF (the baseline) and with this tree's, alternated --rounds times
   on each store of --store (sqlite, postgresql or both), and their ratios.

Server CPU per job is the server process's user+sys time (/proc) over the jobs
stored: it does not depend on what else the machine runs, as jobs/s does. It
is split into the scheduling loop's thread (passes over the growing queue) and
the rest (the submission path), where the server reports the loop's CPU.

Usage: .venv/bin/python bench/bench_api.py [--seconds 10] [--clients 64] [--queue 100000]
       .venv/bin/python bench/bench_api.py --modes [--seconds 10]
       .venv/bin/python bench/bench_api.py --baseline main --store both --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "server"))
from serverproc import ServerProc, store_args  # noqa: E402

SCRIPT = """#!/bin/bash
#SBATCH -J bench
#SBATCH -N 1
#SBATCH --gpus-per-node=1
#SBATCH --time=10:00
#SBATCH --begin=now+1hour
srun python train.py
"""


async def _worker(
    url: str, token: str, stop_at: float, counts: list[int], lat: list[float]
) -> None:
    """One keep-alive connection sending submissions back to back. A raw HTTP/1.1
    client (asyncio streams) so the client spends little CPU: the server is measured."""
    host, port = url.split("//", 1)[1].split(":")
    body = json.dumps(
        {"script": SCRIPT, "argv": [], "cwd": "/tmp", "env": {"PATH": "/usr/bin:/bin"}}
    ).encode()
    req = (
        f"POST /v1/jobs HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            payload = await reader.readexactly(length)
            lat.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 201"):
                raise RuntimeError(payload.decode())
            counts[0] += 1
    finally:
        writer.close()


def _client_proc(url: str, token: str, clients: int, seconds: float, q: mp.Queue) -> None:
    counts = [0]
    lat: list[float] = []
    stop_at = time.perf_counter() + seconds

    async def main() -> None:
        await asyncio.gather(*(_worker(url, token, stop_at, counts, lat) for _ in range(clients)))

    asyncio.run(main())
    q.put((counts[0], lat))


def bench_submit(srv: ServerProc, clients: int, seconds: float, procs: int) -> dict[str, float]:
    cpu0 = _proc_cpu(srv.proc.pid)  # type: ignore[union-attr]
    loop0 = _loop_cpu(srv)
    q: mp.Queue = mp.Queue()
    ps = [
        mp.Process(
            target=_client_proc, args=(srv.url, srv.admin_token, clients // procs, seconds, q)
        )
        for _ in range(procs)
    ]
    t0 = time.perf_counter()
    for p in ps:
        p.start()
    results = [q.get() for _ in ps]
    for p in ps:
        p.join()
    wall = time.perf_counter() - t0
    total = sum(n for n, _ in results)
    lat = sorted(x for _, ls in results for x in ls)
    cpu = _proc_cpu(srv.proc.pid) - cpu0  # type: ignore[union-attr]
    loop1 = _loop_cpu(srv)
    out = {
        "server_cpu_ms_per_job": 1000 * cpu / max(1, total),
        "jobs": total,
        "seconds": wall,
        "jobs_per_s": total / seconds,
        "p50_ms": 1000 * lat[len(lat) // 2],
        "p99_ms": 1000 * lat[int(len(lat) * 0.99)],
    }
    if loop0 is not None and loop1 is not None:
        # the scheduling loop's thread (passes over the growing queue), and the
        # rest: the submission path (HTTP, token, validation, parsing, checks, commit)
        out["loop_cpu_ms_per_job"] = 1000 * (loop1 - loop0) / max(1, total)
        out["submit_cpu_ms_per_job"] = 1000 * (cpu - loop1 + loop0) / max(1, total)
    return out


def _loop_cpu(srv: ServerProc) -> float | None:
    """CPU seconds of the server's scheduling-loop thread (None: a server older
    than that figure, e.g. a baseline)."""
    h = {"Authorization": f"Bearer {srv.admin_token}"}
    loop = httpx.get(srv.url + "/v1/cluster", headers=h, timeout=60).json()["loop"]
    return loop.get("cpu_s")


def fill_queue(srv: ServerProc, n: int, batch: int = 1000) -> dict[str, float]:
    """Fill the queue to n jobs through POST /v1/jobs/batch (also a measurement)."""
    h = {"Authorization": f"Bearer {srv.admin_token}"}
    item = {"script": SCRIPT, "argv": ["--begin=now+1day"], "cwd": "/tmp", "env": {}}
    done = 0
    t0 = time.perf_counter()
    with httpx.Client(base_url=srv.url, headers=h, timeout=300) as c:
        while done < n:
            k = min(batch, n - done)
            r = c.post("/v1/jobs/batch", json={"jobs": [item] * k})
            r.raise_for_status()
            done += r.json()["submitted"]
    wall = time.perf_counter() - t0
    return {"jobs": done, "seconds": wall, "jobs_per_s": done / wall if wall else 0.0}


def bench_queue(srv: ServerProc) -> dict[str, float]:
    env = {**os.environ, "TIDE_URL": srv.url, "TIDE_TOKEN": srv.admin_token}
    h = {"Authorization": f"Bearer {srv.admin_token}"}
    api, text = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        r = httpx.get(srv.url + "/v1/jobs", params={"format": "columns"}, headers=h, timeout=60)
        api.append(time.perf_counter() - t0)
        rows = len(r.json()["rows"])
        t0 = time.perf_counter()
        httpx.get(srv.url + "/v1/jobs", params={"format": "squeue"}, headers=h, timeout=60)
        text.append(time.perf_counter() - t0)
    cli, cpu = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        c0 = _children_cpu() + _proc_cpu(srv.proc.pid)  # type: ignore[union-attr]
        subprocess.run(
            [sys.executable, "-m", "tide.cli.main", "queue"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        cli.append(time.perf_counter() - t0)
        # CPU seconds spent by the CLI process and the server for the call: what
        # the wall time would be on an idle machine (both sides are one thread)
        cpu.append(_children_cpu() + _proc_cpu(srv.proc.pid) - c0)  # type: ignore[union-attr]
    imp = []
    for _ in range(3):
        t0 = time.perf_counter()
        code = "import sys; sys.argv = ['tide', 'queue']; import tide.cli.main"
        subprocess.run([sys.executable, "-c", code], check=True)
        imp.append(time.perf_counter() - t0)
    return {
        "rows": rows,
        "api_json_columns_s": min(api),
        "api_squeue_text_s": min(text),
        "cli_s": min(cli),
        "cli_median_s": statistics.median(cli),
        "cli_import_only_s": min(imp),
        "cli_plus_server_cpu_s": min(cpu),
    }


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


class Pinger:
    """Pings /v1/whoami every 10 ms in a thread: API latency while the server is
    absorbing a 100,000-job queue and running scheduling passes over it."""

    def __init__(self, srv: ServerProc) -> None:
        import threading

        self.srv = srv
        self.lat: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.cycles0 = 0

    def _loop(self) -> dict[str, float]:
        h = {"Authorization": f"Bearer {self.srv.admin_token}"}
        return httpx.get(self.srv.url + "/v1/cluster", headers=h, timeout=60).json()["loop"]

    def __enter__(self) -> Pinger:
        self.cycles0 = int(self._loop()["cycles"])
        self._thread.start()
        return self

    def _run(self) -> None:
        h = {"Authorization": f"Bearer {self.srv.admin_token}"}
        with httpx.Client(base_url=self.srv.url, headers=h, timeout=60) as c:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                c.get("/v1/whoami")
                self.lat.append(time.perf_counter() - t0)
                time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def result(self) -> dict[str, float]:
        loop = self._loop()
        lat = sorted(self.lat)
        return {
            "pings": len(lat),
            "p50_ms": 1000 * lat[len(lat) // 2],
            "p99_ms": 1000 * lat[int(len(lat) * 0.99)],
            "max_ms": 1000 * lat[-1],
            "passes_during": loop["cycles"] - self.cycles0,
            "last_pass_load_s": loop["last_load_s"],
            "last_pass_process_s": loop["last_process_s"],
            "last_pass_apply_s": loop["last_apply_s"],
            "pending_in_last_pass": loop["last_pending"],
        }


def steady_pass(srv: ServerProc, wait: float = 180.0) -> dict[str, float]:
    """One more job (an event), then the passes over the whole queue that follow,
    with pings meanwhile."""
    h = {"Authorization": f"Bearer {srv.admin_token}"}
    with Pinger(srv) as p, httpx.Client(base_url=srv.url, headers=h, timeout=60) as c:
        start = c.get("/v1/cluster").json()["loop"]["cycles"]
        c.post("/v1/jobs", json={"script": SCRIPT, "argv": [], "cwd": "/tmp", "env": {}})
        deadline = time.time() + wait
        while time.time() < deadline:
            if c.get("/v1/cluster").json()["loop"]["cycles"] >= start + 2:
                break
            time.sleep(0.5)
    return p.result()


def compare_modes(args: argparse.Namespace, rounds: int = 2) -> dict[str, object]:
    """Submission in single-user mode (the baseline) and in per-user mode,
    alternated `rounds` times so that a change in the machine's load hits both."""
    runs: dict[str, list[dict[str, float]]] = {"single_user": [], "per_user": []}
    for _ in range(rounds):
        for mode, per_user in (("single_user", False), ("per_user", True)):
            with tempfile.TemporaryDirectory() as tmp:
                spool = ["--spool-dir", str(Path(tmp) / "spool")] if per_user else []
                args_ = ["--demo", "--executor", "none", *spool]
                srv = ServerProc(Path(tmp) / "data", args_, per_user=per_user).start()
                try:
                    runs[mode].append(bench_submit(srv, args.clients, args.seconds, args.procs))
                finally:
                    srv.stop()
    out: dict[str, object] = {}
    for mode, rs in runs.items():
        out[mode] = {
            "jobs_per_s": statistics.mean(r["jobs_per_s"] for r in rs),
            "server_cpu_ms_per_job": statistics.mean(r["server_cpu_ms_per_job"] for r in rs),
            "runs": [round(r["jobs_per_s"], 1) for r in rs],
        }
    single, per = out["single_user"], out["per_user"]
    out["per_user_vs_single_user_rate"] = per["jobs_per_s"] / single["jobs_per_s"]  # type: ignore[index]
    out["per_user_vs_single_user_cpu"] = (
        per["server_cpu_ms_per_job"] / single["server_cpu_ms_per_job"]  # type: ignore[index]
    )
    return out


FIGURES = (
    "jobs_per_s",
    "server_cpu_ms_per_job",
    "submit_cpu_ms_per_job",
    "loop_cpu_ms_per_job",
)


def baseline_src(ref: str, into: Path) -> Path:
    """The server code of git revision `ref`, extracted under `into` (its src/);
    the built C kernel (git-ignored) is copied from this tree, if built."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for so in (ROOT / "src" / "tide" / "sim").glob("_countsim*.so"):
        (into / "src" / "tide" / "sim" / so.name).write_bytes(so.read_bytes())
    return into / "src"


def compare_baseline(args: argparse.Namespace) -> dict[str, object]:
    """Submission with the server code of `args.baseline` and with this tree's,
    alternated `args.rounds` times per store, so that a change in the machine's
    load hits both."""
    stores = ["sqlite", "postgresql"] if args.store == "both" else [args.store]
    out: dict[str, object] = {"baseline": args.baseline}
    with tempfile.TemporaryDirectory() as tmp:
        old_src = baseline_src(args.baseline, Path(tmp))
        for store in stores:
            runs: dict[str, list[dict[str, float]]] = {"baseline": [], "new": []}
            for _ in range(args.rounds):
                for which, env in (
                    ("baseline", {"PYTHONPATH": str(old_src)}),
                    ("new", {"PYTHONPATH": str(ROOT / "src")}),
                ):
                    with tempfile.TemporaryDirectory() as run_tmp, store_args(store) as db:
                        srv_args = ["--demo", "--executor", "none", *db]
                        srv = ServerProc(Path(run_tmp) / "data", srv_args, env=env).start()
                        try:
                            runs[which].append(
                                bench_submit(srv, args.clients, args.seconds, args.procs)
                            )
                        finally:
                            srv.stop()
                    print(store, which, json.dumps(runs[which][-1]), file=sys.stderr, flush=True)
            res: dict[str, object] = {}
            for which, rs in runs.items():
                res[which] = {
                    k: statistics.mean(r[k] for r in rs) for k in FIGURES if k in rs[0]
                } | {"runs_jobs_per_s": [round(r["jobs_per_s"]) for r in rs]}
            b, n = res["baseline"], res["new"]
            res["new_vs_baseline_jobs_per_s"] = n["jobs_per_s"] / b["jobs_per_s"]  # type: ignore[index]
            res["new_vs_baseline_server_cpu"] = (
                n["server_cpu_ms_per_job"] / b["server_cpu_ms_per_job"]  # type: ignore[index]
            )
            out[store] = res
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--procs", type=int, default=2, help="client processes")
    ap.add_argument("--queue", type=int, default=100_000)
    ap.add_argument("--skip-queue", action="store_true")
    ap.add_argument("--modes", action="store_true", help="single-user vs per-user (root)")
    ap.add_argument("--baseline", metavar="REF", help="compare submission with git REF's server")
    ap.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="sqlite")
    ap.add_argument("--rounds", type=int, default=2, help="alternations with --baseline")
    args = ap.parse_args()
    if args.baseline:
        print(json.dumps({"cpus": os.cpu_count(), **compare_baseline(args)}, indent=1))
        return
    if args.modes:
        if os.geteuid() != 0:
            raise SystemExit("--modes needs root: per-user mode runs jobs as their users")
        print(json.dumps({"cpus": os.cpu_count(), **compare_modes(args)}, indent=1))
        return
    out: dict[str, object] = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        srv = ServerProc(Path(tmp) / "data", ["--demo", "--executor", "none"]).start()
        try:
            out["submit"] = bench_submit(srv, args.clients, args.seconds, args.procs)
            print(json.dumps(out, indent=1), flush=True)
            if not args.skip_queue:
                have = out["submit"]["jobs"]  # type: ignore[index]
                with Pinger(srv) as pinger:
                    out["batch_submit"] = fill_queue(srv, max(0, args.queue - have))
                out["api_while_filling"] = pinger.result()
                out["queue"] = bench_queue(srv)
                out["api_during_steady_pass"] = steady_pass(srv)
        finally:
            srv.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
