"""Tidal lending under a noisy load, live: traffic alternating between a burst
(2 clients) and a lull (1 client) makes the service flap between 1 and 2
replicas (no scale-down window), so the serving pool's spare GPUs flap between
3 and 2. Lending follows measured idleness with hysteresis (lend_after 12 s):
the 3-GPU borrower is reclaimed once at the first burst and not lent again
until the pool has stayed idle for a whole window after the noise, so it is
preempted exactly once, however often the replicas come and go."""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loadgen import Load
from serverproc import job, submit, wait_for, wait_state
from svc_support import REPLICA, pooled_server
from test_tidal_e2e import FILLER, TRAIN

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    d = tmp_path_factory.mktemp("noise")
    with pooled_server(d, "tidal_noise.yaml") as srv:
        yield srv


def test_noisy_load_reclaims_once_and_lends_again_only_after_a_quiet_window(noisy: Any) -> None:
    work = noisy.work
    with noisy.client() as c:
        filler = submit(c, FILLER, work).json()["job_id"]  # the training pool is full
        wait_state(c, filler, {"RUNNING"})
        doc = {"metadata": {"name": "noisy"}, "spec": {
            "command": f"{sys.executable} {REPLICA}", "resources": {"gpus": 1},
            "partition": "serving", "startupSeconds": 10, "drainSeconds": 10,
            "readinessProbe": {"path": "/health", "periodSeconds": 0.5},
            "autoscaling": {"minReplicas": 1, "maxReplicas": 2, "targetInFlight": 1,
                            "periodSeconds": 1, "scaleDownStabilizationSeconds": 0},
        }}  # fmt: skip
        r = c.post("/v1/services", json={"service": doc, "cwd": str(work)})
        assert r.status_code == 201, r.text
        url = r.json()["url"]
        wait_for("one ready replica", lambda: c.get("/v1/services/noisy").json()["ready"] == 1,
                 90)  # fmt: skip
        train = submit(c, TRAIN, work).json()["job_id"]
        j = wait_state(c, train, {"RUNNING"}, timeout=120)
        assert j["run_partition"] == "lend", j
        load = Load(url, workers=2, path="/work?ms=400", active=1).start()
        budgets, desired = [], []
        try:
            end = time.time() + 45
            while time.time() < end:  # bursts every 5 s: never 12 s of idleness
                for level, seconds in ((2, 1.5), (1, 3.5)):
                    load.active = level
                    time.sleep(seconds)
                    budgets.append(c.get("/v1/pools").json()["pools"][0]["budget"])
                    desired.append(c.get("/v1/services/noisy").json()["desired"])
            j = job(c, train)
            assert j["preemption"] is not None and j["preemption"]["count"] == 1, j
            assert j["state"] == "PENDING", j  # not lent again while the noise lasts
        finally:
            load.active = 1  # quiet: one client, one replica
        flips = sum(a != b for a, b in itertools.pairwise(desired))
        print(f"\ndesired replicas during the noise: {desired} ({flips} changes)")
        print(f"lending budget during the noise: {budgets}")
        assert flips >= 4  # the replicas did flap: the pool's spare GPUs with them
        assert max(budgets[2:]) <= 2  # the budget did not
        # after a whole quiet window the borrower is lent the pool again
        j = wait_state(c, train, {"RUNNING"}, timeout=120)
        load.stop()
        assert load.failures() == [], load.failures()[:5]
        assert j["restarts"] == 1 and j["preemption"]["count"] == 1, j
        c.post(f"/v1/jobs/{train}/cancel")
        c.post(f"/v1/jobs/{filler}/cancel")
