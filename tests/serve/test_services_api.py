"""/v1/services and `tide service` against a real server: validation with the
field and the fix, ownership, replicas as jobs, readiness gating the router,
scaling, delete; the spec parser on its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from serverproc import free_port, wait_for
from svc_support import REPLICA

from tide.serve.spec import SpecError, parse_service

pytestmark = pytest.mark.slow


def spec(name: str, **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "command": f"{sys.executable} {REPLICA}",
        "resources": {"gpus": 1, "cpus": 1},
        "readinessProbe": {"path": "/health", "periodSeconds": 0.5},
        "replicas": 1,
        "env": {"PYTHONUNBUFFERED": "1"},
    }
    body.update(over)
    return {"apiVersion": "tide/v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


def apply(c: httpx.Client, doc: dict[str, Any], cwd: Path) -> httpx.Response:
    return c.post("/v1/services", json={"service": doc, "cwd": str(cwd)})


def show(c: httpx.Client, name: str) -> dict[str, Any]:
    r = c.get(f"/v1/services/{name}")
    r.raise_for_status()
    return r.json()


# --- the parser alone ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        ({"metadata": {"name": "Bad_Name"}, "spec": {"command": "x"}}, "metadata.name", "valid"),
        ({"name": "a", "spec": {}}, "spec.command", "required"),
        ({"name": "a", "spec": {"command": "x", "replicaz": 2}}, "spec.replicaz", "unknown key"),
        (
            {"name": "a", "spec": {"command": "x", "autoscaling": {"minReplicas": 3,
                                                                    "maxReplicas": 2,
                                                                    "targetInFlight": 1}}},
            "spec.autoscaling",
            "above maxReplicas",
        ),
        ({"name": "a", "spec": {"command": "x", "autoscaling": {"maxReplicas": 2}}},
         "spec.autoscaling", "targetInFlight"),
        ({"name": "a", "spec": {"command": "x", "port": 80}}, "spec", "1024-65535"),
        ({"name": "a", "spec": {"command": "x", "rollout": {"maxSurge": 0}}},
         "spec.rollout", "both be 0"),
        ({"name": "a", "spec": {"command": "x", "rollout": {"maxSurge": "0%"}}},
         "spec.rollout", "both be 0"),
        ({"name": "a", "spec": {"command": "x", "rollout": {"maxSurge": "150%"}}},
         "spec.rollout", "percentage (0%-100%)"),
        ({"name": "a", "spec": {"command": "x", "rollout": {"maxUnavailable": -1}}},
         "spec.rollout", "neither a count"),
        ({"name": "a", "spec": {"command": "x", "readinessProbe": {"path": "health"}}},
         "spec.readinessProbe.path", "pattern"),
        ({"name": "a", "kind": "Deployment", "spec": {"command": "x"}}, "kind", "Service"),
    ],
)  # fmt: skip
def test_bad_specs_name_the_field_and_the_fix(doc, field, words):
    with pytest.raises(SpecError) as e:
        parse_service(doc)
    assert e.value.field == field
    assert words in str(e.value)
    assert e.value.fix


def test_spec_keys_in_both_cases_and_the_flat_form():
    camel, _ = parse_service(
        spec(
            "a",
            autoscaling={
                "maxReplicas": 4,
                "targetInFlight": 2,
                "schedule": [{"at": "08:00", "min": 2}],
            },
        )
    )
    snake, _ = parse_service(
        {
            "name": "a",
            "command": "x",
            "resources": {"memory": "2G"},
            "autoscaling": {"max_replicas": 4, "target_in_flight": 2},
        }
    )
    assert camel.autoscaling.max_replicas == snake.autoscaling.max_replicas == 4
    assert camel.autoscaling.schedule is not None
    assert camel.autoscaling.schedule.minimum_at(9 * 3600.0) == 2
    assert snake.mem == 2048 and snake.autoscaling.target_inflight == 2


# --- the API ---------------------------------------------------------------------------


def test_apply_refuses_what_could_never_run(served: Any) -> None:
    with served.client(served.tokens["alice"]) as c:
        r = apply(c, spec("toobig", resources={"gpus": 9}), served.work)
        assert r.status_code == 400 and "8" in r.json()["error"], r.text
        r = apply(c, spec("nopart", partition="nope"), served.work)
        assert r.status_code == 400 and r.json()["field"] == "partition"
        r = apply(c, spec("badacct", account="bio"), served.work)
        assert r.status_code == 400 and r.json()["field"] == "account"
        r = apply(c, {"metadata": {"name": "x"}, "spec": {"replicas": 1}}, served.work)
        assert r.status_code == 400 and r.json()["field"] == "spec.command"
        # a fixed port on the local executor: one replica, never two at once
        r = apply(c, spec("fixed", port=free_port(), replicas=2), served.work)
        assert r.status_code == 400 and r.json()["field"] == "spec.port", r.text
        assert "port: 0" in r.json()["fix"]
        r = apply(c, spec("fixed", port=free_port()), served.work)  # maxSurge 1: a surge
        assert r.status_code == 400 and r.json()["field"] == "spec.port", r.text
        assert c.get("/v1/services").json()["services"] == []
        # a routerPort in use: the router could never listen there
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            r = apply(c, spec("taken", routerPort=taken.getsockname()[1]), served.work)
            assert r.status_code == 409 and r.json()["field"] == "spec.routerPort", r.text
        one = spec("fixed", port=free_port(), rollout={"maxSurge": 0, "maxUnavailable": 1})
        assert apply(c, one, served.work).status_code == 201
        r = c.post("/v1/services/fixed/scale", json={"replicas": 2})
        assert r.status_code == 400 and r.json()["field"] == "spec.port", r.text
        # the service's address stays: a new routerPort is refused, naming the old one
        port = c.get("/v1/services/fixed").json()["url"].rsplit(":", 1)[1]
        r = apply(c, {**one, "spec": {**one["spec"], "routerPort": free_port()}}, served.work)
        assert r.status_code == 400 and r.json()["field"] == "spec.routerPort", r.text
        assert port in r.json()["fix"]
        assert c.delete("/v1/services/fixed").status_code == 200
        wait_for("the service gone", lambda: c.get("/v1/services/fixed").status_code == 404, 60)


def test_a_service_runs_replicas_as_jobs_and_routes_to_ready_ones(served: Any) -> None:
    with served.client(served.tokens["alice"]) as c:
        r = apply(c, spec("hello", replicas=2, env={"START_DELAY": "1"}), served.work)
        assert r.status_code == 201, r.text
        out = r.json()
        assert out["result"] == "created" and out["desired"] == 2 and out["state"] == "Active"
        url = out["url"]
        # a request sent before any replica is ready waits for one (buffering)
        t0 = time.time()
        first = httpx.get(url + "/work?ms=1", timeout=60)
        assert first.status_code == 200, first.text
        s = wait_for("2 ready replicas", lambda: (x := show(c, "hello"))["ready"] == 2 and x, 90)
        assert time.time() - t0 < 90
        jobs = [rep["job_id"] for rep in s["replicas"] if rep["state"] == "Ready"]
        # replicas are ordinary jobs: named after the service, one GPU each, accounted
        for jid in jobs:
            j = c.get(f"/v1/jobs/{jid}").json()["jobs"][0]
            assert j["name"].startswith("hello.r") and j["user"] == "alice"
            assert j["state"] == "RUNNING" and j["gpus_alloc"] == 1
        seen = {httpx.get(url + "/work", timeout=30).json()["replica"] for _ in range(8)}
        assert len(seen) == 2  # least outstanding with rotating ties: both get traffic
        assert any("ready" in e["message"] for e in s["events"])

        def scraped() -> str | None:
            text = httpx.get(served.url + "/metrics").text
            wanted = 'tide_service_requests_total{code="2xx",service="hello"}'
            return text if wanted in text else None

        metrics = wait_for("router stats in /metrics", scraped, 10)
        assert 'tide_service_replicas{service="hello",state="Ready"} 2.0' in metrics
        assert 'tide_service_first_byte_seconds_bucket{le="+Inf",service="hello"}' in metrics
        # bob neither sees nor touches it; the operator does
        with served.client(served.tokens["bob"]) as b:
            assert b.get("/v1/services/hello").status_code == 404
            assert b.get("/v1/services").json()["services"] == []
            assert b.delete("/v1/services/hello").status_code == 404
        with served.client(served.tokens["oscar"]) as o:
            assert o.get("/v1/services/hello").status_code == 200
        # re-applying the same document changes nothing
        assert apply(c, spec("hello", replicas=2, env={"START_DELAY": "1"}),
                     served.work).json()["result"] == "unchanged"  # fmt: skip
        r = c.post("/v1/services/hello/scale", json={"replicas": 1})
        assert r.status_code == 200 and r.json()["desired"] == 1
        wait_for("one replica left", lambda: len(
            [x for x in show(c, "hello")["replicas"] if x["state"] not in ("Stopped", "Failed")]
        ) == 1, 60)  # fmt: skip
        logs = c.get("/v1/services/hello/logs", params={"tail": 5}).json()
        assert any("listening on" in line for r_ in logs["replicas"] for line in r_["lines"])
        assert show(c, "hello")["gpu_hours"] > 0
        assert c.delete("/v1/services/hello").status_code == 200
        wait_for("the service gone", lambda: c.get("/v1/services/hello").status_code == 404, 60)
        for jid in jobs:
            st = c.get(f"/v1/jobs/{jid}").json()["jobs"][0]["state"]
            assert st in ("CANCELLED", "COMPLETED"), st
    with pytest.raises(httpx.HTTPError):
        httpx.get(url + "/work", timeout=5)  # the router went with the service


def test_a_command_that_cannot_start_backs_off_and_a_fixed_spec_starts_at_once(
    served: Any,
) -> None:
    """CrashLoopBackOff: replicas that fail before being ready are replaced after a
    doubling delay (not one job per controller tick); a new template starts at once.
    `tide service ls` says so, with the last exit, and Active once fixed."""
    env = {**os.environ, "TIDE_URL": served.url, "TIDE_TOKEN": served.tokens["alice"]}

    def ls() -> str:
        out = subprocess.run([sys.executable, "-m", "tide.cli.main", "service", "ls"], env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert out.returncode == 0, out.stderr
        return next((line for line in out.stdout.splitlines() if line.startswith("crash ")), "")

    with served.client(served.tokens["alice"]) as c:
        r = apply(c, spec("crash", replicas=2, command="echo loading; exit 3"), served.work)
        assert r.status_code == 201, r.text
        line = wait_for("ls: CrashLoopBackOff", lambda: "CrashLoopBackOff" in (x := ls()) and x,
                        120)  # fmt: skip
        assert "0/2" in line and "exit code 3" in line and "in a row" in line, line
        (item,) = [x for x in c.get("/v1/services").json()["services"] if x["name"] == "crash"]
        assert item["state"] == "Active" and item["status"] == "CrashLoopBackOff", item
        metrics = httpx.get(served.url + "/metrics", timeout=30).text
        assert 'tide_service_status{service="crash",status="CrashLoopBackOff"} 1.0' in metrics

        def backoff(delay: int) -> dict[str, Any] | None:
            s = show(c, "crash")
            words = f"starts in {delay} s (crash loop back-off)"
            return s if any(words in e["message"] for e in s["events"]) else None

        s = wait_for("a 40 s back-off", lambda: backoff(40), 120)
        n = len(s["replicas"])
        assert n <= 6, [e["message"] for e in s["events"]]  # 2 + 1 + 1 + ... not 2 a tick
        time.sleep(5)  # within the announced 40 s nothing new is submitted
        s = show(c, "crash")
        assert len(s["replicas"]) <= n + 1, [e["message"] for e in s["events"]]
        assert all(x["state"] in ("Failed", "Pending", "Starting") for x in s["replicas"])
        # the fix: a new replica template starts at once, whatever the back-off said
        assert apply(c, spec("crash", replicas=2), served.work).json()["result"] == "configured"
        s = wait_for("2 ready replicas of the fixed spec",
                     lambda: (x := show(c, "crash"))["ready"] == 2 and x, 120)  # fmt: skip
        assert s["status"] == "Active", s["status_reason"]
        assert " Active " in ls() + " "
        (last,) = [e for e in s["events"] if e["kind"] == "backoff"][-1:]
        until = last["time"] + float(last["message"].split("starts in ")[1].split()[0])
        fixed = [x for x in s["replicas"] if x["generation"] == 2]
        assert fixed and all(x["created"] < until for x in fixed), (fixed, until)
        assert c.delete("/v1/services/crash").status_code == 200
        wait_for("the service gone", lambda: c.get("/v1/services/crash").status_code == 404, 60)


def test_cli_apply_ls_show_scale_delete(served: Any, tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "svc.yaml"
    path.write_text(yaml.safe_dump(spec("clisvc", replicas=1)))
    env = {**os.environ, "TIDE_URL": served.url, "TIDE_TOKEN": served.tokens["alice"]}

    def tide(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tide.cli.main", *args], env=env,
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip

    r = tide("service", "apply", "-f", str(path))
    assert r.returncode == 0 and "service/clisvc created" in r.stdout, r.stderr
    r = tide("service", "ls")
    assert "clisvc" in r.stdout and "READY" in r.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("metadata: {name: x}\nspec: {command: x, replicas: -1}\n")
    r = tide("service", "apply", "-f", str(bad))
    assert r.returncode == 1 and "spec.replicas" in r.stderr and "fix:" in r.stderr
    assert "Traceback" not in r.stderr
    with served.client(served.tokens["alice"]) as c:
        wait_for("ready", lambda: show(c, "clisvc")["ready"] == 1, 90)
    r = tide("service", "show", "clisvc")
    assert "Service=clisvc" in r.stdout and "Ready" in r.stdout
    r = tide("service", "scale", "clisvc", "--max", "3")
    assert r.returncode == 1 and "does not autoscale" in r.stderr
    r = tide("service", "delete", "clisvc")
    assert r.returncode == 0
