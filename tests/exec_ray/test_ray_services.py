"""Services on the Ray executor: replicas are jobs placed on Ray nodes, the
router sends traffic only to ready ones, a traffic step scales them up and
down, and a replica killed under traffic, a rolling restart and the
scale-down cost no request."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import raycluster

pytest.importorskip("ray", reason="the Ray executor needs ray: pip install 'tide[ray]'")
HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "server"))
sys.path.insert(0, str(HERE / "serve"))
from loadgen import Load  # noqa: E402
from serverproc import ServerProc, wait_for  # noqa: E402
from svc_support import REPLICA, kill_routers  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tide's executors need Linux"),
]


def status(c: Any, name: str) -> dict[str, Any]:
    r = c.get(f"/v1/services/{name}")
    r.raise_for_status()
    return r.json()


def explained(c: Any, what: str, cond: Any, timeout: float) -> Any:
    """wait_for, and on a timeout the service's replicas and events and the jobs'
    states in the message (what kept it, on a loaded CI machine)."""
    try:
        return wait_for(what, cond, timeout)
    except AssertionError as e:
        jobs = c.get("/v1/jobs", params={"all": "true", "format": "columns"}).text
        svc = c.get("/v1/services/rayweb").text
        raise AssertionError(f"{e}\nservice: {svc}\njobs: {jobs}") from None


def test_service_on_ray_scales_with_traffic_and_survives_a_dead_replica(
    rc: raycluster.RayTestCluster, tmp_path: Path
) -> None:
    args = ["--executor", "ray", "--ray-address", rc.address, "--kill-wait", "1"]
    srv = ServerProc(tmp_path / "data", args, env={"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    srv.start()
    work = tmp_path / "work"
    work.mkdir()
    auto = {
        "minReplicas": 1, "maxReplicas": 4, "targetInFlight": 1, "periodSeconds": 1,
        "scaleDownStabilizationSeconds": 6,
    }  # fmt: skip
    doc = {
        "metadata": {"name": "rayweb"},
        "spec": {
            "command": f"{sys.executable} {REPLICA}",
            "resources": {"gpus": 1},
            "readinessProbe": {"path": "/health", "periodSeconds": 0.5},
            "autoscaling": auto,
        },
    }
    try:
        with srv.client() as c:
            r = c.post("/v1/services", json={"service": doc, "cwd": str(work)})
            assert r.status_code == 201, r.text
            url = r.json()["url"]
            s = explained(c, "a ready replica on a Ray node",
                         lambda: (x := status(c, "rayweb"))["ready"] == 1 and x, 120)  # fmt: skip
            (rep,) = [x for x in s["replicas"] if x["state"] == "Ready"]
            job = c.get(f"/v1/jobs/{rep['job_id']}").json()["jobs"][0]
            assert job["nodelist"] in rc.nodes  # placed on a Ray node by the core
            load = Load(url, workers=4, path="/work?ms=200", active=1).start()
            try:
                time.sleep(2)
                load.active = 4
                explained(c, "3 ready replicas", lambda: status(c, "rayweb")["ready"] >= 3, 120)
                pid = __import__("httpx").get(url + "/work", timeout=30).json()["pid"]
                os.kill(pid, signal.SIGKILL)
                time.sleep(2)
                # a rolling restart under traffic: new replicas first, old ones drain
                assert c.post("/v1/services/rayweb/rollout",
                              json={"restart": True}).status_code == 200  # fmt: skip
                explained(c, "the rollout done",
                         lambda: c.get("/v1/services/rayweb/rollout").json()["done"],
                         180)  # fmt: skip
                gens = {x["generation"] for x in status(c, "rayweb")["replicas"]
                        if x["state"] not in ("Stopped", "Failed")}  # fmt: skip
                assert gens == {2}, gens
                load.active = 1
                explained(c, "back to 1", lambda: status(c, "rayweb")["desired"] == 1, 90)
                explained(c, "drained", lambda: status(c, "rayweb")["ready"] == 1, 90)
            finally:
                load.stop()
            assert load.failures() == [], load.failures()[:5]
            c.delete("/v1/services/rayweb")
            explained(c, "deleted", lambda: c.get("/v1/services/rayweb").status_code == 404, 90)
    finally:
        srv.stop()
        kill_routers(tmp_path / "data")
