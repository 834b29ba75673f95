"""Tidal lending, live: a checkpointing training job borrows the serving pool
while traffic is quiet; a traffic rise makes the autoscaler ask for replicas,
the pooled policy reclaims the borrowed GPUs through the checkpoint / requeue
path with a grace bounded by the objective, the new replicas are ready within
it, and once traffic falls the training job resumes from its checkpoint; lost
GPU-seconds are recorded and the job was preempted once (no flapping)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loadgen import Load
from serverproc import job, submit, wait_for, wait_state
from svc_support import REPLICA, pooled_server

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
OBJECTIVE = 40.0  # tests/serve/data/tidal.yaml: reclaim_objective


@pytest.fixture(scope="module")
def tidal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    d = tmp_path_factory.mktemp("tidal")
    with pooled_server(d, "tidal.yaml") as srv:
        yield srv


TRAIN = f"""#!/bin/bash
#SBATCH -p training,lend
#SBATCH --gpus-per-node=3
#SBATCH --requeue
#SBATCH -o train-%j.out
export PYTHONPATH=$TIDE_PYTHONPATH
exec {sys.executable} {HERE / "trainer.py"}
"""
FILLER = "#!/bin/bash\n#SBATCH -p training\n#SBATCH --gpus-per-node=4\nsleep 600\n"


def service(c: Any, name: str) -> dict[str, Any]:
    return c.get(f"/v1/services/{name}").json()


def test_training_borrows_the_serving_pool_and_gives_it_back_in_time(tidal: Any) -> None:
    work = tidal.work
    with tidal.client() as c:
        filler = submit(c, FILLER, work).json()["job_id"]  # the training pool is full
        wait_state(c, filler, {"RUNNING"})
        doc = {"metadata": {"name": "web"}, "spec": {
            "command": f"{sys.executable} {REPLICA}", "resources": {"gpus": 1},
            "partition": "serving", "startupSeconds": 10,
            "readinessProbe": {"path": "/health", "periodSeconds": 0.5},
            "autoscaling": {"minReplicas": 1, "maxReplicas": 4, "targetInFlight": 1,
                            "periodSeconds": 1, "scaleDownStabilizationSeconds": 5},
        }}  # fmt: skip
        r = c.post("/v1/services", json={"service": doc, "cwd": str(work)})
        assert r.status_code == 201, r.text
        url = r.json()["url"]
        wait_for("one ready replica", lambda: service(c, "web")["ready"] == 1, 90)
        # quiet traffic: 3 of the pool's 4 GPUs are idle; after lend_after they are lent
        train = submit(c, TRAIN, work).json()["job_id"]
        j = wait_state(c, train, {"RUNNING"}, timeout=60)
        assert j["nodelist"] == "s1" and j["run_partition"] == "lend", j
        pool = wait_for(
            "the pool's status after a pass",
            lambda: (p := c.get("/v1/pools").json()["pools"][0])["borrowed_gpus"] == 3 and p,
            30,
        )
        assert pool["budget"] == 3 and pool["replica_gpus"] == 1, pool
        time.sleep(3)  # some training steps and checkpoints
        load = Load(url, workers=4, path="/work?ms=300", active=4).start()
        try:
            # the rise: 4 in flight -> 4 replicas -> the borrowed GPUs come back
            s = wait_for("4 ready replicas", lambda: (x := service(c, "web"))["ready"] == 4
                         and x, 120)  # fmt: skip
            j = job(c, train)
            assert j["restarts"] == 1 and j["state"] in ("PENDING", "RUNNING"), j
            pre = j["preemption"]
            assert pre is not None and pre["preemptor"] is not None, j
            late = [x["ready_after"] for x in s["replicas"]
                    if x["state"] == "Ready" and x["ready_after"] is not None]  # fmt: skip
            print(f"\nreplicas ready after their scale decision: {sorted(late)} s")
            assert max(late) <= OBJECTIVE, late
            time.sleep(2)
        finally:
            load.stop()
        assert load.failures() == [], load.failures()[:5]
        # traffic falls: replicas drain, the pool lends again, training resumes
        j = wait_state(c, train, {"RUNNING"}, timeout=120)
        assert j["restarts"] == 1 and j["nodelist"] == "s1", j
        out = work / f"train-{train}.out"
        lines = wait_for("the resumed run's first line",
                         lambda: [ln for ln in out.read_text().splitlines()
                                  if ln.startswith("start ")][1:], 60)  # fmt: skip
        first_step, restart = (int(x) for x in lines[0].split()[1:])
        assert restart == 1 and first_step > 0  # resumed from its checkpoint, not from 0
        assert "saved" in out.read_text()  # it checkpointed on the warning
        j = job(c, train)
        print(f"reclaim: {j['preemption']}")
        assert j["preemption"]["count"] == 1  # no flapping
        assert j["lost_gpu_seconds"] >= 0 and j["attempts"][0]["state"] in (
            "PREEMPTED",
            "REQUEUED",
        ), j
        c.post(f"/v1/jobs/{train}/cancel")
        c.post(f"/v1/jobs/{filler}/cancel")
