"""The `tide` CLI against a real server: Slurm-shaped output, --json, errors
as one line with a fix (never a traceback), token discovery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from serverproc import wait_state


def tide(
    srv: Any,
    *args: str,
    token: str | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("TIDE_")}
    e["TIDE_URL"] = srv.url
    if token is not None:
        e["TIDE_TOKEN"] = token
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tide.cli.main", *args],
        cwd=cwd,
        env=e,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_token_discovery_from_the_data_dir(tiny: Any) -> None:
    r = tide(tiny, "queue", env={"TIDE_DATA_DIR": str(tiny.data_dir)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:4] == ["JOBID", "PARTITION", "NAME", "USER"]


def test_no_server_is_one_clear_line(tmp_path: Path) -> None:
    class Gone:
        url = "http://127.0.0.1:9"

    r = tide(Gone, "queue", token="x")
    assert r.returncode == 1
    assert r.stderr.startswith("tide: error: cannot reach the tide server at http://127.0.0.1:9")
    assert "Traceback" not in r.stderr and "fix:" in r.stderr


@pytest.mark.slow
def test_sbatch_queue_show_acct_cancel(tiny: Any) -> None:
    d = tiny.work / "cli"
    d.mkdir(exist_ok=True)
    (d / "job.sh").write_text(
        "#!/bin/bash\n#SBATCH -J clijob\n#SBATCH --gpus-per-node=1\necho arg=$1\nsleep 1\n"
    )
    alice = tiny.tokens["alice"]
    r = tide(tiny, "sbatch", "-t", "5", "job.sh", "hello", token=alice, cwd=d)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Submitted batch job ")
    jid = r.stdout.split()[-1]
    r = tide(tiny, "sbatch", "--parsable", "--hold", "job.sh", token=alice, cwd=d)
    held = r.stdout.strip()
    assert held.isdigit(), r.stdout + r.stderr
    q = tide(tiny, "queue", token=alice)
    assert q.returncode == 0
    line = next(x for x in q.stdout.splitlines() if x.split()[0] == held)
    assert "(JobHeldUser)" in line and " PD " in line
    with tiny.client(alice) as c:
        wait_state(c, jid, {"COMPLETED"})
    assert (d / f"slurm-{jid}.out").read_text().strip() == "arg=hello"
    show = tide(tiny, "show", "job", jid, token=alice)
    assert "JobState=COMPLETED" in show.stdout and "AllocGPUs=1" in show.stdout
    acct = tide(
        tiny, "acct", "-j", jid, "--format", "JobID,JobName,State,ExitCode,AllocGPUS", token=alice
    )
    assert acct.stdout.splitlines()[1].split() == [jid, "clijob", "COMPLETED", "0:0", "1"]
    js = json.loads(tide(tiny, "acct", "-j", jid, "--json", token=alice).stdout)
    assert js[0]["gpu_seconds"] > 0
    assert tide(tiny, "cancel", held, token=alice).returncode == 0
    bob = tide(tiny, "cancel", jid, token=tiny.tokens["bob"])
    assert bob.returncode == 1 and "may not cancel" in bob.stderr and "Traceback" not in bob.stderr


def test_sbatch_errors_name_the_option(tiny: Any, tmp_path: Path) -> None:
    (tmp_path / "j.sh").write_text("#!/bin/bash\n#SBATCH --gpus-per-node=9\ntrue\n")
    r = tide(tiny, "sbatch", "j.sh", token=tiny.tokens["alice"], cwd=tmp_path)
    assert r.returncode == 1
    assert "9 GPUs per node requested" in r.stderr and "fix:" in r.stderr
    r = tide(tiny, "sbatch", "--time=zz", "j.sh", token=tiny.tokens["alice"], cwd=tmp_path)
    assert r.returncode == 1 and "--time=zz" in r.stderr
    r = tide(tiny, "sbatch", "missing.sh", token=tiny.tokens["alice"], cwd=tmp_path)
    assert r.returncode == 1 and "unable to open file missing.sh" in r.stderr.lower()
    r = tide(
        tiny, "sbatch", "--wrap", "echo hi", "-p", "cpu", token=tiny.tokens["alice"], cwd=tmp_path
    )
    assert r.returncode == 0 and r.stdout.startswith("Submitted batch job"), r.stderr


def test_nodes_share_prio_report_admin(tiny: Any) -> None:
    admin = tiny.admin_token
    nodes = tide(tiny, "nodes", token=admin).stdout
    assert nodes.splitlines()[0].split()[:3] == ["PARTITION", "AVAIL", "TIMELIMIT"]
    assert "gpu*" in nodes and "g[1-2]" in nodes
    sw = tide(tiny, "nodes", "--switch", token=admin).stdout
    assert "spine/leafa" in sw and "spine/leafb" in sw
    assert "Account" in tide(tiny, "share", token=admin).stdout
    assert tide(tiny, "prio", token=admin).returncode == 0
    rep = tide(tiny, "report", "-S", "now-1day", token=admin)
    assert rep.returncode == 0 and "TOTAL" in rep.stdout
    r = tide(
        tiny,
        "admin",
        "account",
        "add",
        "astro",
        "--fairshare",
        "5",
        "GrpTRES=gres/gpu=8",
        "MaxJobs=3",
        token=admin,
    )
    assert r.returncode == 0, r.stderr
    listed = json.loads(tide(tiny, "admin", "account", "list", "--json", token=admin).stdout)
    astro = next(a for a in listed if a["name"] == "astro")
    assert astro["limits"] == {"grp_tres": {"gres/gpu": 8}, "max_jobs": 3}
    bad = tide(tiny, "admin", "account", "add", "x", "GrpGPUs=3", token=admin)
    assert bad.returncode == 1 and "not a limit" in bad.stderr
    ghost = tide(tiny, "admin", "token", "create", "dora", token=admin)
    assert ghost.returncode == 1 and "user dora not found" in ghost.stderr  # create dora first
    r = tide(tiny, "admin", "user", "add", "dora", "--account", "astro", token=admin)
    assert r.returncode == 0, r.stderr
    t = tide(tiny, "admin", "token", "create", "dora", token=admin).stdout.strip()
    assert t.startswith("tide_")
    assert tide(tiny, "queue", token=t).returncode == 0
    r = tide(tiny, "node", "drain", "c1", "--reason", "cli test", token=admin)
    assert "c1: DRAIN" in r.stdout, r.stdout + r.stderr
    assert tide(tiny, "node", "resume", "c1", token=admin).returncode == 0
    user = tide(tiny, "node", "drain", "c1", "--reason", "x", token=tiny.tokens["bob"])
    assert user.returncode == 1 and "not an operator" in user.stderr


def test_every_command_has_an_example() -> None:
    from typer.main import get_command

    from tide.cli.main import app

    def walk(cmd: Any, path: str) -> list[tuple[str, str]]:
        subs = getattr(cmd, "commands", None)
        if subs:
            return [x for n, c in subs.items() for x in walk(c, f"{path} {n}")]
        return [(path, cmd.help or "")]

    mine = (
        "sbatch",
        "submit",
        "queue",
        "cancel",
        "hold",
        "release",
        "requeue",
        "update",
        "acct",
        "report",
        "share",
        "prio",
        "nodes",
        "show",
        "node",
        "notify",
        "admin",
        "server",
    )
    for path, text in walk(get_command(app), "tide"):
        if path.split()[1] in mine:
            assert "Example: tide" in text or "Example: srun" in text, path
