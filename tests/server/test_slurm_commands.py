"""Slurm's commands (tide.slurm) against a real tide server and real processes:
what sbatch does itself (--parsable, --test-only, --wait), srun outside a job,
salloc, scontrol's verbs, scancel's filters, and the shims (issue 15, item 2)."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from serverproc import ServerProc, job, wait_for

pytestmark = pytest.mark.slow

CLUSTER = """\
name: cli
nodes:
- names: n[1-3]
  cpus: 8
  sockets: 1
  cores_per_socket: 8
  real_memory: 16000
  gpus: {count: 2, type: t4}
partitions:
- name: gpu
  nodes: n[1-3]
  default: true
  max_time: 1h
scheduler:
  bf_interval: 1s
"""


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    tmp = tmp_path_factory.mktemp("slurmcmds")
    (tmp / "cluster.yaml").write_text(CLUSTER)
    s = ServerProc(tmp / "data", ["--cluster", str(tmp / "cluster.yaml")]).start()
    s.work = tmp  # type: ignore[attr-defined]
    yield s
    s.stop()


def slurm(
    srv: ServerProc, *argv: str, timeout: float = 120, token: str = "", stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TIDE_URL": srv.url, "TIDE_TOKEN": token or srv.admin_token}
    for k in [k for k in env if k.startswith("SLURM_") or k == "TIDE_JOB_DIR"]:
        del env[k]
    cmd = [sys.executable, "-m", "tide.slurm", *argv]
    cwd = srv.work  # type: ignore[attr-defined]
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          input=stdin)  # fmt: skip


def test_parsable_prints_the_id_alone_and_stores_no_warning(srv: ServerProc) -> None:
    done = slurm(srv, "sbatch", "--parsable", "-n1", "--wrap", "true")
    assert done.returncode == 0 and done.stdout.strip().isdigit(), done.stderr
    with srv.client() as c:
        assert job(c, done.stdout.strip())["warnings"] == []


def test_test_only_submits_nothing_and_says_when(srv: ServerProc) -> None:
    with srv.client() as c:
        before = c.get("/v1/jobs", params={"all": "true"}).json()["jobs"]
        done = slurm(srv, "sbatch", "--test-only", "-N2", "--gpus-per-node=2", "--wrap", "true")
        after = c.get("/v1/jobs", params={"all": "true"}).json()["jobs"]
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert "to start at" in done.stderr and "in partition gpu" in done.stderr, done.stderr
    assert len(after) == len(before)


def test_wait_returns_the_jobs_exit_code(srv: ServerProc) -> None:
    done = slurm(srv, "sbatch", "--wait", "-n1", "--wrap", "exit 7")
    assert done.returncode == 7, done.stderr
    assert done.stdout.startswith("Submitted batch job ")
    ok = slurm(srv, "sbatch", "-W", "--array=0-2", "-n1", "--wrap", "exit 0")
    assert ok.returncode == 0, ok.stderr


def test_srun_outside_a_job_allocates_runs_each_rank_on_its_node_and_releases(
    srv: ServerProc,
) -> None:
    done = slurm(srv, "srun", "-N2", "-n4", "-l", "hostname")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split("\n")[:-1]) == ["0: n1", "1: n1", "2: n2", "3: n2"]
    # as Slurm's srun: nothing about the allocation unless it had to wait for it
    assert "Granted" not in done.stderr and "Relinquishing" not in done.stderr, done.stderr
    with srv.client() as c:
        jid = max(j["id"] for j in c.get("/v1/jobs", params={"all": "true"}).json()["jobs"])
        wait_for("the allocation's end", lambda: job(c, jid)["state"] == "CANCELLED", 30)
    assert slurm(srv, "srun", "-n1", "sh", "-c", "exit 3").returncode == 3
    fed = slurm(srv, "srun", "-n2", "-l", "cat", stdin="to rank 0\n")  # stdin: task 0, as Slurm
    assert fed.returncode == 0 and fed.stdout == "0: to rank 0\n", fed.stderr


def test_salloc_runs_a_command_with_the_allocation_and_srun_inside(srv: ServerProc) -> None:
    script = 'echo "$SLURM_JOB_NUM_NODES $SLURM_JOB_NODELIST"; srun -l hostname'
    done = slurm(srv, "salloc", "-N2", "--ntasks-per-node=1", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    assert "salloc: Granted job allocation" in done.stderr and "Relinquishing" in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "2 n[1-2]" and sorted(lines[1:]) == ["0: n1", "1: n2"]


def test_scontrol_verbs_and_hostnames(srv: ServerProc) -> None:
    jid = slurm(srv, "sbatch", "--parsable", "-H", "-n1", "--wrap", "sleep 60").stdout.strip()
    assert slurm(srv, "scontrol", "show", "hostnames", "n[1-3],x7").stdout == "n1\nn2\nn3\nx7\n"
    assert slurm(srv, "scontrol", "update", f"JobId={jid}", "TimeLimit=5:00").returncode == 0
    shown = slurm(srv, "scontrol", "show", "job", jid).stdout
    assert f"JobId={jid} JobName=wrap" in shown and "TimeLimit=00:05:00" in shown
    assert "JobState=PENDING Reason=JobHeldUser" in shown, shown
    assert f"StdOut={srv.work}/slurm-{jid}.out" in shown, shown  # type: ignore[attr-defined]
    assert slurm(srv, "scontrol", "release", jid).returncode == 0
    with srv.client() as c:
        wait_for("the release", lambda: job(c, jid)["reason"] != "JobHeldUser", 30)
    done = slurm(srv, "scancel", "-n", "wrap", "-t", "PENDING,RUNNING")
    assert done.returncode == 0, done.stderr
    with srv.client() as c:
        wait_for("the cancel", lambda: job(c, jid)["state"] == "CANCELLED", 30)
        admin = c.get("/v1/whoami").json()["user"]
    try:  # sacct names who cancelled by uid, as Slurm's ("CANCELLED by 0")
        by = str(pwd.getpwnam(admin).pw_uid)
    except KeyError:
        by = admin
    state = slurm(srv, "sacct", "-X", "-n", "-P", "-j", jid, "-o", "State").stdout
    assert state == f"CANCELLED by {by}\n", state
    bad = slurm(srv, "scontrol", "update", f"JobId={jid}", "Colour=red")
    assert bad.returncode == 1 and "not supported: colour=red" in bad.stderr
    node = slurm(srv, "scontrol", "show", "node", "n2").stdout
    assert node.startswith("NodeName=n2 ") and "Gres=gpu:t4:2" in node and "{" not in node


def _proc_state(pid: int) -> str:
    """The process's state letter (T: stopped), "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def test_scontrol_suspend_stops_the_job_and_resume_goes_on(srv: ServerProc) -> None:
    """Operators only, as Slurm: SIGSTOP to the job (SUSPENDED), SIGCONT on resume
    (RUNNING); a user may do neither, and only a suspended job resumes."""
    pidfile = srv.work / "suspended.pid"  # type: ignore[attr-defined]
    script = f"echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; exec sleep 300"
    jid = slurm(srv, "sbatch", "--parsable", "-n1", "-t", "10", "--wrap", script).stdout.strip()
    pid = int(wait_for("the job's pid", lambda: pidfile.exists() and pidfile.read_text(), 60))
    not_yet = slurm(srv, "scontrol", "resume", jid)
    assert not_yet.returncode == 1 and "only jobs stopped by `scontrol suspend`" in not_yet.stderr
    with srv.client() as c:
        c.post("/v1/users", json={"name": "ursula"}).raise_for_status()
        r = c.post("/v1/tokens", json={"user": "ursula", "name": "test"})
        user = r.raise_for_status().json()["token"]
        denied = slurm(srv, "scontrol", "suspend", jid, token=user)
        assert denied.returncode == 1 and "only operators may suspend" in denied.stderr
        assert slurm(srv, "scontrol", "suspend", jid).returncode == 0
        wait_for("SUSPENDED", lambda: job(c, jid)["state"] == "SUSPENDED", 30)
        wait_for("the stopped process", lambda: _proc_state(pid) == "T", 30)
        assert "JobState=SUSPENDED" in slurm(srv, "scontrol", "show", "job", jid).stdout
        done = slurm(srv, "scontrol", "resume", jid)
        assert done.returncode == 0, done.stderr
        wait_for("RUNNING again", lambda: job(c, jid)["state"] == "RUNNING", 30)
        wait_for("the process going on", lambda: _proc_state(pid) in ("S", "R"), 30)
        assert slurm(srv, "scancel", jid).returncode == 0
        wait_for("the cancel", lambda: job(c, jid)["state"] == "CANCELLED", 60)


def test_bad_command_lines_are_one_line_errors(srv: ServerProc) -> None:
    done = slurm(srv, "squeue", "--colour")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "squeue: unrecognized option '--colour'"
    done = slurm(srv, "sacct", "-o", "JobID,Nope")
    assert done.stderr.startswith('sacct: Invalid field requested: "Nope"')
    done = slurm(srv, "squeue", "-j", "987654")  # no such job: Slurm's error, rc 1
    assert done.returncode == 1
    assert done.stderr == "slurm_load_jobs error: Invalid job id specified\n"


def test_shims_never_shadow_a_real_slurm_unless_forced(tmp_path: Path) -> None:
    fake = tmp_path / "real"
    fake.mkdir()
    (fake / "squeue").write_text("#!/bin/sh\necho real\n")
    (fake / "squeue").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "tide.cli.main", "shims", "install", str(tmp_path / "bin")]
    refused = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert refused.returncode == 1 and "a real Slurm is on PATH" in refused.stderr
    assert not (tmp_path / "bin").exists()
    forced = subprocess.run([*cmd, "--force"], env=env, capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr
    shim = tmp_path / "bin" / "scontrol"
    out = subprocess.run([str(shim), "show", "hostnames", "a[1-2]"], capture_output=True, text=True)
    assert out.stdout == "a1\na2\n", out.stderr


def test_tide_show_node_and_partition_are_scontrols_records(srv: ServerProc) -> None:
    env = {**os.environ, "TIDE_URL": srv.url, "TIDE_TOKEN": srv.admin_token}
    shown = (("node", "n1", "NodeName=n1 "), ("partition", "gpu", "PartitionName=gpu"))
    for what, name, key in shown:
        cmd = [sys.executable, "-m", "tide.cli.main", "show", what, name]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60).stdout
        assert out.startswith(key), out
        assert "['" not in out and "{'" not in out and "None" not in out  # no Python reprs
