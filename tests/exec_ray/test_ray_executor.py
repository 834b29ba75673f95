"""The Ray executor on a real multi-node Ray cluster (one head, three raylets
on this machine): discovery, placement on the nodes tide chose, srun across
Ray nodes, cancel and gang teardown, a node killed mid-job, a node joining."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import raycluster

from tide.exec import procs
from tide.exec.base import ExitReport, LaunchSpec, NodeLaunch

ray = pytest.importorskip("ray", reason="the Ray executor needs ray: pip install 'tide[ray]'")

from tide.exec.ray.cluster import cluster_from_ray, ray_nodes  # noqa: E402
from tide.exec.ray.executor import RayExecutor  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tide's executors need Linux"),
]


@pytest.fixture(scope="module")
def ex(rc: raycluster.RayTestCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    root = tmp_path_factory.mktemp("ray-exec")
    executor = RayExecutor(
        rc.address,
        state_root=str(root / "nodes"),
        checkpoint_root=str(root / "checkpoints"),
        kill_wait=1.0,
        step_grace=1.0,
        cluster_name="raytest",
        namespace="tide-test",
    )
    try:
        yield executor
    finally:
        executor.shutdown_agents()


def node(name: str, gpus: tuple[int, ...] = (), ntasks: int = 1) -> NodeLaunch:
    return NodeLaunch(name, "127.0.0.1", gpus, (0,), 1000, ntasks)


def spec(work: Path, job_id: int, script: str, nodes: list[NodeLaunch], **kw: object) -> LaunchSpec:
    return LaunchSpec(
        job_id=job_id,
        name=f"job{job_id}",
        user="alice",
        account="physics",
        partition="ray",
        script=script,
        workdir=str(work),
        submit_dir=str(work),
        nodes=nodes,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work)},
        ntasks=sum(n.ntasks for n in nodes),
        **kw,  # type: ignore[arg-type]
    )


def wait_exit(ex: RayExecutor, job_id: int, timeout: float = 60.0) -> ExitReport:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for r in ex.poll():
            if r.job_id == job_id:
                return r
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not end within {timeout} s")


def wait_lines(path: Path, n: int, timeout: float = 60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= n:
            return lines
        time.sleep(0.1)
    raise AssertionError(f"{path} never had {n} lines")


def gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while procs.is_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_ray_nodes_become_tide_nodes(rc: raycluster.RayTestCluster) -> None:
    cluster = cluster_from_ray(ray_nodes(ray))
    by_name = {n.name: n for n in cluster.nodes}
    assert sorted(by_name) == ["gpu01", "gpu02", "gpu03"]  # the CPU-less head runs nothing
    n = by_name["gpu03"]
    assert (n.cpus, n.gpu_count, n.gpu_type(), n.address) == (2, 2, "a100", "127.0.0.1")
    leaves = {s.name: s.nodes for s in cluster.topology.switches if s.is_leaf}
    assert leaves == {"leaf1": ("gpu01", "gpu02"), "leaf2": ("gpu03",)}


def test_two_node_job_runs_on_the_nodes_tide_chose(
    rc: raycluster.RayTestCluster, ex: RayExecutor, tmp_path: Path
) -> None:
    script = (
        "#!/bin/bash\n"
        'echo "batch $SLURMD_NODENAME $RAY_NODE_ID"\n'
        "srun -l bash -c 'echo task $SLURM_PROCID $SLURMD_NODENAME $RAY_NODE_ID "
        "$MASTER_ADDR:$MASTER_PORT gpus=$CUDA_VISIBLE_DEVICES ckpt=$TIDE_CHECKPOINT_DIR "
        "at=$(date +%s.%N)'\n"
    )
    t0 = time.monotonic()
    ex.launch(spec(tmp_path, 201, script, [node("gpu02", (0, 1)), node("gpu03", (1,))]))
    report = wait_exit(ex, 201)
    assert (report.exit_code, report.signal, report.reason) == (0, 0, ""), report
    out = (tmp_path / "slurm-201.out").read_text()
    assert f"batch gpu02 {rc.node_id('gpu02')}" in out, out
    tasks = sorted(line.split(": ", 1)[1].split() for line in out.splitlines() if ": task" in line)
    port = tasks[0][4].split(":")[1]
    ckpt = f"ckpt={tmp_path.parent}"  # under the executor's checkpoint root, not per node
    assert [t[:6] for t in tasks] == [
        ["task", "0", "gpu02", rc.node_id("gpu02"), f"127.0.0.1:{port}", "gpus=0,1"],
        ["task", "1", "gpu03", rc.node_id("gpu03"), f"127.0.0.1:{port}", "gpus=1"],
    ], out
    assert all(t[6].startswith("ckpt=") and t[6].endswith("/201") for t in tasks), ckpt
    rec = ex.exit_record(201)
    assert rec is not None and rec.started and rec.tasks_running and rec.ended
    remote = float(tasks[1][7].split("=")[1]) - rec.started
    print(f"\nscript start -> remote task running {remote:.2f} s; "
          f"launch call -> job end {time.monotonic() - t0:.2f} s")  # fmt: skip
    ex.forget(201)


def test_tasks_see_the_same_environment_as_with_the_local_executor(
    ex: RayExecutor, tmp_path: Path
) -> None:
    """One behaviour, two executors: the same spec, every task's Slurm and
    torch.distributed variables, line for line."""
    from tide.exec.local import LocalExecutor

    names = "SLURM_|SLURMD_|MASTER_|WORLD_SIZE|RANK|LOCAL_|GROUP_|NODE_RANK|CUDA_"
    keep = f"grep -E '^({names})' | grep -v START_TIME"  # the one value the clock sets
    script = f"#!/bin/bash\nsrun -l bash -c \"env | {keep} | sort\"\n"
    nodes = [node("gpu01", (0, 1), ntasks=2), node("gpu03", (1,), ntasks=1)]
    outputs = []
    local = LocalExecutor(tmp_path / "l", cluster_name="raytest")
    work = tmp_path / "work"  # one submit dir: SLURM_SUBMIT_DIR is the same
    work.mkdir()
    for name, executor in (("ray", ex), ("local", local)):
        executor.launch(spec(work, 208, script, nodes, cpus_per_task=1))
        deadline = time.monotonic() + 60
        while not any(r.job_id == 208 for r in executor.poll()):
            assert time.monotonic() < deadline, f"{name}: job 208 did not end"
            time.sleep(0.1)
        outputs.append(sorted((work / "slurm-208.out").read_text().splitlines()))
        executor.forget(208)  # type: ignore[attr-defined]
    ray_out, local_out = outputs
    assert len(ray_out) > 3 * 20 and ray_out == local_out, (ray_out, local_out)


def test_failed_remote_task_tears_down_the_step(ex: RayExecutor, tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\n"
        "srun bash -c 'echo $$ > pid.$SLURM_PROCID; "
        'if [ "$SLURM_PROCID" = 1 ]; then sleep 1; exit 3; fi; sleep 600\'\n'
    )
    ex.launch(spec(tmp_path, 202, script, [node("gpu01"), node("gpu03")]))
    report = wait_exit(ex, 202)
    assert (report.exit_code, report.node) == (3, "gpu03"), report
    assert "task 1: exited with exit code 3" in (tmp_path / "slurm-202.out").read_text()
    assert gone(int((tmp_path / "pid.0").read_text()))
    ex.forget(202)


def test_signal_and_time_limit_reach_remote_tasks(ex: RayExecutor, tmp_path: Path) -> None:
    """USR1 to the job reaches both tasks (the remote one through its relay),
    then the 8 s limit ends the job on both nodes."""
    script = (
        "#!/bin/bash\n"
        "trap 'echo USR1 in the batch shell' USR1\n"  # signal() reaches every process
        "srun bash -c 'trap \"echo USR1 on $SLURMD_NODENAME\" USR1; echo $$ >> pids; "
        "sleep 60 & wait; sleep 60 & wait'\n"
    )
    ex.launch(spec(tmp_path, 207, script, [node("gpu02"), node("gpu01")], time_limit=8))
    pids = [int(p) for p in wait_lines(tmp_path / "pids", 2)]  # both traps are set
    ex.signal(207, signal.SIGUSR1)
    report = wait_exit(ex, 207)
    out = (tmp_path / "slurm-207.out").read_text()
    assert report.reason == "timeout", (report, out)
    assert "USR1 on gpu02" in out and "USR1 on gpu01" in out, out
    assert all(gone(p) for p in pids), pids
    ex.forget(207)


def test_cancel_ends_every_node(ex: RayExecutor, tmp_path: Path) -> None:
    script = "#!/bin/bash\nsrun bash -c 'echo $$ >> pids; sleep 600'\n"
    ex.launch(spec(tmp_path, 203, script, [node("gpu01"), node("gpu02")]))
    pids = [int(p) for p in wait_lines(tmp_path / "pids", 2)]
    ex.cancel(203, grace=1.0)
    report = wait_exit(ex, 203)
    assert report.reason == "cancelled", report
    assert all(gone(p) for p in pids), pids
    ex.forget(203)


def test_killed_node_fails_its_job_and_a_new_node_joins(
    rc: raycluster.RayTestCluster, ex: RayExecutor, tmp_path: Path
) -> None:
    script = "#!/bin/bash\nsrun bash -c 'echo $$ >> pids; sleep 600'\n"
    ex.launch(spec(tmp_path, 204, script, [node("gpu01"), node("gpu03")]))
    pids = [int(p) for p in wait_lines(tmp_path / "pids", 2)]
    t0 = time.monotonic()
    rc.kill("gpu03")
    report = wait_exit(ex, 204, timeout=90)
    print(f"\nnode killed -> job reported node_fail in {time.monotonic() - t0:.1f} s")
    assert (report.reason, report.node) == ("node_fail", "gpu03"), report
    assert all(gone(p) for p in pids), pids  # both nodes' tasks: gang teardown
    assert "gpu03" not in ex.alive_nodes()
    ex.forget(204)
    # A machine that comes back (same tide name, new Ray node) is usable again.
    rc.add("gpu03", "leaf2")
    deadline = time.monotonic() + 60
    while "gpu03" not in ex.alive_nodes() and time.monotonic() < deadline:
        ex.poll()
        time.sleep(0.2)
    ex.launch(spec(tmp_path, 205, "#!/bin/bash\necho back on $RAY_NODE_ID\n", [node("gpu03")]))
    assert wait_exit(ex, 205).exit_code == 0
    assert rc.node_id("gpu03") in (tmp_path / "slurm-205.out").read_text()
    ex.forget(205)


def test_torch_ddp_example_across_two_ray_nodes(
    rc: raycluster.RayTestCluster, ex: RayExecutor, tmp_path: Path
) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "train_ddp.py"
    if not example.exists():
        pytest.skip("examples/train_ddp.py is not in this checkout yet")
    pytest.importorskip("torch", reason="the DDP example needs torch: pip install 'tide[torch]'")
    script = (  # as examples/train_ddp.sbatch runs it
        "#!/bin/bash\n"
        'export PYTHONPATH="$TIDE_PYTHONPATH"\n'
        f"srun bash -c 'echo rank $RANK of $WORLD_SIZE on $RAY_NODE_ID; "
        f"exec {sys.executable} {example} --steps 6 --every 3'\n"
    )
    ex.launch(spec(tmp_path, 206, script, [node("gpu01"), node("gpu02")]))
    report = wait_exit(ex, 206, timeout=300)
    out = (tmp_path / "slurm-206.out").read_text()
    assert (report.exit_code, report.signal) == (0, 0), out
    assert f"rank 0 of 2 on {rc.node_id('gpu01')}" in out, out
    assert f"rank 1 of 2 on {rc.node_id('gpu02')}" in out, out
    assert "final loss" in out, out
    ex.forget(206)
