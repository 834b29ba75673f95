"""Real sbatch scripts through a real server and the local executor: output
files, Slurm's environment, srun over two nodes, arrays, dependencies, time
limits with --signal, cancel, requeue, phases and accounting. The tests marked
`on_both_stores` run on SQLite and on PostgreSQL (a schema of their own)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from serverproc import STORES, job, submit, wait_state

pytestmark = pytest.mark.slow
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}
# submit/run/complete, arrays, dependencies, cancel, requeue and accounting: the
# representative set the end-to-end suite runs on both stores (issue 13)
on_both_stores = pytest.mark.parametrize("tiny", STORES, indirect=True)


def _dir(srv: Any, name: str) -> Path:
    d = srv.work / name
    d.mkdir(exist_ok=True)
    return d


ENV_SCRIPT = """#!/bin/bash
#SBATCH -J envcheck
#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-task=2
#SBATCH -o out-%j-%x.txt
#SBATCH -t 5
for v in SLURM_JOB_ID SLURM_JOB_NAME SLURM_JOB_NODELIST SLURM_NNODES SLURM_NTASKS \\
         SLURM_CPUS_PER_TASK SLURM_GPUS_ON_NODE SLURM_JOB_ACCOUNT SLURM_JOB_PARTITION \\
         SLURM_SUBMIT_DIR CUDA_VISIBLE_DEVICES SLURM_RESTART_COUNT; do
  echo "$v=${!v}"
done
echo "ARGS=$*"
sleep 1
"""


@on_both_stores
def test_batch_job_runs_with_slurm_environment(tiny: Any) -> None:
    d = _dir(tiny, "env")
    with tiny.client(tiny.tokens["alice"]) as c:
        r = submit(c, ENV_SCRIPT, d, ["envcheck.sh", "x", "y"])
        assert r.status_code == 201, r.text
        jid = r.json()["job_id"]
        j = wait_state(c, jid, DONE)
    assert j["state"] == "COMPLETED" and j["exit"] == "0:0", j
    out = (d / f"out-{jid}-envcheck.txt").read_text()
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert env["SLURM_JOB_ID"] == str(jid)
    assert env["SLURM_JOB_NAME"] == "envcheck"
    assert env["SLURM_NNODES"] == "1" and env["SLURM_NTASKS"] == ""  # no -n: unset, as sbatch
    assert env["SLURM_CPUS_PER_TASK"] == "2"
    assert env["SLURM_GPUS_ON_NODE"] == "2"
    assert len(env["CUDA_VISIBLE_DEVICES"].split(",")) == 2
    assert env["SLURM_JOB_ACCOUNT"] == "physics" and env["SLURM_JOB_PARTITION"] == "gpu"
    assert env["SLURM_SUBMIT_DIR"] == str(d)
    assert env["SLURM_JOB_NODELIST"] == j["nodelist"]
    assert env["SLURM_RESTART_COUNT"] == "0"
    # accounting: allocation, phases, GPU-seconds of 2 GPUs over the run
    assert j["gpus_alloc"] == 2 and j["gpu_type"] == "a100"
    assert len(j["allocation"]["nodes"][0]["gpus"]) == 2
    t = j["phases"]["times"]
    assert t["submitted"] <= t["eligible"] <= t["started"] <= t["ended"]
    assert t["tasks_running"] is not None
    elapsed = j["end_time"] - j["start_time"]
    assert j["gpu_seconds"] == pytest.approx(2 * elapsed, rel=0.01)
    assert [a["state"] for a in j["attempts"]] == ["COMPLETED"]


SRUN_SCRIPT = """#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=1
#SBATCH -o srun-%j.out
srun bash -c 'echo "T $SLURM_PROCID $SLURM_NODEID $SLURM_LOCALID $RANK $WORLD_SIZE \
$LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $SLURMD_NODENAME"'
"""


def test_multi_node_srun_sets_torch_distributed_variables(tiny: Any) -> None:
    d = _dir(tiny, "srun")
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, SRUN_SCRIPT, d).json()["job_id"]
        j = wait_state(c, jid, DONE)
    assert j["state"] == "COMPLETED", j
    lines = [
        x.split() for x in (d / f"srun-{jid}.out").read_text().splitlines() if x.startswith("T ")
    ]
    assert len(lines) == 4
    procids = sorted(int(x[1]) for x in lines)
    assert procids == [0, 1, 2, 3]
    assert {x[5] for x in lines} == {"4"}  # WORLD_SIZE
    assert all(x[1] == x[4] for x in lines)  # RANK == SLURM_PROCID
    assert sorted({x[2] for x in lines}) == ["0", "1"]  # two nodes
    assert {x[10] for x in lines} == {"g1", "g2"}
    assert len({(x[8], x[9]) for x in lines}) == 1  # one MASTER_ADDR:MASTER_PORT


@on_both_stores
def test_array_job_with_throttle(tiny: Any) -> None:
    d = _dir(tiny, "array")
    script = "#!/bin/bash\n#SBATCH -o arr-%A_%a.out\necho task=$SLURM_ARRAY_TASK_ID\nsleep 1\n"
    with tiny.client(tiny.tokens["bob"]) as c:
        r = submit(c, script, d, ["--array=0-3%2"]).json()
        assert r["job_ids"] == [f"{r['array_job_id']}_{i}" for i in range(4)]
        for task in r["job_ids"]:
            assert wait_state(c, task, DONE)["state"] == "COMPLETED"
        arr = c.get("/v1/jobs", params={"job": str(r["array_job_id"]), "all": "true"}).json()
    assert len(arr["jobs"]) == 4
    for i in range(4):
        assert (d / f"arr-{r['array_job_id']}_{i}.out").read_text().strip() == f"task={i}"


@on_both_stores
def test_dependencies_afterok_and_afternotok(tiny: Any) -> None:
    d = _dir(tiny, "deps")
    with tiny.client(tiny.tokens["alice"]) as c:
        a = submit(c, "#!/bin/bash\nsleep 1\nexit 3\n", d).json()["job_id"]
        b = submit(c, HELLO, d, ["-d", f"afterok:{a}"]).json()["job_id"]
        cc = submit(c, HELLO, d, ["-d", f"afternotok:{a}"]).json()["job_id"]
        assert job(c, b)["state"] == "PENDING"
        ja = wait_state(c, a, DONE)
        assert ja["state"] == "FAILED" and ja["exit"] == "3:0"
        assert wait_state(c, cc, DONE)["state"] == "COMPLETED"
        deadline = time.time() + 10
        while job(c, b)["reason"] != "DependencyNeverSatisfied" and time.time() < deadline:
            time.sleep(0.2)
        jb = job(c, b)
        assert jb["state"] == "PENDING" and jb["reason"] == "DependencyNeverSatisfied"
        c.delete(f"/v1/jobs/{b}").raise_for_status()


HELLO = "#!/bin/bash\necho hello\n"


def test_time_limit_sends_the_signal_then_times_out(tiny: Any) -> None:
    d = _dir(tiny, "limit")
    script = """#!/bin/bash
#SBATCH --signal=B:USR1@3
#SBATCH -o limit-%j.out
trap 'echo got USR1' USR1
for i in $(seq 60); do sleep 0.5; done
"""
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, script, d, job={"time_limit": 6}).json()["job_id"]
        j = wait_state(c, jid, DONE, timeout=40)
    assert j["state"] == "TIMEOUT", j
    assert j["reason"] == "TimeLimit"
    assert "got USR1" in (d / f"limit-{jid}.out").read_text()
    assert 5 <= j["end_time"] - j["start_time"] <= 15


@on_both_stores
def test_cancel_kills_every_process(tiny: Any) -> None:
    d = _dir(tiny, "cancel")
    marker = f"tide-cancel-marker-{time.time_ns()}"
    script = f"#!/bin/bash\nsrun -N2 bash -c 'exec -a {marker} sleep 300'\n"
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, script, d, ["-N", "2"]).json()["job_id"]
        wait_state(c, jid, {"RUNNING"})
        deadline = time.time() + 15
        while len(_pids(marker)) < 2 and time.time() < deadline:
            time.sleep(0.2)
        assert len(_pids(marker)) == 2
        assert c.delete(f"/v1/jobs/{jid}").json()["jobs"][0]["state"] == "COMPLETING"
        j = wait_state(c, jid, DONE, timeout=30)
    assert j["state"] == "CANCELLED"
    assert _pids(marker) == []
    assert "cancel requested by alice" in [h["reason"] for h in j["history"]]


def _pids(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", "^" + marker], capture_output=True, text=True).stdout
    return out.split()


@on_both_stores
def test_requeue_runs_again_and_keeps_both_attempts(tiny: Any) -> None:
    d = _dir(tiny, "requeue")
    script = (
        "#!/bin/bash\n#SBATCH --gpus-per-node=1\n#SBATCH -o rq-%j.out\n"
        "echo restart=$SLURM_RESTART_COUNT\n"
        "if [ $SLURM_RESTART_COUNT = 0 ]; then sleep 300; fi\n"
    )
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, script, d).json()["job_id"]
        wait_state(c, jid, {"RUNNING"})
        time.sleep(1)
        c.post(f"/v1/jobs/{jid}/requeue").raise_for_status()
        j = wait_state(c, jid, {"COMPLETED"}, timeout=40)
    assert j["restarts"] == 1
    assert [a["state"] for a in j["attempts"]] == ["REQUEUED", "COMPLETED"]
    assert "REQUEUED" in [h["to"] for h in j["history"]]
    assert "restart=1" in (d / f"rq-{jid}.out").read_text()


def test_notify_step_from_inside_the_job(tiny: Any) -> None:
    d = _dir(tiny, "notify")
    script = (
        '#!/bin/bash\n"$TEST_PY" -m tide.cli.main notify step 1\n'
        '"$TEST_PY" -m tide.cli.main notify step 7\n'
    )
    with tiny.client(tiny.tokens["alice"]) as c:
        r = submit(c, script, d)
        body = {"TEST_PY": sys.executable}
        jid = submit(c, script, d, env={**body, "PATH": "/usr/bin:/bin"}).json()["job_id"]
        assert r.status_code == 201
        j = wait_state(c, jid, DONE)
    assert j["state"] == "COMPLETED", (d / f"slurm-{jid}.out").read_text()
    assert j["phases"]["last_step"] == 7
    t = j["phases"]["times"]
    assert t["started"] <= t["first_step"] <= t["ended"]


@on_both_stores
def test_usage_report_prices_gpu_hours(tiny: Any) -> None:
    # a job of alice's own: under xdist the tests that ran hers may be on another worker
    d = _dir(tiny, "usage")
    script = "#!/bin/bash\n#SBATCH --gpus-per-node=1\nsleep 1\n"
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, script, d).json()["job_id"]
        assert wait_state(c, jid, DONE, timeout=40)["state"] == "COMPLETED"
        rep = c.get("/v1/usage/report", params={"start": 0, "end": time.time() + 60}).json()
    lines = [x for x in rep["lines"] if x["user"] == "alice" and x["gpu_type"] == "a100"]
    assert lines and lines[0]["gpu_hours"] > 0
    assert lines[0]["cost"] == pytest.approx(lines[0]["gpu_hours"] * 2.0)
    assert {x["user"] for x in rep["lines"]} == {"alice"}  # users see their own lines


def test_node_down_fails_its_jobs_or_requeues_them(tiny: Any) -> None:
    d = _dir(tiny, "down")
    script = "#!/bin/bash\n#SBATCH --gpus-per-node=8\nsleep 300\n"
    with tiny.client(tiny.tokens["alice"]) as c, tiny.client(tiny.tokens["oscar"]) as op:
        plain = submit(c, script, d, ["--no-requeue"]).json()["job_id"]
        again = submit(c, script, d, ["--requeue"]).json()["job_id"]
        a = wait_state(c, plain, {"RUNNING"})
        b = wait_state(c, again, {"RUNNING"})
        op.post(f"/v1/nodes/{a['nodelist']}/down", json={"reason": "test"}).raise_for_status()
        op.post(f"/v1/nodes/{b['nodelist']}/down", json={"reason": "test"}).raise_for_status()
        ja = wait_state(c, plain, {"NODE_FAIL", "CANCELLED", "FAILED"}, timeout=30)
        assert ja["state"] == "NODE_FAIL" and ja["reason"] == "NodeDown"
        deadline = time.time() + 30
        while job(c, again)["restarts"] == 0 and time.time() < deadline:
            time.sleep(0.2)
        jb = job(c, again)
        assert jb["state"] == "PENDING" and jb["restarts"] == 1, jb
        for n in {a["nodelist"], b["nodelist"]}:
            op.post(f"/v1/nodes/{n}/resume").raise_for_status()
        c.delete(f"/v1/jobs/{again}").raise_for_status()
        wait_state(c, again, DONE, timeout=30)


def test_time_limit_of_a_running_job_is_raised_by_an_operator(tiny: Any) -> None:
    # scontrol update TimeLimit on a running job reaches its supervisor
    d = _dir(tiny, "retime")
    script = "#!/bin/bash\n#SBATCH -o retime-%j.out\nsleep 6\necho finished\n"
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, script, d, job={"time_limit": 3}).json()["job_id"]
        wait_state(c, jid, {"RUNNING"}, timeout=20)
    with tiny.client() as admin:
        r = admin.patch(f"/v1/jobs/{jid}", json={"time_limit": 60})
        assert r.status_code == 200, r.text
    with tiny.client(tiny.tokens["alice"]) as c:
        j = wait_state(c, jid, DONE, timeout=40)
    assert j["state"] == "COMPLETED", j
    assert "finished" in (d / f"retime-{jid}.out").read_text()
