"""Jobs run as their users (issue 11 item 1, docs/security.md), tried as a hostile
user would, against a real server running as root with real OS users (useradd):
a job runs under its user's uid and groups, cannot read the admin token, the
signing key, the database or another user's output and job directory, cannot
signal another user's job, learns no controller path from its environment, and
an --output into a root-only place fails cleanly with the reason in the job's
record. A tide user without an OS account is refused at submit.

Single-user mode needs no root: a server that runs jobs as its own user takes
only that user's jobs unless started with --any-user.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serverproc import DATA, ServerProc, job, submit, wait_for, wait_state

from osusers import need_root, os_user, shared_dir
from tide.exec import identity

MARKER = f"controller-only-{uuid.uuid4().hex}"  # in the server's environment only
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}


class Site:
    """A root server whose tide users alice and bob are two fresh OS users."""

    def __init__(self, base: Path, srv: ServerProc, users: dict[str, identity.Identity]) -> None:
        self.base, self.srv, self.users = base, srv, users
        self.tokens: dict[str, str] = {}
        self.work: dict[str, Path] = {}

    def client(self, who: str) -> httpx.Client:
        return self.srv.client(self.tokens[who])

    def run(self, who: str, script: str, timeout: float = 120, **extra: Any) -> dict[str, Any]:
        """Submit as `who` from their own (private) directory and wait for the end."""
        with self.client(who) as c:
            r = submit(c, script, self.work[who], **extra)
            assert r.status_code == 201, r.text
            return wait_state(c, r.json()["job_id"], FINAL, timeout)

    def output(self, who: str, job_id: int) -> str:
        return (self.work[who] / f"slurm-{job_id}.out").read_text()


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    need_root()
    base = shared_dir("tide-sec-")
    try:
        with os_user() as a, os_user() as b:
            users = {"alice": a, "bob": b}
            cluster = base / "cluster.yaml"
            text = (DATA / "tiny.yaml").read_text()
            cluster.write_text(text + f"user_map: {{alice: {a.name}, bob: {b.name}}}\n")
            args = ["--cluster", str(cluster), "--kill-wait", "2", "--bf-interval", "1"]
            args += ["--spool-dir", str(base / "spool")]
            srv = ServerProc(base / "data", args, env={"TIDE_TEST_MARKER": MARKER}, per_user=True)
            srv.start()
            try:
                s = Site(base, srv, users)
                with srv.client() as admin:
                    for name in users:
                        r = admin.post("/v1/tokens", json={"user": name, "name": "sec"})
                        r.raise_for_status()
                        s.tokens[name] = r.json()["token"]
                for name, ident in users.items():
                    s.work[name] = base / f"home-{name}"
                    s.work[name].mkdir(mode=0o700)  # like a home directory
                    identity.own(s.work[name], ident)
                yield s
            finally:
                srv.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_job_runs_as_its_user(site: Site) -> None:
    with site.client("alice") as c:
        assert c.get("/v1/cluster").json()["job_users"]["mode"] == "per-user"
    a = site.users["alice"]
    script = (
        "#!/bin/sh\n"
        "echo uid=$(id -u) gid=$(id -g) user=$USER logname=$LOGNAME home=$HOME\n"
        "srun sh -c 'echo step_uid=$(id -u)'\n"
    )
    end = site.run("alice", script)
    out = site.output("alice", end["id"])
    assert end["state"] == "COMPLETED", out
    assert f"uid={a.uid} gid={a.gid} user={a.name} logname={a.name} home={a.home}" in out
    assert f"step_uid={a.uid}" in out
    assert (site.work["alice"] / f"slurm-{end['id']}.out").stat().st_uid == a.uid


def test_a_job_cannot_read_the_controllers_secrets_nor_learn_where_they_are(site: Site) -> None:
    data = site.srv.data_dir
    secrets = [data / "admin.token", data / "secret.key", data / "tide.db"]
    assert all(p.exists() for p in secrets)
    tries = "".join(
        f"if cat {p} >/dev/null 2>&1; then echo READ {p.name}; else echo DENIED {p.name}; fi\n"
        for p in secrets
    )
    script = (
        "#!/bin/sh\n"
        f"{tries}"
        f"ls {data} >/dev/null 2>&1 && echo LISTED data || echo DENIED listing\n"
        "echo '--- env'; env\n"
        "echo '--- supervisor env'; tr '\\0' '\\n' < /proc/$PPID/environ\n"
    )
    end = site.run("alice", script)
    out = site.output("alice", end["id"])
    assert end["state"] == "COMPLETED", out
    for p in secrets:
        assert f"DENIED {p.name}" in out and f"READ {p.name}" not in out
    assert "DENIED listing" in out
    env = out.split("--- env", 1)[1]
    assert str(data) not in env, "a job's environment names the controller's data directory"
    assert MARKER not in env, "the controller's environment reached the job"
    assert "TIDE_JOB_DIR=" in env and str(site.base / "spool") in env


def test_a_job_cannot_read_another_users_output_or_job_dir_nor_signal_their_job(
    site: Site,
) -> None:
    with site.client("bob") as c:
        r = submit(c, "#!/bin/sh\necho bob-private-output\nsleep 300\n", site.work["bob"])
        assert r.status_code == 201, r.text
        bob_job = r.json()["job_id"]
        wait_state(c, bob_job, {"RUNNING"}, 120)
    bob_dir = site.base / "spool" / "jobs" / str(bob_job)
    bob_out = site.work["bob"] / f"slurm-{bob_job}.out"
    wait_for("bob's output", lambda: bob_out.exists() and bob_out.read_text(), 120)
    pid = wait_for("bob's supervisor", lambda: _pid(bob_dir / "supervisor.pid"), 120)
    script = (
        "#!/bin/sh\n"
        f"cat {bob_out} 2>/dev/null && echo READ output || echo DENIED output\n"
        f"cat {bob_dir}/script 2>/dev/null && echo READ script || echo DENIED script\n"
        f"cat {bob_dir}/spec.json 2>/dev/null && echo READ spec || echo DENIED spec\n"
        f"kill -9 {pid} 2>/dev/null && echo KILLED || echo DENIED kill\n"
    )
    end = site.run("alice", script)
    out = site.output("alice", end["id"])
    assert "bob-private-output" not in out and "TIDE_JOB_TOKEN" not in out
    for what in ("output", "script", "spec", "kill"):
        assert f"DENIED {what}" in out, out
    with site.client("bob") as c:
        assert job(c, bob_job)["state"] == "RUNNING"
        c.post(f"/v1/jobs/{bob_job}/cancel").raise_for_status()
        wait_state(c, bob_job, FINAL, 120)


def _pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def test_output_into_a_root_only_place_fails_cleanly_with_the_reason(site: Site) -> None:
    private = site.base / "root-only"
    private.mkdir(mode=0o700, exist_ok=True)
    victim = private / "precious"
    victim.write_text("root's data\n")
    victim.chmod(0o600)
    end = site.run("alice", "#!/bin/sh\necho overwritten\n", argv=[f"--output={victim}"])
    assert end["state"] == "FAILED"
    record = json.dumps(end)
    assert f"Could not open stdout file {victim}: Permission denied" in record, record
    assert victim.read_text() == "root's data\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_tide_user_without_an_os_account_is_refused_at_submit(site: Site) -> None:
    ghost = f"ghost{uuid.uuid4().hex[:8]}"
    with site.srv.client() as admin:
        r = admin.post("/v1/users", json={"name": ghost, "accounts": ["physics"]})
        assert r.status_code in (200, 201), r.text
        tok = admin.post("/v1/tokens", json={"user": ghost, "name": "t"}).json()["token"]
    with site.srv.client(tok) as c:
        r = submit(c, "#!/bin/sh\ntrue\n", site.base)
    assert r.status_code == 400, r.text
    body = r.json()
    assert ghost in body["error"] and "no OS account" in body["error"]
    assert f"useradd {ghost}" in body["fix"] and "user_map" in body["fix"]


def test_the_job_token_dies_with_its_job(site: Site) -> None:
    end = site.run("alice", "#!/bin/sh\necho token=$TIDE_JOB_TOKEN\n")
    token = site.output("alice", end["id"]).split("token=", 1)[1].split()[0]
    with site.srv.client(token) as c:
        r = c.post(f"/v1/jobs/{end['id']}/notify", json={"event": "step", "step": 1})
        assert r.status_code in (403, 409), r.text
        assert c.get("/v1/jobs").status_code == 403


# --- single-user mode (no root needed) --------------------------------------


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    d = tmp_path_factory.mktemp("single")
    args = ["--cluster", str(DATA / "tiny.yaml"), "--single-user", "--bf-interval", "1"]
    srv = ServerProc(d / "data", args, per_user=True).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_single_user_mode_takes_only_the_servers_users_jobs(
    single: ServerProc, tmp_path: Path
) -> None:
    me = identity.current().name
    with single.client() as admin:
        tok = admin.post("/v1/tokens", json={"user": "alice", "name": "t"}).json()["token"]
        ok = submit(admin, "#!/bin/sh\nid -u\n", tmp_path)
        assert ok.status_code == 201, ok.text
        end = wait_state(admin, ok.json()["job_id"], FINAL, 120)
        assert end["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{end['id']}.out").read_text().strip() == str(identity.current().uid)
    with single.client(tok) as c:
        r = submit(c, "#!/bin/sh\ntrue\n", tmp_path)
    assert r.status_code == 403, r.text
    body = r.json()
    assert "single-user mode" in body["error"] and me in body["error"] and "alice" in body["error"]
    assert "--any-user" in body["fix"]
    with single.client() as admin:
        shown = admin.get("/v1/cluster").json()["job_users"]
    assert shown == {"mode": "single-user", "server_user": me}
    assert stat.S_IMODE(single.data_dir.stat().st_mode) == 0o700


def test_the_ray_executor_refuses_to_run_jobs_as_their_users(tmp_path: Path) -> None:
    """Ray has no authentication: as root, --executor ray needs --single-user."""
    need_root()
    cmd = [sys.executable, "-m", "tide.server", "--data-dir", str(tmp_path), "--executor", "ray"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    text = " ".join(done.stderr.replace("│", " ").split())
    assert done.returncode == 2, done.stderr
    assert "Ray has no authentication" in text and "--single-user" in text
    assert "Traceback" not in text


def test_an_operator_cannot_run_code_as_another_user(site: Site) -> None:
    """A job for alice runs as alice's OS account: an operator may not submit it
    (Slurm: only root and SlurmUser may use --uid); an administrator may."""
    with site.srv.client() as admin:
        r = admin.post("/v1/users", json={"name": "oscar", "admin_level": "Operator",
                                          "accounts": ["physics"]})  # fmt: skip
        assert r.status_code in (200, 201, 409), r.text
        tok = admin.post("/v1/tokens", json={"user": "oscar", "name": "t"}).json()["token"]
        ok = submit(admin, "#!/bin/sh\nid -u\n", site.work["alice"], user="alice")
        assert ok.status_code == 201, ok.text
        wait_state(admin, ok.json()["job_id"], FINAL, 120)
    with site.srv.client(tok) as c:
        r = submit(c, "#!/bin/sh\nid -u\n", site.work["alice"], user="alice")
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert "only administrators" in error and site.users["alice"].name in error
