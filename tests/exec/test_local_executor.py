"""The local executor with real processes: environment, outputs, srun across
virtual nodes, signals, time limits, cancel, gang teardown, controller restart."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from exec_support import PY, Runner, make_executor, node, wait_for_files

from tide.exec import jobdir, procs


def _env_dump(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _gone(pid: int, within: float = 5.0) -> bool:
    """The process has exited, or does within `within` seconds (a loaded
    2-core CI machine can be slow to reap what SIGKILL already ended)."""
    deadline = time.monotonic() + within
    while procs.is_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_batch_script_sees_slurm_environment(runner: Runner) -> None:
    nodes = [node("node01", (0, 1), (0,), 2), node("node02", (2, 3), (1,), 2)]
    script = "#!/bin/bash\nenv\necho SRUN=$(command -v srun)\n"
    env = {"PATH": "/usr/bin:/bin", "FOO": "bar", "SLURM_PROCID": "9"}
    runner.launch(101, script, nodes=nodes, env=env, restart_count=2, cpus_per_task=1,
                  ntasks_per_node=2)  # fmt: skip
    report = runner.wait(101)
    assert (report.exit_code, report.signal, report.reason) == (0, 0, "")
    job_dir = runner.ex.job_dir(101)
    env_seen = _env_dump(runner.read("slurm-101.out"))
    expected = {
        "SLURM_JOB_ID": "101",
        "SLURM_JOBID": "101",
        "SLURM_JOB_NAME": "job101",
        "SLURM_JOB_NODELIST": "node[01-02]",
        "SLURM_NODELIST": "node[01-02]",
        "SLURM_NNODES": "2",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NTASKS": "4",
        "SLURM_NPROCS": "4",
        "SLURM_NTASKS_PER_NODE": "2",
        "SLURM_CPUS_PER_TASK": "1",
        "SLURM_CPUS_ON_NODE": "1",
        "SLURM_GPUS_ON_NODE": "2",
        "SLURM_JOB_GPUS": "0,1",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "SLURM_JOB_ACCOUNT": "physics",
        "SLURM_JOB_PARTITION": "gpu",
        "SLURM_SUBMIT_DIR": str(runner.workdir),
        "SLURM_JOB_USER": "alice",
        "SLURM_JOB_UID": str(os.getuid()),
        "SLURM_RESTART_COUNT": "2",
        "TIDE_RESTART_COUNT": "2",
        "SLURMD_NODENAME": "node01",
        "SLURM_TOPOLOGY_ADDR": "node01",
        "SLURM_CLUSTER_NAME": "testcluster",
        "SLURM_PROCID": "0",
        "TIDE_JOB_DIR": str(job_dir),
        "FOO": "bar",
        "SRUN": str(job_dir / "bin" / "srun"),
        "PATH": f"{job_dir / 'bin'}:/usr/bin:/bin",
    }
    assert {k: env_seen.get(k) for k in expected} == expected
    assert Path(env_seen["TIDE_CHECKPOINT_DIR"]).is_dir()
    assert "SLURM_ARRAY_TASK_ID" not in env_seen
    rec = runner.ex.exit_record(101)
    assert rec is not None and rec.started is not None and rec.ended is not None
    assert rec.started <= rec.ended and rec.exit_code_str == "0:0"


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_batch_script_is_pinned_to_its_cores(runner: Runner) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    runner.launch(102, "#!/bin/sh\ngrep Cpus_allowed_list /proc/self/status\n",
                  nodes=[node("node01", cores=(1,))])  # fmt: skip
    runner.wait(102)
    want = cpus[1 % len(cpus)]
    assert runner.read("slurm-102.out").split()[-1] == str(want)


def test_output_patterns(runner: Runner) -> None:
    (runner.workdir / "logs").mkdir()
    echo = "#!/bin/sh\necho out-line\necho err-line >&2\necho CVD=[$CUDA_VISIBLE_DEVICES]\n"
    array = echo + "echo ARRAY=$SLURM_ARRAY_JOB_ID/$SLURM_ARRAY_TASK_ID\n"
    runner.launch(201, array, name="arr", array_job_id=200, array_task_id=3)
    runner.launch(202, echo, name="pat", output="logs/%x-%j-%u-%N-%%.out",
                  error=str(runner.workdir / "logs" / "%x-%4j.err"))  # fmt: skip
    runner.launch(203, echo, output="missing/x.out")
    for job in (201, 202, 203):
        runner.wait(job)
    merged = runner.read("slurm-200_3.out")
    assert "out-line" in merged and "err-line" in merged
    assert "CVD=[]" in merged and "ARRAY=200/3" in merged
    assert runner.read("logs/pat-202-alice-node01-%.out").split()[0] == "out-line"
    assert runner.read("logs/pat-0202.err").strip() == "err-line"
    assert runner.seen[203].exit_code == 1
    rec = runner.ex.exit_record(203)
    assert rec is not None and "missing/x.out" in rec.message


RENDEZVOUS = """
import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
dev = os.environ["CUDA_VISIBLE_DEVICES"]
if rank == 0:
    srv = socket.create_server((addr, port))
    got = [f"0:{dev}"]
    for _ in range(world - 1):
        conn, _ = srv.accept()
        got.append(conn.makefile().readline().strip())
    print("world", " ".join(sorted(got)))
else:
    for _ in range(200):
        try:
            with socket.create_connection((addr, port)) as c:
                c.sendall(f"{rank}:{dev}\\n".encode())
            break
        except OSError:
            time.sleep(0.05)
    print("sent", rank)
"""

TASK_VARS = (
    "SLURMD_NODENAME SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_STEP_ID SLURM_STEP_NUM_TASKS "
    "SLURM_STEP_NODELIST RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE GROUP_RANK NODE_RANK "
    "MASTER_ADDR MASTER_PORT CUDA_VISIBLE_DEVICES"
)


def test_srun_runs_tasks_on_both_virtual_nodes(runner: Runner) -> None:
    (runner.workdir / "rdv.py").write_text(RENDEZVOUS)
    show = " ".join(f"${v}" for v in TASK_VARS.split())
    script = f"""#!/bin/bash
srun -l bash -c 'echo {show}'
srun --gpus-per-task=1 -o 'task-%t.out' {PY} rdv.py
srun -N1 -n1 bash -c 'echo one $SLURM_STEP_ID $SLURM_STEP_NUM_NODES'
"""
    nodes = [node("node01", (0, 1), (0,), 2), node("node02", (2, 3), (1,), 2)]
    runner.launch(301, script, nodes=nodes)
    report = runner.wait(301)
    out = runner.read("slurm-301.out")
    assert report.exit_code == 0, out
    port = (jobdir.read_json(runner.ex.job_dir(301) / jobdir.RUNTIME) or {})["master_port"]
    labelled = sorted(line for line in out.splitlines() if line[:3] in {"0: ", "1: ", "2: ", "3: "})
    want = []
    for rank in range(4):
        nid, local = divmod(rank, 2)
        name, gpus = ("node01", "0,1") if nid == 0 else ("node02", "2,3")
        want.append(
            f"{rank}: {name} {rank} {local} {nid} 0 4 node[01-02] "
            f"{rank} {local} 4 2 {nid} {nid} 127.0.0.1 {port} {gpus}"
        )
    assert labelled == want
    assert runner.read("task-0.out").strip() == "world 0:0 1:1 2:2 3:3"
    assert runner.read("task-3.out").strip() == "sent 3"
    assert "one 2 1" in out
    rec = runner.ex.exit_record(301)
    assert rec is not None and rec.tasks_running is not None
    assert rec.started is not None and rec.ended is not None
    assert rec.started <= rec.tasks_running <= rec.ended


def test_failed_task_tears_down_its_hung_sibling(runner: Runner) -> None:
    # Rank 0 ignores SIGTERM (as a rank stuck in a collective might): SIGKILL must follow.
    script = """#!/bin/bash
srun -N2 -n2 sh -c 'if [ "$SLURM_PROCID" = 1 ]; then sleep 0.3; exit 3; fi
trap "" TERM; exec sleep 60'
rc=$?
echo "srun=$rc"
exit $rc
"""
    t0 = time.monotonic()
    runner.launch(601, script, nodes=[node("node01"), node("node02")])
    report = runner.wait(601)
    assert time.monotonic() - t0 < 40  # SIGKILL after the step grace, not rank 0's 60 s
    out = runner.read("slurm-601.out")
    # the gang teardown also ends the script: whether it printed srun=3 first is a race
    assert "node02: task 1: exited with exit code 3" in out
    assert (report.exit_code, report.node) == (3, "node02")


def test_exit_status_by_signal_and_leftovers_are_ended(runner: Runner) -> None:
    runner.launch(701, "#!/bin/bash\nkill -9 $$\n")
    leftover = "#!/bin/bash\nsleep 300 &\necho $! > bg.pid\nexit 0\n"
    runner.launch(702, leftover)
    r701, r702 = runner.wait(701), runner.wait(702)
    assert (r701.exit_code, r701.signal) == (0, signal.SIGKILL)
    rec = runner.ex.exit_record(701)
    assert rec is not None and rec.exit_code_str == "0:9"
    assert (r702.exit_code, r702.signal, r702.reason) == (0, 0, "")
    assert _gone(int(runner.read("bg.pid")))


@pytest.mark.slow
def test_signal_before_time_limit_then_timeout(runner: Runner) -> None:
    """--signal's warning `lead` seconds before the limit, SIGTERM at the limit
    (reason timeout): B: warns the batch shell only, a plain signal the steps only.
    The limit is set (scontrol update TimeLimit) once both jobs can take the
    signal, and only the order of events is checked: a slow start on a loaded
    machine can neither make the warning arrive before the trap is set nor fail
    the test by a late clock."""
    shell_trap = """#!/bin/bash
trap 'date +%s.%N >> usr1-batch.txt' USR1
echo ready > ready-401.txt
while true; do sleep 0.1; done
"""
    handler = runner.workdir / "handler.py"
    handler.write_text(
        "import signal, time\n"
        "def got(*_):\n"
        "    open('usr1-task.txt', 'a').write(f'{time.time()}\\n')\n"
        "signal.signal(signal.SIGUSR1, got)\n"
        "open('ready-402.txt', 'w').write('ready')\n"
        "while True:\n    time.sleep(0.05)\n"
    )
    lead = 2
    runner.launch(401, shell_trap, time_limit=600, signal="B:USR1", signal_lead=lead)
    runner.launch(402, f"#!/bin/bash\nsrun {PY} handler.py\n", time_limit=600, signal="USR1",
                  signal_lead=lead)  # fmt: skip
    wait_for_files([runner.workdir / "ready-401.txt", runner.workdir / "ready-402.txt"], 120)
    limits = {}
    for job in (401, 402):
        started = jobdir.read_json(runner.ex.job_dir(job) / jobdir.RUNTIME)["started"]  # type: ignore[index]
        limits[job] = int(time.time() - started) + 3  # the warning ~1 s from now
        runner.ex.set_time_limit(job, limits[job])
    r401, r402 = runner.wait(401, 120), runner.wait(402, 120)
    for r in (r401, r402):
        assert (r.reason, r.exit_code, r.signal) == ("timeout", 0, signal.SIGTERM)
    for job, warned_file in ((401, "usr1-batch.txt"), (402, "usr1-task.txt")):
        rec = runner.ex.exit_record(job)
        assert rec is not None and rec.started is not None and rec.ended is not None
        warnings = [float(t) for t in runner.read(warned_file).split()]
        assert len(warnings) == 1, warnings  # once, to its own scope
        assert rec.started + limits[job] - lead <= warnings[0] <= rec.ended
        assert rec.ended - rec.started >= limits[job]


@pytest.mark.slow
def test_cancel_leaves_no_process(runner: Runner) -> None:
    has_setsid = shutil.which("setsid") is not None
    escape = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' &\n" if has_setsid else ""
    script = f"""#!/bin/bash
sh -c 'echo $$ > bg.pid; exec sleep 300' &
{escape}srun -N2 -n2 sh -c 'trap "" TERM; echo $$ > task$SLURM_PROCID.pid
sleep 300 & echo $! > child$SLURM_PROCID.pid; wait'
"""
    runner.launch(501, script, nodes=[node("node01"), node("node02")])
    w = runner.workdir
    pidfiles = [w / "bg.pid", w / "task0.pid", w / "task1.pid", w / "child0.pid", w / "child1.pid"]
    if has_setsid:
        pidfiles.append(w / "escaped.pid")
    wait_for_files(pidfiles)
    job_dir = runner.ex.job_dir(501)
    pids = [int(p.read_text()) for p in pidfiles]
    sup = runner.ex.supervisor_pid(501)
    runtime = jobdir.read_json(job_dir / jobdir.RUNTIME) or {}
    assert sup is not None and all(procs.is_alive(p) for p in pids)
    t0 = time.monotonic()
    runner.ex.cancel(501, grace=1.0)
    report = runner.wait(501)
    assert time.monotonic() - t0 < 5
    assert report.reason == "cancelled"
    # exit.json is the supervisor's last write; it exits right after.
    deadline = time.monotonic() + 10
    while runner.ex.supervisor_pid(501) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    for pid in [*pids, sup, int(runtime["batch_pid"])]:
        assert _gone(pid), f"pid {pid} survived the cancel"
    assert procs.pids_with_env(jobdir.ENV_JOB_DIR, str(job_dir)) == []
    assert 501 not in runner.ex.running()


@pytest.mark.slow
def test_signal_reaches_every_process_once(runner: Runner) -> None:
    script = """#!/bin/bash
trap 'echo x >> batch.txt' USR2
srun -N2 -n2 bash -c 'trap "echo x >> t$SLURM_PROCID.txt" USR2; echo up > r$SLURM_PROCID
while true; do sleep 0.1; done' &
while true; do sleep 0.1; done
"""
    runner.launch(901, script, nodes=[node("node01"), node("node02")])
    w = runner.workdir
    wait_for_files([w / "r0", w / "r1"])
    runner.ex.signal(901, signal.SIGUSR2)
    wait_for_files([w / "batch.txt", w / "t0.txt", w / "t1.txt"], timeout=5)
    time.sleep(0.5)  # a second delivery (srun forwarding too) would show up by now
    assert [runner.read(f).count("x") for f in ("batch.txt", "t0.txt", "t1.txt")] == [1, 1, 1]
    runner.ex.cancel(901, grace=0.5)
    assert runner.wait(901).reason == "cancelled"


@pytest.mark.slow
def test_controller_restart_readopts_and_collects(runner: Runner, tmp_path: Path) -> None:
    runner.launch(801, "#!/bin/sh\nsleep 0.2\nexit 4\n")  # ends while no controller runs
    runner.launch(802, "#!/bin/sh\nsleep 2.5\nexit 5\n")  # still running at the restart
    first = runner.ex
    first.close()  # the controller goes away; supervisors do not
    deadline = time.monotonic() + 5
    while first.exit_record(801) is None or first.supervisor_pid(801) is not None:
        assert time.monotonic() < deadline, "job 801 did not end"
        time.sleep(0.05)
    second = make_executor(tmp_path / "state")
    assert second.running() == {802}
    runner.ex = second
    assert runner.wait(801).exit_code == 4
    assert runner.wait(802).exit_code == 5
    assert second.poll() == []  # each exit once per executor...
    third = make_executor(tmp_path / "state")
    assert sorted(r.job_id for r in third.poll()) == [801, 802]  # ...and again until forget()
    third.forget(801)
    third.forget(802)
    assert make_executor(tmp_path / "state").poll() == []


def test_a_slow_supervisor_start_outlives_a_controller_restart(
    runner: Runner, tmp_path: Path
) -> None:
    """A supervisor still starting when the controller restarts is live however long
    its start takes on a loaded machine (found by its process, no deadline): it is
    neither buried as a node failure nor run twice."""
    go = tmp_path / "go"
    slow = tmp_path / "slow-python"
    slow.write_text(f"#!/bin/sh\nwhile [ ! -e {go} ]; do sleep 0.1; done\nexec {PY} \"$@\"\n")
    slow.chmod(0o755)
    first = Runner(make_executor(tmp_path / "slow", python=str(slow)), runner.workdir)
    first.launch(871, "#!/bin/sh\necho run >> runs-871.txt\n")
    spec = first.ex.job_dir(871) / jobdir.SPEC
    os.utime(spec, (time.time() - 600, time.time() - 600))  # launched long ago
    second = Runner(make_executor(tmp_path / "slow"), runner.workdir)  # the controller restarted
    try:
        assert second.ex.running() == {871} and second.ex.poll() == []
    finally:
        go.touch()
    report = second.wait(871, 120)
    assert (report.reason, report.exit_code) == ("", 0)
    assert runner.read("runs-871.txt") == "run\n"


@pytest.mark.slow
def test_dead_supervisor_is_a_node_failure(runner: Runner) -> None:
    script = "#!/bin/bash\nsrun -N2 -n2 sh -c 'echo $$ > t$SLURM_PROCID.pid; exec sleep 300'\n"
    runner.launch(811, script, nodes=[node("node01"), node("node02")])
    w = runner.workdir
    wait_for_files([w / "t0.pid", w / "t1.pid"])
    sup = runner.ex.supervisor_pid(811)
    assert sup is not None
    os.kill(sup, signal.SIGKILL)
    report = runner.wait(811)
    assert report.reason == "node_fail"
    deadline = time.monotonic() + 3
    tasks = [int(runner.read(f)) for f in ("t0.pid", "t1.pid")]
    while not all(_gone(p) for p in tasks) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in tasks)


def test_cancel_before_start_never_runs_the_script(runner: Runner) -> None:
    runner.launch(851, "#!/bin/sh\ntouch ran.txt\n")
    runner.ex.cancel(851, grace=0)  # launch() does not wait for the supervisor
    report = runner.wait(851)
    assert report.reason == "cancelled"
    assert not (runner.workdir / "ran.txt").exists()


def test_supervisor_that_cannot_start(runner: Runner, tmp_path: Path) -> None:
    false = shutil.which("false")
    assert false is not None
    broken = Runner(make_executor(tmp_path / "state2", python=false), runner.workdir)
    broken.launch(861, "#!/bin/sh\n")
    report = broken.wait(861)
    assert report.reason == "node_fail"
    rec = broken.ex.exit_record(861)
    assert rec is not None and "did not start" in rec.message
    missing = make_executor(tmp_path / "state3", python=str(tmp_path / "no-python"))
    with pytest.raises(RuntimeError, match="cannot start the supervisor"):
        Runner(missing, runner.workdir).launch(862, "#!/bin/sh\n")


def test_requeued_job_runs_again_and_appends_output(runner: Runner) -> None:
    script = "#!/bin/sh\necho run $SLURM_RESTART_COUNT\n"
    runner.launch(871, script)
    runner.wait(871)
    with pytest.raises(RuntimeError, match="already running"):
        runner.launch(872, "#!/bin/sh\nsleep 5\n")
        runner.launch(872, "#!/bin/sh\n")
    runner.ex.cancel(872, grace=0)
    runner.seen.pop(871)
    runner.launch(871, script, restart_count=1)
    assert runner.wait(871).exit_code == 0
    assert runner.read("slurm-871.out").split("\n")[:2] == ["run 0", "run 1"]


def test_srun_errors_warnings_and_per_task_files(runner: Runner) -> None:
    script = """#!/bin/bash
srun no-such-program; echo "rc1=$?"
srun -N3 true; echo "rc2=$?"
srun --mem=3G --frobnicate -n1 true; echo "rc3=$?"
srun -n2 -l -o 'o-%t.txt' sh -c 'echo hi; echo oops >&2'; echo "rc4=$?"
srun -n1 sh -c 'kill -9 $$'; echo "rc5=$?"
"""
    runner.launch(881, script, nodes=[node("node01"), node("node02")])
    runner.wait(881)
    out = runner.read("slurm-881.out")
    assert "rc1=2" in out and "cannot run 'no-such-program'" in out
    assert "rc2=1" in out and "--nodes=3: the job has 2 node(s)" in out
    assert "rc3=0" in out and "--mem=3G has no effect" in out and "--frobnicate" in out
    assert "rc4=0" in out
    assert sorted(runner.read("o-0.txt").splitlines()) == ["0: hi", "0: oops"]
    assert sorted(runner.read("o-1.txt").splitlines()) == ["1: hi", "1: oops"]
    assert "rc5=137" in out and "task 0: killed by SIGKILL" in out


def test_time_limit_of_a_running_job_can_be_raised_and_lowered(runner: Runner) -> None:
    # scontrol update TimeLimit on a running job (and a suspended job's limit
    # pushed back on resume): the supervisor takes the new limit from the start
    runner.launch(881, "#!/bin/sh\necho started\nsleep 4\necho done\n", time_limit=2)
    wait_for_files([runner.workdir / "slurm-881.out"])
    runner.ex.set_time_limit(881, 30)
    r = runner.wait(881)
    assert (r.reason, r.exit_code) == ("", 0)
    assert runner.read("slurm-881.out").split() == ["started", "done"]
    runner.launch(882, "#!/bin/sh\necho started\nexec sleep 30\n", time_limit=60)
    wait_for_files([runner.workdir / "slurm-882.out"])
    runner.ex.set_time_limit(882, 1)
    t0 = time.monotonic()
    r = runner.wait(882)
    assert r.reason == "timeout" and time.monotonic() - t0 < 10
    rec = runner.ex.exit_record(882)
    assert rec is not None and "time limit of 1 s" in rec.message
    with pytest.raises(RuntimeError, match="not running"):
        runner.ex.set_time_limit(882, 10)


def test_an_end_the_controller_could_not_store_is_reported_again(runner: Runner) -> None:
    """collect_exits asks for it when storing the end failed (a busy database):
    the end is not lost until a restart."""
    runner.launch(881, "#!/bin/sh\nexit 3\n")
    assert runner.wait(881, 120).exit_code == 3
    assert runner.ex.poll() == []  # each end once...
    runner.ex.report_again(881)
    assert [(r.job_id, r.exit_code) for r in runner.ex.poll()] == [(881, 3)]  # ...unless asked
