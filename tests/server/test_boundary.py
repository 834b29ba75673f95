"""Hostile requests against a real server (issue 11, items 2 and 3): every
bad value is a clear 4xx naming the field, no request stalls the API, and
nobody acts beyond their role (Slurm's rules and reason names)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest
from serverproc import job, submit, wait_for, wait_state

HELLO = "#!/bin/sh\ntrue\n"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"argv": ["-J", "a\ud800b"]}, "argv.1"),  # a lone surrogate
        ({"argv": ["-J", "a\x00b"]}, "argv.1"),
        ({"env": {"A": "x\x00"}}, "env.A"),
        ({"argv": ["--dependency=afterok:99999999999999999999"]}, "dependency"),
        ({"job": {"nodes_min": "abc"}}, "job.nodes_min"),
        ({"job": {"nodes_min": -3}}, "job.nodes_min"),
        ({"job": {"time_limit": 2**70}}, "job.time_limit"),
        ({"job": {"time_limit": 1e300}}, "job.time_limit"),
        ({"job": {"hold": "yes"}}, "job.hold"),
        ({"job": {"gpus_per_node": -1}}, "job.gpus_per_node"),
        ({"job": {"begin": []}}, "job.begin"),
        ({"job": {"nice": "x"}}, "job.nice"),
        ({"job": {"name": "x" * 300}}, "job.name"),
        ({"argv": ["--array=0-3999999,1-3999999"]}, "--array"),
        ({"argv": ["--array=0-1001"]}, "--array"),
    ],
)
def test_bad_values_are_4xx_naming_the_field(tiny: Any, extra: dict, field: str) -> None:
    with tiny.client(tiny.tokens["alice"]) as c:
        body = {"script": HELLO, "cwd": "/tmp", **extra}
        # json.dumps escapes a lone surrogate (\\ud800), as a hostile client sends it
        headers = {"content-type": "application/json"}
        r = c.post("/v1/jobs", content=json.dumps(body), headers=headers)
    assert r.status_code in (400, 422), r.text
    assert r.json()["field"] == field, r.json()


def test_bad_ids_limits_and_patches_are_4xx(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as c:
        assert c.get("/v1/jobs/999999999999999999999999999").status_code == 400
        assert c.get("/v1/jobs", params={"limit": "2.5e26"}).status_code == 422
        assert c.get("/v1/jobs", params={"user": "a\x00"}).status_code == 400
        jid = submit(c, HELLO, tiny.work, ["--hold"]).json()["job_id"]
        for body in ({"nice": 2**70}, {"name": "x" * 10_000_000}, {"time_limit": -1}):
            r = c.patch(f"/v1/jobs/{jid}", json=body)
            assert r.status_code == 422 and r.json()["field"] == next(iter(body)), r.text


def test_node_ranges_are_bounded_by_the_cluster(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as c:
        r = submit(c, HELLO, tiny.work, ["--hold", "--nodes=1-2147483646:1"])
        assert r.status_code == 201, r.text
        j = c.get(f"/v1/jobs/{r.json()['job_id']}").json()["jobs"][0]
    assert j["request"]["nodes_max"] == 2  # the gpu partition's two nodes


def test_costly_options_never_stall_the_api(tiny: Any) -> None:
    """Parsing runs off the event loop; ping answers while submissions parse."""
    stop = threading.Event()

    def flood() -> None:
        with tiny.client(tiny.tokens["alice"]) as c:
            while not stop.is_set():
                submit(c, HELLO, tiny.work, ["--array=0-3999999,1-3999999", "--nodes=1-9999999:1"])

    threads = [threading.Thread(target=flood) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        worst = 0.0
        with httpx.Client(base_url=tiny.url, timeout=30) as c:
            for _ in range(20):
                t0 = time.perf_counter()
                assert c.get("/v1/ping").status_code == 200
                worst = max(worst, time.perf_counter() - t0)
                time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert worst < 2.0, f"/v1/ping took {worst:.2f} s"


def test_405_names_every_allowed_method(tiny: Any) -> None:
    with tiny.client() as c:
        r = c.request("OPTIONS", "/v1/jobs/12")
    assert r.status_code == 405
    assert set(r.headers["allow"].split(", ")) == {"GET", "DELETE", "PATCH"}
    assert r.json()["error"] and "GET" in r.json()["fix"]


def test_only_operators_raise_priority_at_submit(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as c:
        for argv in (["--priority=TOP"], ["--nice=-100000"]):
            r = submit(c, HELLO, tiny.work, argv)
            assert r.status_code == 403, (argv, r.text)
        r = submit(c, HELLO, tiny.work, [], job={"priority": 100})
        assert r.status_code == 403, r.text
        r = submit(c, HELLO, tiny.work, [], job={"priority": 4294967293})
        assert r.status_code == 422, r.text  # beyond what the store holds
    with tiny.client(tiny.tokens["oscar"]) as op:
        r = submit(op, HELLO, tiny.work, ["--hold", "--priority=100", "--nice=-5"])
        assert r.status_code == 201, r.text
        r = submit(op, HELLO, tiny.work, ["--hold"], user="nosuchuser")
        assert r.status_code == 404 and r.json()["field"] == "user", r.text


def test_accounts_partitions_and_qos_are_checked_at_submit_and_patch(tiny: Any) -> None:
    with tiny.client() as admin:
        admin.post("/v1/qos", json={"name": "vip", "priority": 1000}).raise_for_status()
        admin.post(
            "/v1/associations", json={"user": "bob", "account": "bio", "qos": ["normal"]}
        ).raise_for_status()
    with tiny.client(tiny.tokens["bob"]) as bob:
        r = submit(bob, HELLO, tiny.work, ["--qos=vip"])
        assert r.status_code == 400 and r.json()["error"].startswith("InvalidQOS"), r.text
        jid = submit(bob, HELLO, tiny.work, ["--hold"]).json()["job_id"]
        r = bob.patch(f"/v1/jobs/{jid}", json={"account": "physics"})
        assert r.status_code == 400 and r.json()["error"].startswith("InvalidAccount"), r.text
        r = bob.patch(f"/v1/jobs/{jid}", json={"qos": "vip"})
        assert r.status_code == 400 and r.json()["error"].startswith("InvalidQOS"), r.text
        j = bob.get(f"/v1/jobs/{jid}").json()["jobs"][0]
    assert (j["account"], j["qos"]) == ("bio", "normal")


def test_tokens_users_and_the_last_admin(tiny: Any) -> None:
    with tiny.client() as admin:
        r = admin.post("/v1/tokens", json={"user": "ghost"})
        assert r.status_code == 404 and r.json()["field"] == "user", r.text
        r = admin.post("/v1/tokens", json={"user": "alice", "expires_in": -5})
        assert r.status_code == 422 and r.json()["field"] == "expires_in", r.text
        me = admin.get("/v1/whoami").json()["user"]
        mine = [t for t in admin.get("/v1/tokens").json()["tokens"] if t["user"] == me]
        for t in mine:
            r = admin.delete(f"/v1/tokens/{t['id']}")
            if r.status_code == 409:
                break
        assert r.status_code == 409 and "no administrator" in r.json()["error"], r.text
        r = admin.post("/v1/users", json={"name": me, "admin_level": "None"})
        assert r.status_code == 409, r.text
        assert admin.get("/v1/whoami").json()["role"] == "admin"


def test_a_job_token_only_notifies_its_own_running_job(tiny: Any) -> None:
    from tide.server.auth import job_token

    secret = bytes.fromhex((tiny.data_dir / "secret.key").read_text().strip())
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, HELLO, tiny.work, ["--hold"]).json()["job_id"]
    with tiny.client(job_token(secret, jid)) as j:
        for path in ("/v1/users", "/v1/accounts", "/v1/nodes", "/v1/whoami", "/v1/jobs"):
            assert j.get(path).status_code == 403, path
        r = j.post(f"/v1/jobs/{jid}/notify", json={"event": "step", "step": 1})
        assert r.status_code == 409  # not running: a job's token dies with its run


def test_time_zero_and_unlimited_mean_no_limit_as_in_slurm(tiny: Any) -> None:
    """--time=0, --time=UNLIMITED and JSON time_limit 0 ask for no limit (Slurm's
    INFINITE), never the partition's DefaultTime: in a partition with a MaxTime the
    job pends (PartitionTimeLimit) until an operator gives it a limit; a user may
    not lift the limit of a job by PATCH."""
    with tiny.client(tiny.tokens["alice"]) as c:
        argvs = (["-t0"], ["-t", "UNLIMITED"])
        ids = [submit(c, HELLO, tiny.work, a).json()["job_id"] for a in argvs]
        ids.append(submit(c, HELLO, tiny.work, [], job={"time_limit": 0}).json()["job_id"])
        for jid in ids:
            reasoned = lambda jid=jid: (j := job(c, jid))["reason"] != "None" and j  # noqa: E731
            j = wait_for("a pending reason", reasoned)
            assert (j["state"], j["reason"], j["time_limit"]) == (
                "PENDING", "PartitionTimeLimit", None
            ), j
        plain = submit(c, HELLO, tiny.work, ["--hold", "-t", "10"]).json()["job_id"]
        r = c.patch(f"/v1/jobs/{plain}", json={"time_limit": 0})
        assert r.status_code == 403 and "raise a time limit" in r.json()["error"], r.text
        c.delete(f"/v1/jobs/{plain}")
    with tiny.client() as admin:
        admin.patch(f"/v1/jobs/{ids[0]}", json={"time_limit": 600}).raise_for_status()
        assert wait_state(admin, ids[0], {"COMPLETED", "FAILED"})["state"] == "COMPLETED"
        for jid in ids[1:]:
            admin.delete(f"/v1/jobs/{jid}")


def test_deny_accounts_is_checked_at_submit_and_patch(tiny: Any) -> None:
    """slurm.conf DenyAccounts (tiny.yaml: cpu denies bio): AccountNotAllowed at
    submit and at PATCH, naming the partition and the fix; other accounts pass."""
    with tiny.client(tiny.tokens["bob"]) as bob:
        r = submit(bob, HELLO, tiny.work, ["-p", "cpu"])
        assert r.status_code == 400 and r.json()["field"] == "partition", r.text
        assert r.json()["error"].startswith("AccountNotAllowed: --partition=cpu"), r.text
        assert "accounts denied: bio" in r.json()["fix"], r.text
        jid = submit(bob, HELLO, tiny.work, ["--hold"]).json()["job_id"]
        r = bob.patch(f"/v1/jobs/{jid}", json={"partition": "cpu"})
        assert r.status_code == 400 and r.json()["error"].startswith("AccountNotAllowed"), r.text
        assert bob.get(f"/v1/jobs/{jid}").json()["jobs"][0]["partition"] == "gpu"
        bob.delete(f"/v1/jobs/{jid}")
        parts = {p["name"]: p for p in bob.get("/v1/partitions").json()["partitions"]}
    assert parts["cpu"]["deny_accounts"] == ["bio"] and parts["gpu"]["deny_accounts"] == []
    with tiny.client(tiny.tokens["alice"]) as alice:
        r = submit(alice, HELLO, tiny.work, ["-p", "cpu", "--hold"])
        assert r.status_code == 201, r.text
        alice.delete(f"/v1/jobs/{r.json()['job_id']}")


@pytest.mark.parametrize(
    ("script", "argv", "field", "words"),
    [
        ('#!/bin/sh\n#SBATCH --job-name="my run\ntrue\n', [], "script", "line 2: unmatched `\"`"),
        ("#!/bin/sh\n#SBATCH -J 'x -p gpu\ntrue\n", [], "script", "line 2: unmatched `'`"),
        (HELLO, ['--job-name="my run'], "--job-name", "unmatched `\"`"),
        (HELLO, ["-J", "'x"], "--job-name", "unmatched `'`"),
    ],
)
def test_an_unterminated_quote_is_a_clear_400(
    tiny: Any, script: str, argv: list[str], field: str, words: str
) -> None:
    """An #SBATCH line or a --job-name that opens a quote it never closes is refused
    (sbatch: "Unmatched `\"`"), never taken as a name running to the end of the line."""
    with tiny.client(tiny.tokens["alice"]) as c:
        r = submit(c, script, tiny.work, argv)
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["field"] == field and words in body["error"] and body["fix"], body
        ok = submit(c, HELLO, tiny.work, ["-J", "bob's run", "--hold"])  # a quote inside is fine
        assert ok.status_code == 201 and job(c, ok.json()["job_id"])["name"] == "bob's run"
        c.delete(f"/v1/jobs/{ok.json()['job_id']}")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/users", {"name": ""}, "name"),  # was stored: DELETE /v1/users/ then hit the list
        ("/v1/users", {"name": "a b"}, "name"),
        ("/v1/accounts", {"name": "a,b"}, "name"),  # lists are comma-separated
        ("/v1/qos", {"name": "x/y"}, "name"),  # names go into URLs
        ("/v1/associations", {"user": "", "account": "physics"}, "user"),
        ("/v1/tokens", {"user": ""}, "user"),
    ],
)
def test_names_of_new_things_are_words(tiny: Any, path: str, body: dict, field: str) -> None:
    with tiny.client() as admin:
        r = admin.post(path, json=body)
        assert r.status_code == 422 and r.json()["field"] == field, r.text
        assert all(u["name"] for u in admin.get("/v1/users").json()["users"])
