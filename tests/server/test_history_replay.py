"""The twin replays the controller's own history (issue 13, item 6).

A real server (local executor) on a 4-node cluster runs 56 real short jobs of
mixed sizes from two users; `tide sim export` writes its history as a twin
workload and `tide sim run --from-server` replays it under the `slurm` policy.
The replay must start the jobs in the live order, within one scheduling interval
(bf_interval, 1 s) for at least 95 % of them, on the same nodes.
"""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from serverproc import ServerProc, submit, wait_for

pytestmark = pytest.mark.slow

CLUSTER = """\
name: replay
nodes:
- names: g[1-4]
  cpus: 16
  sockets: 2
  cores_per_socket: 8
  threads_per_core: 1
  real_memory: 64000
  gpus: {count: 8, type: a100}
partitions:
- {name: gpu, nodes: 'g[1-4]', default: true, max_time: 1h, default_time: 5m}
topology:
  kind: tree
  switches:
  - {name: leafa, nodes: 'g[1-2]'}
  - {name: leafb, nodes: 'g[3-4]'}
  - {name: spine, switches: 'leafa,leafb'}
scheduler:
  bf_interval: 1s
  bf_resolution: 1s
accounts:
  root: {}
  physics: {fairshare: 1}
users:
- {user: alice, account: physics, default_account: true}
- {user: bob, account: physics, default_account: true}
"""
JOBS = 56
INTERVAL = 1.0  # the scheduling interval: bf_interval
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


def _script(gpus: int, sleep: int, fail: bool) -> str:
    shape = f"#SBATCH -N {gpus // 8}\n#SBATCH --gpus-per-node=8" if gpus > 8 else (
        f"#SBATCH --gpus={gpus}")  # fmt: skip
    tail = "exit 3\n" if fail else ""
    return f"#!/bin/bash\n{shape}\n#SBATCH -t 1\n#SBATCH -o /dev/null\nsleep {sleep}\n{tail}"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the workload on a real server; returns its data folder and the jobs."""
    tmp = tmp_path_factory.mktemp("history")
    cluster = tmp / "cluster.yaml"
    cluster.write_text(CLUSTER)
    srv = ServerProc(tmp / "data", ["--cluster", str(cluster), "--kill-wait", "2"]).start()
    rng = random.Random(13)
    work = tmp / "work"
    work.mkdir()
    try:
        with srv.client() as admin:
            tokens = {}
            for user in ("alice", "bob"):
                r = admin.post("/v1/tokens", json={"user": user, "name": "t"})
                r.raise_for_status()
                tokens[user] = r.json()["token"]
        ids = []
        clients = {u: srv.client(t) for u, t in tokens.items()}
        try:
            for i in range(JOBS):
                if i and i % 8 == 0:
                    time.sleep(1.5)  # bursts: the queue builds up, then drains
                gpus = rng.choice((1, 2, 2, 4, 4, 8, 8, 16))
                script = _script(gpus, rng.choice((1, 2, 3)), fail=i % 11 == 5)
                r = submit(clients["alice" if i % 2 else "bob"], script, work)
                assert r.status_code == 201, r.text
                ids.append(r.json()["job_id"])
            admin = srv.client()
            clients["admin"] = admin

            def all_done() -> list[dict[str, Any]] | None:
                r = admin.get("/v1/jobs", params={"all": "true"})
                r.raise_for_status()
                jobs = r.json()["jobs"]
                return jobs if len(jobs) == JOBS and all(j["state"] in DONE for j in jobs) else None

            jobs = wait_for("every job to end", all_done, timeout=600)
        finally:
            for cl in clients.values():
                cl.close()
    finally:
        srv.stop()
    return {"data": srv.data_dir, "cluster": cluster, "jobs": jobs, "tmp": tmp}


def _tide(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("tide")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, check=False)


def test_export_writes_every_job_with_its_request(live: dict[str, Any]) -> None:
    out = live["tmp"] / "history.jsonl"
    res = _tide("sim", "export", str(live["data"]), "-o", str(out))
    assert res.returncode == 0, res.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines() if not x.startswith("#")]
    assert len(lines) == JOBS
    by_id = {x["id"]: x for x in lines}
    for j in live["jobs"]:
        x = by_id[int(j["job_id"])]
        assert x["user"] == j["user"] and x["request"]["account"] == "physics"
        # the run, up to when the controller took the end in (its pass log)
        ran = j["end_time"] - j["start_time"]
        assert ran - 0.01 <= x["duration"] <= ran + 60, (x, j)
        assert x.get("state", "COMPLETED") == ("FAILED" if j["state"] == "FAILED" else "COMPLETED")
    assert sum(x.get("state") == "FAILED" for x in lines) == 5
    assert [x["submit"] for x in lines] == sorted(x["submit"] for x in lines)


def test_replay_reproduces_the_live_starts(live: dict[str, Any]) -> None:
    out = live["tmp"] / "replay"
    res = _tide("sim", "run", "--from-server", str(live["data"]), "--cluster",
                str(live["cluster"]), "--policy", "slurm", "--out", str(out))  # fmt: skip
    assert res.returncode == 0, res.stderr
    twin = {int(r["job_id"]): r for r in csv.DictReader((out / "jobs.csv").open())}
    origin = min(j["submit_time"] for j in live["jobs"])
    rows = []
    for j in live["jobs"]:
        t = twin[int(j["job_id"])]
        rows.append((int(j["job_id"]), j["start_time"] - origin, float(t["start"]), j["nodelist"],
                     t["nodelist"]))  # fmt: skip
    close = [r for r in rows if abs(r[2] - r[1]) <= INTERVAL]
    same = [r for r in close if r[3] == r[4]]
    table = "\n".join(f"{r[0]:4d} live {r[1]:7.2f} twin {r[2]:7.2f} {r[3]:>8} {r[4]:>8}"
                      for r in sorted(rows, key=lambda r: r[1]))  # fmt: skip
    assert len(close) >= 0.95 * JOBS, table
    assert len(same) >= 0.95 * JOBS, table
    # the start order: no pair of jobs started more than an interval apart swaps
    swapped = [(a[0], b[0]) for a in rows for b in rows
               if a[1] + INTERVAL < b[1] and b[2] + INTERVAL < a[2]]  # fmt: skip
    assert not swapped, table
