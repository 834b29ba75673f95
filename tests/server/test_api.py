"""The REST API against a real server: errors, permissions, admin, reports.

Bad submissions must say which field is wrong and how to fix it, and leave
nothing in the store.
"""

from __future__ import annotations

from typing import Any

import pytest
from serverproc import job, submit, wait_state

HELLO = "#!/bin/bash\necho hi\n"


def _count(srv: Any) -> int:
    with srv.client() as c:
        return len(c.get("/v1/jobs", params={"all": "true"}).json()["jobs"])


def test_openapi_and_ping(tiny: Any) -> None:
    with tiny.client("") as c:
        assert c.get("/v1/ping").json()["ok"] is True
        spec = c.get("/openapi.json").json()
        assert "/v1/jobs" in spec["paths"] and "/v1/nodes/{names}/drain" in spec["paths"]
        r = c.get("/v1/jobs")
        assert r.status_code == 401
        assert r.json()["field"] == "Authorization" and "Bearer" in r.json()["fix"]


def test_token_file_is_private_and_tokens_are_hashed(tiny: Any) -> None:
    import sqlite3

    mode = (tiny.data_dir / "admin.token").stat().st_mode & 0o777
    assert mode == 0o600
    db = sqlite3.connect(tiny.data_dir / "tide.db")
    digests = [r[0] for r in db.execute("select digest from tokens")]
    assert tiny.admin_token not in digests and all(len(d) == 64 for d in digests)
    assert not any(tiny.admin_token in str(r) for r in db.execute("select * from tokens"))


@pytest.mark.parametrize(
    ("script", "argv", "field", "words"),
    [
        ("echo no shebang\n", [], "script", "#!"),
        (HELLO, ["-p", "nope"], "partition", "gpu"),
        (HELLO, ["--gpus-per-node=9"], "gpus_per_node", "8"),
        (HELLO, ["-N", "3", "--gpus-per-node=8"], "nodes", "--nodes=2"),
        (HELLO, ["--time=abc"], "--time", "2:00:00"),
        ("#!/bin/sh\n#SBATCH --mem=lots\n", [], "--mem", "line 2"),
        (HELLO, ["--gres=gpu:h100:1"], "gpu_type", "a100"),
        (HELLO, ["-d", "afterok:999999"], "dependency", "999999"),
        (HELLO, ["-A", "nosuch"], "account", "physics"),
        (HELLO, ["--qos=nosuch"], "qos", "normal"),
    ],
)
def test_bad_submissions_are_refused_and_store_nothing(
    tiny: Any, script: str, argv: list[str], field: str, words: str
) -> None:
    before = _count(tiny)
    with tiny.client(tiny.tokens["alice"]) as c:
        r = submit(c, script, tiny.work, argv)
    assert r.status_code in (400, 422), r.text
    body = r.json()
    assert body["field"] == field, body
    assert words in body["error"] + body["fix"], body
    assert _count(tiny) == before


def test_nine_gpus_message_names_the_limit(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as c:
        r = submit(c, HELLO, tiny.work, ["--gpus-per-node=9"])
    assert r.json()["error"] == (
        "9 GPUs per node requested, but no node in partition 'gpu' has more than 8"
    )


def test_users_see_and_change_only_their_own_jobs(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as alice:
        jid = submit(alice, HELLO, tiny.work, ["--hold"]).json()["job_id"]
        assert job(alice, jid)["user"] == "alice"
        assert job(alice, jid)["account"] == "physics"  # the default account
    with tiny.client(tiny.tokens["bob"]) as bob:
        for method, path in [
            ("DELETE", f"/v1/jobs/{jid}"),
            ("GET", f"/v1/jobs/{jid}"),
            ("POST", f"/v1/jobs/{jid}/release"),
            ("PATCH", f"/v1/jobs/{jid}"),
        ]:
            r = bob.request(method, path, json={"nice": 5} if method == "PATCH" else None)
            assert r.status_code == 403, (method, path, r.text)
            assert "alice" in r.json()["error"]
        ids = [j["id"] for j in bob.get("/v1/jobs").json()["jobs"]]
        assert jid not in ids
        assert bob.get("/v1/jobs", params={"user": "alice"}).status_code == 403
        assert bob.post("/v1/nodes/g1/drain", json={"reason": "x"}).status_code == 403
        assert bob.post("/v1/accounts", json={"name": "mine"}).status_code == 403
        # bob may not use alice's account
        r = submit(bob, HELLO, tiny.work, ["-A", "physics"])
        assert r.status_code == 400 and "bio" in r.json()["fix"]
    with tiny.client(tiny.tokens["oscar"]) as op:  # an operator manages any job
        assert op.get(f"/v1/jobs/{jid}").status_code == 200
        assert op.post("/v1/accounts", json={"name": "x"}).status_code == 403  # not admin
        assert op.delete(f"/v1/jobs/{jid}").json()["jobs"][0]["state"] == "CANCELLED"


def test_job_listing_with_efficiency_adds_it_to_each_job(tiny: Any) -> None:
    """?efficiency=true: every listed job gains an `efficiency` key (null for a job
    that reported no training steps); the other listing shapes are unchanged."""
    with tiny.client(tiny.tokens["alice"]) as alice:
        jid = submit(alice, HELLO, tiny.work, ["--hold"]).json()["job_id"]
        jobs = alice.get("/v1/jobs", params={"efficiency": "true"}).json()["jobs"]
        assert jobs and all("efficiency" in j for j in jobs)
        assert next(j for j in jobs if j["id"] == jid)["efficiency"] is None
        plain = alice.get("/v1/jobs").json()["jobs"]
        assert [j["id"] for j in plain] == [j["id"] for j in jobs]
        assert all("efficiency" not in j for j in plain)
        cols = alice.get("/v1/jobs", params={"format": "columns", "efficiency": "true"}).json()
        assert set(cols) == {"columns", "rows"} and len(cols["rows"]) == len(jobs)
        alice.delete(f"/v1/jobs/{jid}")


def test_hold_release_update_and_admin_hold(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as alice, tiny.client(tiny.tokens["oscar"]) as op:
        jid = submit(alice, HELLO, tiny.work, ["--hold", "-t", "10"]).json()["job_id"]
        assert job(alice, jid)["reason"] == "JobHeldUser"
        # users may lower their time limit, not raise it; priority is for operators
        assert alice.patch(f"/v1/jobs/{jid}", json={"time_limit": 300}).status_code == 200
        assert job(alice, jid)["time_limit"] == 300
        r = alice.patch(f"/v1/jobs/{jid}", json={"time_limit": 9000})
        assert r.status_code == 403 and "operator" in r.json()["error"]
        assert alice.patch(f"/v1/jobs/{jid}", json={"priority": 5}).status_code == 403
        assert op.patch(f"/v1/jobs/{jid}", json={"priority": 77}).status_code == 200
        # an admin hold cannot be released by the user
        op.post(f"/v1/jobs/{jid}/hold").raise_for_status()
        assert job(alice, jid)["held"] == "admin"
        assert alice.post(f"/v1/jobs/{jid}/release").status_code == 403
        op.post(f"/v1/jobs/{jid}/release").raise_for_status()
        alice.delete(f"/v1/jobs/{jid}").raise_for_status()
        # released, it may have started first: then it is COMPLETING until its processes end
        hist = [h["to"] for h in wait_state(alice, jid, {"CANCELLED"}, timeout=30)["history"]]
        assert hist[0] == "PENDING" and hist[-1] == "CANCELLED"


def test_nodes_drain_resume_and_switch_view(tiny: Any) -> None:
    with tiny.client(tiny.tokens["oscar"]) as op:
        r = op.post("/v1/nodes/c1/drain", json={"reason": "fan"})
        assert r.json()["nodes"][0]["state"] in ("DRAINED", "DRAINING")
        assert op.post("/v1/nodes/c1/drain", json={}).status_code == 400  # reason required
        nodes = {n["name"]: n for n in op.get("/v1/nodes").json()["nodes"]}
        assert nodes["c1"]["reason"] == "fan"
        assert nodes["g1"]["switch"] == "leafa" and nodes["g1"]["switch_path"] == "spine/leafa"
        assert nodes["g1"]["gpus"] == 8 and nodes["g1"]["gpu_type"] == "a100"
        op.post("/v1/nodes/c1/resume").raise_for_status()
        assert op.get("/v1/nodes/c1").json()["state"] in ("IDLE", "MIXED", "ALLOCATED")
        assert op.post("/v1/nodes/zz9/resume").status_code == 404
        parts = {p["name"]: p for p in op.get("/v1/partitions").json()["partitions"]}
        assert parts["gpu"]["default"] and parts["gpu"]["gpus"] == 16


def test_admin_accounts_users_qos_limits(tiny: Any) -> None:
    with tiny.client() as admin:
        r = admin.post(
            "/v1/accounts",
            json={
                "name": "chem",
                "parent": "root",
                "fairshare": 3,
                "limits": {"grp_tres": {"gres/gpu": 4}},
            },
        )
        assert r.status_code == 201, r.text
        assert admin.post("/v1/accounts", json={"name": "chem"}).status_code == 409
        bad = admin.post("/v1/accounts", json={"name": "x", "limits": {"grp_gpus": 1}})
        assert bad.status_code == 400 and bad.json()["field"] == "limits"
        admin.post("/v1/users", json={"name": "carol", "accounts": ["chem"]}).raise_for_status()
        admin.post("/v1/qos", json={"name": "high", "priority": 100}).raise_for_status()
        accts = {a["name"]: a for a in admin.get("/v1/accounts").json()["accounts"]}
        assert accts["chem"]["limits"] == {"grp_tres": {"gres/gpu": 4}}
        users = {u["name"]: u for u in admin.get("/v1/users").json()["users"]}
        assert users["carol"]["default_account"] == "chem"
        assert admin.delete("/v1/accounts/root").status_code == 400
        rows = admin.get("/v1/share").json()["rows"]
        assert {r["account"] for r in rows} >= {"root", "physics", "bio", "chem"}
        tok = admin.post("/v1/tokens", json={"user": "carol"}).json()
        with tiny.client(tok["token"]) as carol:
            assert carol.get("/v1/whoami").json() == {"user": "carol", "role": "user"}
            admin.delete(f"/v1/tokens/{tok['id']}").raise_for_status()
            assert carol.get("/v1/whoami").status_code == 401


def test_reservations(tiny: Any) -> None:
    with tiny.client(tiny.tokens["oscar"]) as op:
        r = op.post(
            "/v1/reservations",
            json={
                "name": "maint",
                "start": 4e9,
                "duration": 3600,
                "nodes": ["g[1-2]"],
                "flags": ["MAINT"],
            },
        )
        assert r.status_code == 201, r.text
        assert r.json()["nodes"] == ["g1", "g2"]
        assert (
            op.post(
                "/v1/reservations", json={"name": "x", "duration": 60, "nodes": ["nope"]}
            ).status_code
            == 400
        )
        names = [x["name"] for x in op.get("/v1/reservations").json()["reservations"]]
        assert "maint" in names
        op.delete("/v1/reservations/maint").raise_for_status()


def test_fast_submit_path_errors_match_the_api(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as c:
        r = c.post("/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["field"] == "body"
        r = c.post("/v1/jobs", json={"script": HELLO, "argv": "-N2"})
        assert r.status_code == 422 and r.json()["field"] == "argv"
        r = c.post("/v1/jobs", json={"script": HELLO, "job": {"gpus_per_nod": 1}})
        assert r.status_code == 422 and r.json()["field"] == "job.gpus_per_nod"
    with tiny.client("tide_wrong") as c:
        r = c.post("/v1/jobs", json={"script": HELLO})
        assert r.status_code == 401 and r.json()["field"] == "Authorization"


def test_batch_submit_keeps_good_items_and_reports_bad_ones(tiny: Any) -> None:
    before = _count(tiny)
    items = [
        {"script": HELLO, "argv": ["--hold"], "cwd": str(tiny.work)},
        {"script": HELLO, "argv": ["-p", "nope"]},
        {"script": HELLO, "argv": ["--hold", "--array=0-2"], "cwd": str(tiny.work)},
    ]
    with tiny.client(tiny.tokens["alice"]) as c:
        r = c.post("/v1/jobs/batch", json={"jobs": items})
        assert r.status_code == 201, r.text
        res = r.json()["results"]
        assert "job_id" in res[0] and res[1]["field"] == "partition" and "job_id" in res[2]
        assert r.json()["submitted"] == 2
        for x in (res[0]["job_id"], res[2]["job_id"]):
            c.delete(f"/v1/jobs/{x}").raise_for_status()
    assert _count(tiny) == before + 4  # one job + a 3-task array


def test_operators_may_submit_for_a_user_users_may_not(tiny: Any) -> None:
    with tiny.client(tiny.tokens["oscar"]) as op:
        r = submit(op, HELLO, tiny.work, ["--hold"], user="bob")
        assert r.status_code == 201, r.text
        j = job(op, r.json()["job_id"])
        assert j["user"] == "bob" and j["account"] == "bio"
        op.delete(f"/v1/jobs/{j['id']}").raise_for_status()
    with tiny.client(tiny.tokens["alice"]) as alice:
        assert submit(alice, HELLO, tiny.work, user="bob").status_code == 403


def test_queue_views_agree(tiny: Any) -> None:
    with tiny.client(tiny.tokens["alice"]) as c:
        jid = submit(c, HELLO, tiny.work, ["--hold", "-J", "viewjob"]).json()["job_id"]
        text = c.get("/v1/jobs", params={"format": "squeue"}).text
        cols = c.get("/v1/jobs", params={"format": "columns"}).json()
        line = next(x for x in text.splitlines() if x.split()[0] == str(jid))
        assert line.split()[1:5] == ["gpu", "viewjob", "alice", "PD"]
        assert line.endswith("(JobHeldUser)")
        assert jid in [r[0] for r in cols["rows"]]
        start = c.get("/v1/jobs", params={"format": "squeue-start"}).text
        assert start.splitlines()[0].split()[5] == "START_TIME"
        c.delete(f"/v1/jobs/{jid}").raise_for_status()


def test_prometheus_metrics(tiny: Any) -> None:
    with tiny.client("") as c:
        text = c.get("/metrics").text
    assert 'tide_jobs{state="PENDING"}' in text
    assert "tide_gpus_total 16.0" in text and "tide_sched_passes_total" in text
