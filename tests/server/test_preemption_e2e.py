"""Preemption on a real server with real processes (docs/preemption.md):
QOS preemption with GraceTime (the victim's signal first, the kill only after
the grace, a requeue that runs again), SUSPEND (processes stopped, GPUs held,
resumed after the preemptor), quota reclaim within a cohort, `tide share`,
`tide show job` naming the preemptor and the lost GPU-seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serverproc import DATA, STORES, ServerProc, job, store_args, submit, wait_for, wait_state

pytestmark = pytest.mark.slow
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED"}
GRACE = 3.0  # qos low's GraceTime in data/preempt.yaml


@pytest.fixture(scope="module")
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The preemption server, on SQLite unless a test names the store (on_both_stores)."""
    store = getattr(request, "param", "sqlite")
    d = tmp_path_factory.mktemp(f"preempt-{store}")
    with store_args(store) as db:
        args = ["--cluster", str(DATA / "preempt.yaml"), "--kill-wait", "2", *db]
        s = ServerProc(d / "data", args).start()
        s.work = d / "work"  # type: ignore[attr-defined]
        s.work.mkdir()  # type: ignore[attr-defined]
        try:
            yield s
        finally:
            s.stop()


# the preemption phases live in the job rows: REQUEUE and SUSPEND run on both stores
on_both_stores = pytest.mark.parametrize("srv", STORES, indirect=True)


def _dir(srv: Any, name: str) -> Path:
    d = srv.work / name
    d.mkdir(exist_ok=True)
    return d


def tide(srv: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDE_")}
    env.update(TIDE_URL=srv.url, TIDE_TOKEN=srv.admin_token)
    return subprocess.run([sys.executable, "-m", "tide.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def _event(j: dict[str, Any], text: str) -> dict[str, Any]:
    return next(h for h in j["history"] if text in h["reason"])


# The victim records each signal it gets and each run; its second run (after the
# requeue) ends at once. The loop of short sleeps lets bash run its traps promptly.
VICTIM = """#!/bin/bash
#SBATCH --gpus-per-node=4 --qos=low -A physics -p rq --signal=B:USR1@5
trap 'echo "USR1 $(date +%s.%N)" >> sig-$SLURM_JOB_ID.txt' USR1
trap 'echo "TERM $(date +%s.%N)" >> sig-$SLURM_JOB_ID.txt' TERM
echo "run $SLURM_RESTART_COUNT $(date +%s.%N)" >> runs-$SLURM_JOB_ID.txt
[ "$SLURM_RESTART_COUNT" = 1 ] && exit 0
for i in $(seq 600); do sleep 0.1; done
"""
URGENT = """#!/bin/bash
#SBATCH --gpus-per-node=4 --qos=high -A physics -p rq
echo "urgent $(date +%s.%N)" > urgent-$SLURM_JOB_ID.txt
sleep 2
"""


@on_both_stores
def test_qos_preemption_requeues_after_the_grace(srv: Any) -> None:
    d = _dir(srv, "requeue")
    with srv.client() as c:
        victim = submit(c, VICTIM, d).json()["job_id"]
        wait_state(c, victim, {"RUNNING"})
        wait_for("the victim's first run", lambda: (d / f"runs-{victim}.txt").exists())
        time.sleep(1.0)  # some work to lose
        urgent = submit(c, URGENT, d).json()["job_id"]
        sig = wait_for("the USR1 signal", lambda: _lines(d / f"sig-{victim}.txt", "USR1"))
        j = wait_state(c, victim, {"COMPLETED", "FAILED"}, timeout=60)
        u = wait_state(c, urgent, DONE, timeout=60)
    assert j["state"] == "COMPLETED" and j["restarts"] == 1, j
    assert u["state"] == "COMPLETED", u
    p = j["preemption"]
    assert p["preemptor"] == urgent and p["mode"] == "REQUEUE" and p["count"] == 1
    kill = _event(j, "preempted by job")["time"]
    signalled = float(sig[0].split()[1])
    # the signal came at the decision; the kill only after the grace
    assert kill - p["time"] >= GRACE - 0.05, (kill, p["time"])
    assert kill - p["time"] < GRACE + 2.0
    assert signalled - p["time"] < 1.5
    first = j["attempts"][0]
    assert first["state"] in ("PREEMPTED", "REQUEUED") and first["end"] >= kill
    lost = 4 * (kill - first["start"])  # no checkpoint: everything since the start
    assert p["lost_gpu_seconds"] == pytest.approx(lost, rel=0.05, abs=2.0)
    assert j["lost_gpu_seconds"] == pytest.approx(p["lost_gpu_seconds"])
    # the urgent job started once the victim was gone, and the victim only after it
    assert u["start_time"] >= first["end"] - 0.01
    assert j["attempts"][1]["start"] >= u["start_time"]
    # the requeued victim keeps its priority age: eligible since before its first run
    assert j["phases"]["times"]["eligible"] <= first["start"]
    runs = (d / f"runs-{victim}.txt").read_text().split()
    assert runs[0::3] == ["run", "run"] and runs[1::3] == ["0", "1"]
    print(f"\nREQUEUE: signal after {signalled - p['time']:.2f} s, kill after "
          f"{kill - p['time']:.2f} s (GraceTime {GRACE:.0f} s), urgent started "
          f"{u['start_time'] - p['time']:.2f} s after the decision")  # fmt: skip
    out = tide(srv, "show", "job", str(victim))
    assert out.returncode == 0, out.stderr
    assert f"Preemptor={urgent}" in out.stdout and "PreemptLostGPUSeconds=" in out.stdout
    assert "PreemptReason=REQUEUE" in out.stdout or "PreemptReason=" in out.stdout
    acct = tide(srv, "acct", "-j", str(victim), "--format", "JobID,State,Restarts,Preemptions,"
                "Preemptor,LostGPUSeconds", "-P")  # fmt: skip
    assert acct.returncode == 0, acct.stderr
    assert acct.stdout.splitlines()[1].split("|")[3:5] == ["1", str(urgent)], acct.stdout
    qos = {x.split()[0]: x.split() for x in tide(srv, "admin", "qos", "list").stdout.splitlines()
           if x.strip()}  # fmt: skip
    assert qos["low"][3:5] == ["REQUEUE", "3"] and qos["susp"][3] == "SUSPEND", qos  # no Preempt


def _lines(path: Path, word: str) -> list[str]:
    if not path.exists():
        return []
    return [x for x in path.read_text().splitlines() if x.startswith(word)]


# SUSPEND: the victim takes every core of n2 and 2 of its 4 GPUs; the preemptor
# needs 2 cores and the 2 free GPUs, so only the victim's cores stand in its way.
SLEEPER = """#!/bin/bash
#SBATCH --gpus-per-node=2 --cpus-per-task=4 --qos=susp -A physics -p sus
echo "$$" > pid-$SLURM_JOB_ID.txt
for i in $(seq 80); do sleep 0.1; done
echo "done $(date +%s.%N)" > done-$SLURM_JOB_ID.txt
"""
SHORT = """#!/bin/bash
#SBATCH --gpus-per-node=2 --cpus-per-task=2 --qos=high -A physics -p sus
sleep 3
"""


@on_both_stores
def test_suspend_stops_the_victim_and_resumes_it_after_the_preemptor(srv: Any) -> None:
    d = _dir(srv, "suspend")
    with srv.client() as c:
        victim = submit(c, SLEEPER, d).json()["job_id"]
        wait_state(c, victim, {"RUNNING"})
        pid = int(wait_for("the victim's pid", lambda: _text(d / f"pid-{victim}.txt")))
        held = job(c, victim)["allocation"]["nodes"][0]["gpus"]
        time.sleep(1.0)
        urgent = submit(c, SHORT, d).json()["job_id"]
        wait_state(c, victim, {"SUSPENDED"}, timeout=30)
        assert wait_for("a stopped process", lambda: _proc_state(pid) == "T", timeout=5)
        u = wait_state(c, urgent, {"RUNNING"}, timeout=30)
        mine = u["allocation"]["nodes"][0]["gpus"]
        assert not set(mine) & set(held)  # the victim's GPUs stay held
        assert job(c, victim)["state"] == "SUSPENDED" and _proc_state(pid) == "T"
        node = c.get("/v1/nodes/n2").json()
        u = wait_state(c, urgent, DONE, timeout=30)
        back = wait_state(c, victim, {"RUNNING", "COMPLETED"}, timeout=30)
        j = wait_state(c, victim, DONE, timeout=60)
    assert node["gpus_alloc"] == 4, node  # suspended victim's 2 + the preemptor's 2
    assert u["state"] == "COMPLETED" and j["state"] == "COMPLETED", (u, j)
    assert j["restarts"] == 0 and j["allocation"]["nodes"][0]["gpus"] == held
    p = j["preemption"]
    assert p["preemptor"] == urgent and p["mode"] == "SUSPEND" and p["lost_gpu_seconds"] == 0
    resumed = _event(j, "resumed")["time"]
    assert resumed >= u["end_time"] - 0.01 and p["suspended_seconds"] >= 2.5
    assert back["state"] in ("RUNNING", "COMPLETED")
    print(f"\nSUSPEND: suspended {p['suspended_seconds']:.2f} s, resumed "
          f"{resumed - u['end_time']:.2f} s after the preemptor ended")  # fmt: skip


def _text(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


def _proc_state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


BORROW = """#!/bin/bash
#SBATCH --gpus-per-node=4 --qos=low -A borrower -p quota
trap 'echo "TERM $(date +%s.%N)" >> term-$SLURM_JOB_ID.txt' TERM
for i in $(seq 600); do sleep 0.1; done
"""
LEND = """#!/bin/bash
#SBATCH --gpus-per-node=4 -A lender -p quota
sleep 1
"""


def test_quota_reclaim_returns_the_lenders_gpus_within_the_grace(srv: Any) -> None:
    d = _dir(srv, "quota")
    with srv.client() as c:
        b1 = submit(c, BORROW, d).json()["job_id"]
        wait_state(c, b1, {"RUNNING"})
        b2 = submit(c, BORROW, d).json()["job_id"]  # borrows the lender's idle quota
        wait_state(c, b2, {"RUNNING"})
        rows = {(r["name"], r["kind"]): r for r in c.get("/v1/share").json()["quotas"]}
        assert rows[("borrower", "account")]["in_use"] == 8
        assert rows[("borrower", "account")]["borrowed"] == 4
        assert rows[("lender", "account")]["lent"] == 4
        text = tide(srv, "share", "--quota").stdout.split("\n")
        assert any(x.split()[:7] == ["borrower", "lab", "a100", "4", "8", "4", "0"]
                   for x in text if x.strip()), text  # fmt: skip
        assert any(x.split()[:7] == ["lender", "lab", "a100", "4", "0", "0", "4"]
                   for x in text if x.strip()), text  # fmt: skip
        t0 = time.time()
        lender = submit(c, LEND, d).json()["job_id"]
        lj = wait_state(c, lender, {"RUNNING", "COMPLETED"}, timeout=30)
        victims = [j for j in (job(c, b1), job(c, b2)) if j.get("preemption")]
        assert len(victims) == 1, victims  # one 4-GPU borrower is enough
        v = victims[0]
        assert v["preemption"]["preemptor"] == lender and "borrows" in v["preemption"]["reason"]
        latency = lj["start_time"] - t0
        assert GRACE - 0.5 <= latency <= GRACE + 3.0, latency
        rows = {(r["name"], r["kind"]): r for r in c.get("/v1/share").json()["quotas"]}
        assert rows[("lender", "account")]["in_use"] == 4
        assert rows[("borrower", "account")]["borrowed"] == 0
        # the requeued borrower waits: the cohort has nothing left to lend
        w = wait_for(
            "the requeue",
            lambda: (
                (x := job(c, v["id"]))["state"] == "PENDING"
                and x["reason"] in ("CohortQuota", "Preempted")
                and x
            ),
        )
        assert w["restarts"] == 1
        for jid in (b1, b2, lender):
            c.post(f"/v1/jobs/{jid}/cancel")
    print(f"\nRECLAIM: lender started {latency:.2f} s after its submission "
          f"(GraceTime {GRACE:.0f} s)")  # fmt: skip


# A well-behaved victim: on its signal it "saves" and exits at once, well inside
# its QOS's grace (lowsave: 120 s, so a loaded machine's delays never reach it;
# the victim leaves in well under a second, and the test waits for no grace).
SAVER = """#!/bin/bash
#SBATCH --gpus-per-node=4 --qos=lowsave -A physics -p rq --signal=B:USR1@5
trap 'echo "saved $(date +%s.%N)" >> saved-$SLURM_JOB_ID.txt; exit 0' USR1
echo "run $SLURM_RESTART_COUNT" >> runs-$SLURM_JOB_ID.txt
[ "$SLURM_RESTART_COUNT" = 1 ] && exit 0
for i in $(seq 6000); do sleep 0.1; done
"""
SAVE_GRACE = 120.0


def test_a_victim_that_exits_on_its_signal_is_requeued_not_killed(srv: Any) -> None:
    d = _dir(srv, "saver")
    with srv.client() as c:
        victim = submit(c, SAVER, d).json()["job_id"]
        wait_state(c, victim, {"RUNNING"})
        runs = d / f"runs-{victim}.txt"
        wait_for("the victim's trap", lambda: runs.exists() and runs.read_text(), 60)
        urgent = submit(c, URGENT, d).json()["job_id"]
        u = wait_state(c, urgent, {"RUNNING", "COMPLETED"}, timeout=90)
        j = wait_state(c, victim, {"COMPLETED", "FAILED"}, timeout=90)
    p = j["preemption"]
    assert j["state"] == "COMPLETED" and j["restarts"] == 1 and p["preemptor"] == urgent, j
    assert not [h for h in j["history"] if "preempted by job" in h["reason"]]  # never killed
    first = j["attempts"][0]
    saved = float((d / f"saved-{victim}.txt").read_text().split()[1])
    assert p["time"] <= saved <= first["end"] < p["time"] + SAVE_GRACE  # it left on its signal
    assert first["end"] <= u["start_time"] < p["time"] + SAVE_GRACE  # the preemptor did not wait
    assert p["lost_gpu_seconds"] == pytest.approx(4 * (first["end"] - first["start"]), abs=2.0)
    assert j["attempts"][1]["start"] >= u["start_time"]


def test_a_restarted_controller_kills_the_victim_in_grace_and_requeues_it(srv: Any) -> None:
    """The grace timer lives in the job's row: a controller that stops during the
    grace kills the victim when it is back, and the preemption goes on. The victim
    must have set its traps first (its first run's line): RUNNING comes at the
    launch, and on a loaded machine its USR1 reached the shell before its trap, so
    it died within its grace (0:10) and was requeued, rightly, as never killed."""
    d = _dir(srv, "restart")
    with srv.client() as c:
        victim = submit(c, VICTIM, d).json()["job_id"]
        wait_state(c, victim, {"RUNNING"})
        wait_for("the victim's first run", lambda: (d / f"runs-{victim}.txt").exists())
        urgent = submit(c, URGENT, d).json()["job_id"]
        wait_for("the preemption", lambda: job(c, victim).get("preemption"))
    srv.stop()
    time.sleep(GRACE)  # the grace ends while no controller runs
    srv.start()
    with srv.client() as c:
        u = wait_state(c, urgent, DONE, timeout=60)
        j = wait_state(c, victim, {"COMPLETED", "FAILED"}, timeout=60)
    assert u["state"] == "COMPLETED" and j["state"] == "COMPLETED" and j["restarts"] == 1
    assert _event(j, "preempted by job")["time"] - j["preemption"]["time"] >= GRACE
    assert j["attempts"][1]["start"] >= u["start_time"]
    assert _lines(d / f"sig-{victim}.txt", "USR1")  # it ran through its signal


# PreemptMode=CANCEL, and a job that reports a checkpoint: it loses only the work since.
CHECKPOINTER = """#!/bin/bash
#SBATCH --gpus-per-node=4 --qos=lowc -A physics -p rq
trap '' TERM
sleep 2
PYTHON -m tide.cli.main notify checkpoint 100 && echo "ckpt $(date +%s.%N)" > ckpt.txt
for i in $(seq 600); do sleep 0.1; done
"""


def test_cancel_mode_ends_preempted_and_counts_work_since_the_checkpoint(srv: Any) -> None:
    d = _dir(srv, "cancel")
    with srv.client() as c:
        victim = submit(c, CHECKPOINTER.replace("PYTHON", sys.executable), d).json()["job_id"]
        wait_state(c, victim, {"RUNNING"})
        wait_for("the checkpoint", lambda: (d / "ckpt.txt").exists())
        time.sleep(1.0)
        urgent = submit(c, URGENT, d).json()["job_id"]
        j = wait_state(c, victim, DONE, timeout=60)
        u = wait_state(c, urgent, DONE, timeout=60)
    assert j["state"] == "PREEMPTED" and j["restarts"] == 0 and u["state"] == "COMPLETED", j
    p = j["preemption"]
    assert p["mode"] == "CANCEL" and p["preemptor"] == urgent and p["last_checkpoint"]
    kill = _event(j, "preempted by job")["time"]
    assert kill - p["time"] >= GRACE - 0.05
    # 4 GPUs x (kill - checkpoint): about 4 x 4 s, not 4 x the 6 s since the start
    assert p["lost_gpu_seconds"] == pytest.approx(4 * (kill - p["last_checkpoint"]), abs=2.0)
    assert p["lost_gpu_seconds"] < 4 * (kill - j["start_time"]) - 4.0
