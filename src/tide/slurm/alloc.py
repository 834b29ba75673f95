"""An interactive allocation (salloc, and srun outside a job): a holder job is
submitted with the resources asked for; once it runs, its batch step writes the
job's environment (SLURM_JOB_ID, SLURM_JOB_NODELIST, TIDE_JOB_DIR, the PATH
with the job's srun...) to a private file and sleeps. The command then runs
here with that environment, so `srun` inside it launches steps on the
allocation, and the holder is cancelled when the command ends.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tide.client.http import Client
from tide.slurm.sbatch import ENDED, submit_body

HOLD = (
    '"$TIDE_PYTHON" -c \'import json, os, sys; t = sys.argv[1] + ".tmp"; '
    'json.dump(dict(os.environ), open(t, "w")); os.rename(t, sys.argv[1])\' {path}\n'
    "exec sleep 2147483647\n"
)
# What describes the holder's batch step, not the allocation (salloc's shell has none).
STEP_ONLY = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_TASK_PID", "SLURM_NODEID", "RANK",
             "LOCAL_RANK", "SLURM_STEP_", "SLURM_SCRIPT_CONTEXT")  # fmt: skip


@contextmanager
def allocation(c: Client, options: list[str], who: str) -> Iterator[dict[str, str]]:
    """Allocate with sbatch `options`; yield the environment a command gets in it.
    What it says on stderr is Slurm's: salloc names the allocation it got and
    releases; srun says something only when it had to wait."""
    folder = Path(tempfile.mkdtemp(prefix="tide-salloc-"))
    env_file = folder / "env.json"
    argv = [*options, "-o", "/dev/null", "--wrap", HOLD.format(path=env_file)]
    job_id = c.post("/v1/jobs", submit_body(argv, "", []))["job_id"]
    salloc = who == "salloc"
    try:
        _wait_running(c, job_id, env_file, who)
        if salloc:
            sys.stderr.write(f"{who}: Granted job allocation {job_id}\n")
        yield job_env(json.loads(env_file.read_text()))
    finally:
        if salloc:
            sys.stderr.write(f"{who}: Relinquishing job allocation {job_id}\n")
        c.delete(f"/v1/jobs/{job_id}")
        env_file.unlink(missing_ok=True)
        folder.rmdir()


def _wait_running(c: Client, job_id: int, env_file: Path, who: str) -> None:
    told = False
    while not env_file.exists():
        job = c.get(f"/v1/jobs/{job_id}")["jobs"][0]
        if job["state"] in ENDED:
            raise RuntimeError(f"job {job_id} ended {job['state']} before it was allocated")
        # waiting once a pass gave it a reason (a new job is PENDING until the next pass)
        if job["state"] == "PENDING" and job.get("reason") not in (None, "", "None") and not told:
            if who == "salloc":
                sys.stderr.write(f"{who}: Pending job allocation {job_id}\n")
            sys.stderr.write(f"{who}: job {job_id} queued and waiting for resources\n")
            told = True
        time.sleep(0.3)
    if told:
        sys.stderr.write(f"{who}: job {job_id} has been allocated resources\n")


def job_env(held: dict[str, str]) -> dict[str, str]:
    """This shell's environment plus the allocation's SLURM_*/TIDE_* variables and the
    job's srun first on PATH."""
    env = dict(os.environ)
    for k, v in held.items():
        if k.startswith(("SLURM_", "TIDE_", "CUDA_VISIBLE_DEVICES", "MASTER_")) and not (
            k.startswith(STEP_ONLY)
        ):
            env[k] = v
    job_bin = Path(held.get("TIDE_JOB_DIR", "")) / "bin"
    env["PATH"] = f"{job_bin}{os.pathsep}{env.get('PATH', '')}"
    return env
