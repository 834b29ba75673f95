"""`tide server --executor ray` end to end on a real Ray cluster: the nodes come
from Ray (labels -> switches), a 2-node --requeue job runs its tasks on the Ray
nodes tide chose and survives a controller restart, a Ray node killed mid-job
goes DOWN and the job requeues onto the survivors, and the node, once back, is
schedulable again."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import raycluster

pytest.importorskip("ray", reason="the Ray executor needs ray: pip install 'tide[ray]'")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from serverproc import ServerProc, job, submit, wait_state

from tide.hostlist import expand

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tide's executors need Linux"),
]

SCRIPT = """#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --requeue
srun bash -c 'echo "$SLURM_RESTART_COUNT $SLURMD_NODENAME $RAY_NODE_ID $$" >> tasks.txt; sleep 600'
"""


def _lines(path: Path, restart: int, n: int, timeout: float = 60.0) -> list[list[str]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        rows = [ln.split() for ln in text.splitlines() if ln.startswith(f"{restart} ")]
        if len(rows) >= n:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"{path}: fewer than {n} task lines of run {restart}")


def _node(c, name: str) -> dict:  # type: ignore[no-untyped-def]
    nodes = {n["name"]: n for n in c.get("/v1/nodes").json()["nodes"]}
    return nodes.get(name, {"admin_state": "(not a node yet)", "reason": ""})


def _wait_node(c, name: str, states: set[str], timeout: float = 60.0) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = _node(c, name)
        if n["admin_state"] in states:
            return n
        time.sleep(0.2)
    raise AssertionError(f"node {name} is {n['admin_state']} ({n['reason']}), not {states}")


def test_server_on_ray_requeues_a_job_whose_node_dies(
    rc: raycluster.RayTestCluster, tmp_path: Path
) -> None:
    args = ["--executor", "ray", "--ray-address", rc.address, "--kill-wait", "1"]
    args += ["--bf-interval", "2"]  # a requeued job is not left waiting for a 30 s pass
    srv = ServerProc(tmp_path / "data", args, env={"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    srv.start()
    try:
        with srv.client() as c:
            nodes = {n["name"]: n for n in c.get("/v1/nodes").json()["nodes"]}
            assert set(nodes) == set(rc.nodes), nodes
            assert (nodes["gpu03"]["switch"], nodes["gpu03"]["gpus"]) == ("leaf2", 2)
            work = tmp_path / "work"
            work.mkdir()
            r = submit(c, SCRIPT, work)
            assert r.status_code in (200, 201), r.text
            job_id = r.json()["job_id"]
            wait_state(c, job_id, {"RUNNING"})
            first = _lines(work / "tasks.txt", 0, 2)
            placed = expand(job(c, job_id)["nodelist"])
            assert sorted(row[1] for row in first) == sorted(placed)
            assert all(row[2] == rc.node_id(row[1]) for row in first), first
            deadline = time.monotonic() + 30  # the phase probe reads the batch node's steps
            while job(c, job_id)["phases"]["times"]["tasks_running"] is None:
                assert time.monotonic() < deadline, "tasks_running never set while running"
                time.sleep(0.5)
            victim = placed[1]
        srv.stop()  # the jobs outlive the controller, under their node agents
        srv.start()
        with srv.client() as c:
            assert job(c, job_id)["state"] == "RUNNING"
            t0 = time.monotonic()
            rc.kill(victim)  # the restarted controller knows every node of the job
            down = _wait_node(c, victim, {"DOWN"})
            assert down["reason"].startswith("ray:"), down
            second = _lines(work / "tasks.txt", 1, 2, timeout=90)
            took = time.monotonic() - t0
            print(f"\nnode killed -> job running again on other nodes in {took:.1f} s")
            assert victim not in {row[1] for row in second}, second
            j = job(c, job_id)
            assert (j["state"], j["restarts"]) == ("RUNNING", 1), j
            rc.add(victim, raycluster.WORKERS[victim])
            assert _wait_node(c, victim, {"IDLE"})["reason"] == ""
            c.post(f"/v1/jobs/{job_id}/cancel")
            wait_state(c, job_id, {"CANCELLED"})
            # A machine tide has never seen joins the cluster and runs jobs.
            rc.add("gpu04", "leaf2")
            assert _wait_node(c, "gpu04", {"IDLE"})["switch"] == "leaf2"
            r = submit(c, "#!/bin/bash\n#SBATCH -w gpu04\necho on $RAY_NODE_ID\n", work)
            done = wait_state(c, r.json()["job_id"], {"COMPLETED", "FAILED"})
            assert done["state"] == "COMPLETED", done
            assert f"on {rc.node_id('gpu04')}" in (work / f"slurm-{done['job_id']}.out").read_text()
    finally:
        srv.stop()
