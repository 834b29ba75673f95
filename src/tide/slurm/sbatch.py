"""sbatch: submit a batch script, exactly as Slurm's sbatch takes it.

Options, then the script and its arguments (or --wrap, or the script on
stdin); #SBATCH lines and SBATCH_* variables are read too. What sbatch does
itself: --parsable prints the id alone, --test-only submits nothing and says
when and where the job would start, --wait blocks until the job ends and
returns its exit code (the highest of an array's tasks).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from tide.client.http import Client
from tide.display import timestamp
from tide.jobspec.argv import split_argv
from tide.jobspec.options import flag_on
from tide.slurm.common import connect_api
from tide.slurm.opts import UsageError

ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
         "OUT_OF_MEMORY", "DEADLINE", "BOOT_FAIL"}  # fmt: skip
USAGE = (
    "Usage: sbatch [OPTIONS...] SCRIPT [ARGS...]   (or --wrap 'CMD')\n"
    "  e.g. sbatch -N2 --gpus-per-node=8 --time=2:00:00 train.sh --lr 3e-4\n"
    "  --parsable (id only), --test-only (start estimate, submits nothing), "
    "-W/--wait (exit code of the job)\n"
    "Options: docs/sbatch.md\n"
)


def run(argv: list[str]) -> int:
    if argv[:1] in (["--help"], ["-h"], ["--usage"]):
        sys.stdout.write(USAGE)
        return 0
    given, remainder, wrap = split(argv)
    body = submit_body(argv, wrap, remainder)
    with connect_api() as c:
        if "test-only" in given:
            return _test_only(c, body)
        res = c.post("/v1/jobs", body)
        for w in res.get("warnings", []):
            sys.stderr.write(f"sbatch: warning: {w}\n")
        line = str(res["job_id"]) if "parsable" in given else f"Submitted batch job {res['job_id']}"
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if "wait" in given or flag_on(os.environ.get("SBATCH_WAIT", "no")):
            return wait(c, res.get("array_job_id") or res["job_id"])
    return 0


def split(argv: list[str]) -> tuple[set[str], list[str], str | None]:
    """(the options given, by name; the script path and its arguments; --wrap's
    command). The option values are checked by the server, which reads the
    command line with the script and SBATCH_* variables (one reader, and the
    client stays cheap to start)."""
    from tide.jobspec.errors import JobSpecError

    try:
        found, remainder = split_argv(argv)
    except JobSpecError as e:
        raise UsageError(str(e)) from None
    wraps = [o.value for o in found if o.option.name == "wrap"]
    return {o.option.name for o in found}, remainder, (wraps[-1] if wraps else None)


def submit_body(argv: list[str], wrapped: str | None, remainder: list[str]) -> dict[str, Any]:
    """The POST /v1/jobs body: the command line, the script text, the environment, cwd."""
    body: dict[str, Any] = {"argv": argv}
    if wrapped is None:  # --wrap's command stays in argv: the server builds its script
        if remainder:
            path = remainder[0]
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    body["script"] = f.read()
            except OSError as e:
                raise UsageError(f"error: Unable to open file {path}: {e.strerror}") from None
        elif not sys.stdin.isatty():
            body["script"] = sys.stdin.read()
        else:
            raise UsageError("error: no batch script given (sbatch script.sh, or --wrap 'cmd')")
    body["env"] = {k: v for k, v in os.environ.items() if k != "TIDE_TOKEN"}
    mask = os.umask(0o022)  # reading the umask sets it: set it back at once
    os.umask(mask)
    body["env"]["SLURM_UMASK"] = f"{mask:04o}"  # as sbatch: the job creates files with it
    body["cwd"] = os.getcwd()
    return body


def _test_only(c: Client, body: dict[str, Any]) -> int:
    r = c.post("/v1/jobs/test", body)
    for w in r.get("warnings", []):
        sys.stderr.write(f"sbatch: warning: {w}\n")
    if r["start"] is None:
        sys.stderr.write(f"sbatch: Job {r['job_id']} has no expected start yet: it would wait "
                         f"({r['reason']}) in partition {r['partition']}\n")  # fmt: skip
        return 0
    cpus = f"using {r['cpus']} processors " if r["cpus"] else ""
    nodes = f"on nodes {r['nodes']} " if r["nodes"] else ""
    sys.stderr.write(f"sbatch: Job {r['job_id']} to start at {timestamp(r['start'])} "
                     f"{cpus}{nodes}in partition {r['partition']}\n")  # fmt: skip
    return 0


def wait(c: Client, job_id: int | str, poll: float = 0.5) -> int:
    """Block until every task of the job has ended; its exit code (an array: the
    highest), or 1 when a task ended without one (cancelled, node failure)."""
    while True:
        jobs = c.get("/v1/jobs", job=str(job_id), all=True, format="columns")
        rows = [dict(zip(jobs["columns"], r, strict=True)) for r in jobs["rows"]]
        if rows and all(r["state"] in ENDED for r in rows):
            return max(_exit_code(r) for r in rows)
        time.sleep(poll)
        poll = min(2.0, poll * 1.5)


def _exit_code(r: dict[str, Any]) -> int:
    if r["state"] == "COMPLETED":
        return int(r["exit_code"] or 0)
    if r["exit_code"]:
        return int(r["exit_code"])
    return 1
