"""The local executor, as root, runs a job as its OS user (tide.exec.identity):
uid, primary and supplementary groups, HOME/USER/LOGNAME, umask, output files
opened as that user; the job directory is theirs, and what they write there
cannot steer the root executor. Real users (useradd); skipped unless root."""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from exec_support import Runner, make_spec

from osusers import need_root, os_group, os_user, run_as, shared_dir
from tide.exec import identity, jobdir, procs
from tide.exec.local import LocalExecutor


@pytest.fixture
def spool() -> Iterator[Path]:
    need_root()
    d = shared_dir("tide-spool-")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _runner(spool: Path, ident: identity.Identity) -> Runner:
    work = spool / "work"
    work.mkdir(mode=0o700)
    identity.own(work, ident)
    return Runner(LocalExecutor(spool / "state", kill_wait=2.0), work)


def test_job_runs_as_its_user_with_groups_home_and_umask(spool: Path) -> None:
    with os_group() as extra, os_user(groups=(extra,)) as u:
        r = _runner(spool, u)
        script = (
            "#!/bin/sh\n"
            "echo uid=$(id -u) gid=$(id -g) groups=$(id -Gn)\n"
            "echo home=$HOME user=$USER logname=$LOGNAME umask=$(umask)\n"
            "srun sh -c 'echo step_uid=$(id -u)'\n"
            "touch made_by_job\n"
        )
        r.launch(1, script, os_user=u.name, env={"PATH": "/usr/bin:/bin", "HOME": "/root",
                                                  "USER": "root", "SLURM_UMASK": "0027"})
        rep = r.wait(1, timeout=60)
        out = r.read("slurm-1.out")
        assert rep.exit_code == 0, out
        assert f"uid={u.uid} gid={u.gid}" in out
        assert extra in out.split("groups=")[1].split()
        assert f"home={u.home} user={u.name} logname={u.name} umask=0027" in out
        assert f"step_uid={u.uid}" in out
        made = os.stat(r.workdir / "made_by_job")
        assert made.st_uid == u.uid and stat.S_IMODE(made.st_mode) == 0o640
        assert os.stat(r.workdir / "slurm-1.out").st_uid == u.uid


def test_output_where_the_user_cannot_write_fails_cleanly(spool: Path) -> None:
    private = spool / "root-only"
    private.mkdir(mode=0o700)
    victim = private / "file"
    victim.write_text("root's\n")
    victim.chmod(0o600)
    with os_user() as u:
        r = _runner(spool, u)
        r.launch(2, "#!/bin/sh\necho hi\n", os_user=u.name, output=str(victim))
        rep = r.wait(2, timeout=60)
        rec = r.ex.exit_record(2)
        assert rep.exit_code != 0 and rec is not None
        assert f"Could not open stdout file {victim}: Permission denied" in rec.message
        assert u.name in rec.message
        assert victim.read_text() == "root's\n"  # never truncated nor written


def test_unknown_os_user_is_refused_at_launch(spool: Path) -> None:
    ex = LocalExecutor(spool / "state")
    spec = make_spec(spool, 3, "#!/bin/sh\ntrue\n", os_user="tide-no-such-user-x")
    with pytest.raises(RuntimeError, match="no OS user 'tide-no-such-user-x'"):
        ex.launch(spec)


def test_what_the_user_writes_in_the_job_dir_cannot_steer_root(spool: Path) -> None:
    """The job owns its directory; what it plants there does not make root read
    through a link, block on a FIFO, write through a link, signal a process of
    someone else's, or record the end of another job."""
    with os_user() as u:
        r = _runner(spool, u)
        marker = r.workdir / "go"
        r.launch(4, f"#!/bin/sh\nwhile [ ! -e {marker} ]; do sleep 0.1; done\n", os_user=u.name)
        d = r.ex.job_dir(4)
        deadline = time.monotonic() + 60
        while r.ex.supervisor_pid(4) is None:
            assert time.monotonic() < deadline, (d / jobdir.LOG).read_text()
            time.sleep(0.05)
        assert os.stat(d).st_uid == u.uid and stat.S_IMODE(os.stat(d).st_mode) == 0o700
        private = spool / "private"
        private.mkdir(mode=0o700)
        secret = private / "exit.json"
        secret.write_text('{"job_id": 4, "exit_code": 7, "message": "root secret"}')
        # a link where root reads: not followed, the job is not over
        os.symlink(secret, d / jobdir.EXIT)
        assert r.ex.poll() == [] and r.ex.exit_record(4) is None
        os.unlink(d / jobdir.EXIT)
        # an exit record of the user's while the supervisor runs is no end: the job's
        # resources would be freed while its processes ran on
        jobdir.write_json_atomic(d / jobdir.EXIT, {"job_id": 4, "exit_code": 0})
        assert r.ex.poll() == [] and r.ex.running() == {4}
        os.unlink(d / jobdir.EXIT)
        # a FIFO where root reads step records: skipped, nothing blocks
        (d / jobdir.STEPS).mkdir(exist_ok=True)
        os.mkfifo(d / jobdir.STEPS / "0.json")
        assert jobdir.read_steps(d) == []
        # a rewritten spec.json does not move the job to another node for root (fencing)
        spec = jobdir.read_json(d / jobdir.SPEC) or {}
        spec["nodes"][0]["node"], spec["restart_count"] = "elsewhere", 9
        jobdir.write_json_atomic(d / jobdir.SPEC, spec)
        mine = r.ex.launched_spec(4)
        assert [n.node for n in mine.nodes] == ["node01"] and mine.restart_count == 0
        # a pid file naming a process of root's: not the supervisor, never signalled
        real = jobdir.read_pid(d / jobdir.PIDFILE)
        jobdir.write_pid(d / jobdir.PIDFILE, os.getpid())
        assert r.ex.supervisor_pid(4) is None
        jobdir.write_pid(d / jobdir.PIDFILE, real or 0)
        # requests/ as a link to a root-only folder: root writes nothing there
        shutil.rmtree(d / jobdir.REQUESTS, ignore_errors=True)
        os.symlink(private, d / jobdir.REQUESTS)
        with pytest.raises(RuntimeError, match="cannot reach its supervisor"):
            r.ex.set_time_limit(4, 600)
        assert sorted(os.listdir(private)) == ["exit.json"]
        os.unlink(d / jobdir.REQUESTS)
        marker.touch()
        rep = r.wait(4, timeout=60)
        assert rep.job_id == 4 and rep.exit_code == 0
        # a forged exit record is its own job's, with wrong types dropped
        jobdir.write_json_atomic(d / jobdir.EXIT, {"job_id": 99, "exit_code": "x", "ended": "y"})
        rec = jobdir.read_exit(d)
        assert rec is not None and rec.job_id == 4 and rec.exit_code == 0 and rec.ended is None


def test_cancel_ends_a_job_whose_user_broke_its_request_folder(spool: Path) -> None:
    with os_user() as u:
        r = _runner(spool, u)
        r.launch(5, "#!/bin/sh\nsleep 300\n", os_user=u.name)
        d = r.ex.job_dir(5)
        deadline = time.monotonic() + 60
        while r.ex.supervisor_pid(5) is None:
            assert time.monotonic() < deadline, (d / jobdir.LOG).read_text()
            time.sleep(0.05)
        shutil.rmtree(d / jobdir.REQUESTS, ignore_errors=True)
        (d / jobdir.REQUESTS).write_text("not a folder")
        r.ex.cancel(5, grace=1)
        rep = r.wait(5, timeout=60)
        assert rep.reason == "cancelled"


@pytest.mark.parametrize("how", ["cancel", "time limit"])
def test_a_job_whose_user_stopped_its_supervisor_still_ends(spool: Path, how: str) -> None:
    """The supervisor is the user's: SIGSTOP keeps it from ending the job, so the
    executor does, as root, a backstop after the grace (cancel) or the limit."""
    with os_user() as u:
        work = spool / "work"
        work.mkdir(mode=0o700)
        identity.own(work, u)
        r = Runner(LocalExecutor(spool / "state", kill_wait=1.0, backstop=1.0), work)
        limit = {"time_limit": 3} if how == "time limit" else {}
        r.launch(6, "#!/bin/sh\nsleep 300\n", os_user=u.name, **limit)
        deadline = time.monotonic() + 60
        while (pid := r.ex.supervisor_pid(6)) is None or not (work / "slurm-6.out").exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert run_as(u, ["kill", "-STOP", str(pid)]).returncode == 0
        if how == "cancel":
            r.ex.cancel(6, grace=1)
        rep = r.wait(6, timeout=60)
        assert rep.reason == ("cancelled" if how == "cancel" else "timeout")
        rec = r.ex.exit_record(6)
        assert rec is not None and "the executor ended it" in rec.message
        deadline = time.monotonic() + 30  # SIGKILLed, then reaped by init
        while left := [p for p in procs.process_table().values()
                       if procs.owner(p.pid) == u.uid and not p.zombie]:  # fmt: skip
            assert time.monotonic() < deadline, f"left running: {left}"
            time.sleep(0.1)


def test_a_readopted_job_gets_its_limit_from_the_controller_not_its_directory(
    spool: Path,
) -> None:
    """After a controller restart the limit comes from the store (watch_limit): the
    job's user may have rewritten spec.json, and may have stopped the supervisor."""
    with os_user() as u:
        work = spool / "work"
        work.mkdir(mode=0o700)
        identity.own(work, u)
        first = Runner(LocalExecutor(spool / "state", kill_wait=1.0, backstop=1.0), work)
        first.launch(7, "#!/bin/sh\nsleep 300\n", os_user=u.name, time_limit=3)
        deadline = time.monotonic() + 60
        while (pid := first.ex.supervisor_pid(7)) is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert run_as(u, ["kill", "-STOP", str(pid)]).returncode == 0
        started = time.time()
        again = Runner(LocalExecutor(spool / "state", kill_wait=1.0, backstop=1.0), work)
        assert again.ex.running() == {7}
        again.ex.watch_limit(7, started, 3)
        rep = again.wait(7, timeout=60)
        assert rep.reason == "timeout"


def test_a_forged_end_time_is_kept_after_the_job_was_last_seen_running(spool: Path) -> None:
    """exit.json is the user's: an end time before the job was last seen running
    (to be charged less) is moved up to that moment, and never past now."""
    with os_user() as u:
        r = _runner(spool, u)
        marker = r.workdir / "go"
        r.launch(8, f"#!/bin/sh\nwhile [ ! -e {marker} ]; do sleep 0.1; done\n", os_user=u.name)
        d = r.ex.job_dir(8)
        deadline = time.monotonic() + 60
        while r.ex.supervisor_pid(8) is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert r.ex.poll() == []  # seen running now
        seen = time.time()
        marker.touch()
        while not (d / jobdir.EXIT).exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        forged = jobdir.read_json(d / jobdir.EXIT) or {}
        jobdir.write_json_atomic(d / jobdir.EXIT, {**forged, "ended": 1000.0})
        rep = r.wait(8, timeout=60)
        rec = r.ex.exit_record(8)
        assert rep.exit_code == 0 and rec is not None and rec.ended is not None
        assert seen - 1 <= rec.ended <= time.time()
