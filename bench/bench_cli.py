"""CPU cost of starting the everyday commands, and a burst of submissions.

Each command runs REPS times against a tide server this script starts (demo
cluster, no executor: jobs are scheduled, not run); the figure is the median
CPU time (user + system) of one run, with its ratio to `python -c pass`
measured in the same run. Then BURST `tide sbatch` processes start at once: the
script reports when all had returned and how long each job waited from its
submission to its start (the server's own times), against one job submitted
alone (a burst must not starve the scheduling loop).

    .venv/bin/python bench/bench_cli.py [--reps 15] [--burst 24]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    port = free_port()
    cmd = [str(BIN / "tide"), "server", "--demo", "--executor", "none", "--port", str(port),
           "--data-dir", str(data), "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/v1/ping", timeout=1).close()
            return proc, url, (data / "admin.token").read_text().strip()
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("the server did not start")


def jobs(url: str, token: str) -> list[dict[str, object]]:
    auth = {"Authorization": f"Bearer {token}"}
    req = urllib.request.Request(url + "/v1/jobs?all=true", headers=auth)
    with urllib.request.urlopen(req, timeout=30) as r:
        return list(json.load(r)["jobs"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--burst", type=int, default=24)
    a = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tide-bench-cli-"))
    proc, url, token = start_server(tmp / "data")
    env = {**os.environ, "TIDE_URL": url, "TIDE_TOKEN": token}
    py, tide = sys.executable, str(BIN / "tide")
    commands = {
        "python -c pass (baseline)": [py, "-c", "pass"],
        "squeue (shim)": [py, "-m", "tide.slurm", "squeue"],
        "tide queue": [tide, "queue"],
        "tide sbatch --wrap true": [tide, "sbatch", "-n1", "--wrap", "true"],
        "sbatch --test-only (shim)": [
            py,
            "-m",
            "tide.slurm",
            "sbatch",
            "--test-only",
            "-n1",
            "--wrap",
            "true",
        ],
        "sacct -X (shim)": [py, "-m", "tide.slurm", "sacct", "-X"],
        "tide queue via Typer (python -m tide.cli.main)": [py, "-m", "tide.cli.main", "queue"],
    }
    try:
        medians = {}
        for name, cmd in commands.items():
            cpu_of(cmd, env)  # warm the page cache
            medians[name] = statistics.median(cpu_of(cmd, env) for _ in range(a.reps))
        base = medians["python -c pass (baseline)"]
        print(f"CPU per command, median of {a.reps} runs (ratio to python -c pass):")
        for name, v in medians.items():
            print(f"  {name:48s} {v * 1000:7.1f} ms   x{v / base:5.1f}")
        burst(env, tide, a.burst, url, token)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def burst(env: dict[str, str], tide: str, n: int, url: str, token: str) -> None:
    """One job alone, then n at once: when each command returned, and how long each
    job waited between its submission and its start by the server's own times
    (the scheduling loop's latency, whatever the clients' start-up costs)."""
    cmd = [tide, "sbatch", "-N1", "--gpus-per-node=1", "-t", "10", "--wrap", "sleep 60"]
    alone, _ = _submit(env, [cmd], url, token)
    waits, returned = _submit(env, [cmd] * n, url, token)
    one, mid, top = alone[0], statistics.median(waits), max(waits)
    print(f"one job alone: submit -> start {one:.2f} s (the baseline)")
    print(f"burst of {n} concurrent `tide sbatch` (1 GPU each): all returned in {returned:.1f} s;"
          f" submit -> start median {mid:.2f} s (x{mid / one:.1f}), max {top:.2f} s"
          f" (x{top / one:.1f})")  # fmt: skip


def _submit(env: dict[str, str], cmds: list[list[str]], url: str, token: str
            ) -> tuple[list[float], float]:  # fmt: skip
    """(each new job's start_time - submit_time, seconds until every command returned)."""
    before = {j["id"] for j in jobs(url, token)}
    t0 = time.monotonic()
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL) for c in cmds]
    for pr in procs:
        pr.wait()
    returned = time.monotonic() - t0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        new = [j for j in jobs(url, token) if j["id"] not in before]
        if len(new) == len(cmds) and all(j["start_time"] for j in new):
            return [float(j["start_time"]) - float(j["submit_time"]) for j in new], returned
        time.sleep(0.1)
    raise SystemExit("the jobs were not all started within 120 s")


if __name__ == "__main__":
    sys.exit(main())
