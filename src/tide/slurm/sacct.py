"""sacct: accounting records in Slurm's columns.

Your jobs since midnight by default (`-a` everyone's, `-u`, `-A`, `-j`, `-s`,
`-S/-E`, `--name`), `-o/--format NAME%WIDTH,...`, `-b`, `-l`, `-X` (no steps),
`-n`, `-P/--parsable2`, `-p/--parsable`. Each job that started has its batch
step, `ID.batch`, on the next line, as in Slurm.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tide.display import STATE_CODE, hms, midnight, parse_time, timestamp
from tide.hostlist import expand
from tide.slurm import layout
from tide.slurm.common import connect_api, get_all, help_exit, job_ids, whoami
from tide.slurm.opts import Opt, UsageError, parse

SPEC = [
    Opt("jobs", "j", ("jobs",), True, repeat=True),
    Opt("user", "u", ("user", "uid"), True, repeat=True),
    Opt("allusers", "a", ("allusers",)),
    Opt("account", "A", ("accounts", "account"), True, repeat=True),
    Opt("state", "s", ("state",), True, repeat=True),
    Opt("name", "", ("name",), True, repeat=True),
    Opt("partition", "r", ("partition",), True, repeat=True),
    Opt("start", "S", ("starttime",), True),
    Opt("end", "E", ("endtime",), True),
    Opt("format", "o", ("format",), True),
    Opt("brief", "b", ("brief",)),
    Opt("long", "l", ("long",)),
    Opt("alloc", "X", ("allocations",)),
    Opt("noheader", "n", ("noheader",)),
    Opt("parsable2", "P", ("parsable2",)),
    Opt("parsable", "p", ("parsable",)),
    Opt("help", "h", ("help", "usage")),
]

WIDTHS = {
    "JobID": 12, "JobIDRaw": 12, "JobName": 10, "Partition": 10, "Account": 10,
    "AllocCPUS": 10, "State": 10, "ExitCode": 8, "User": 9, "Group": 9, "QOS": 10,
    "Priority": 10, "Elapsed": 10, "ElapsedRaw": 10, "Submit": 19, "Eligible": 19,
    "Start": 19, "End": 19, "Timelimit": 10, "TimelimitRaw": 12, "NNodes": 8,
    "NodeList": 15, "AllocNodes": 10, "NCPUS": 10, "NTasks": 8, "ReqCPUS": 8, "ReqNodes": 8,
    "AllocTRES": 10, "ReqTRES": 10, "Reason": 20, "Restarts": 8, "DerivedExitCode": 15,
    "WorkDir": 10, "Cluster": 10, "AllocGPUS": 9, "ReqGPUS": 7, "GPUHours": 8,
    "Preemptions": 11, "LostGPUSeconds": 14,
}  # fmt: skip
DEFAULT = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
BRIEF = "JobID,State,ExitCode"
LONG = ("JobID,JobIDRaw,JobName,Partition,NTasks,AllocCPUS,Elapsed,State,ExitCode,"
        "ReqCPUS,ReqNodes,AllocNodes,ReqTRES,AllocTRES,NNodes,NodeList")  # fmt: skip


def run(argv: list[str]) -> int:
    o = parse(argv, SPEC)
    if o.flag("help"):
        help_exit("sacct [-j IDS] [-u USER|-a] [-S START] [-E END] [-s STATES] "
                  "[-o FIELDS] [-X] [-b|-l] [-n] [-P]\n  e.g. sacct -X -S now-2days -o "
                  "JobID,JobName%20,State,Elapsed")  # fmt: skip
    spec = o.get("format") or (BRIEF if o.flag("brief") else LONG if o.flag("long") else DEFAULT)
    columns = layout.sacct_columns(spec, WIDTHS)
    now = time.time()
    ids = job_ids(o.list("jobs"))
    try:
        start = parse_time(o.get("start")) if o.get("start") else _default_start(o, ids, now)
        end = parse_time(o.get("end")) if o.get("end") else None
    except ValueError as e:
        raise UsageError(f"error: {e}") from None
    with connect_api() as c:
        users = o.list("user")
        if not users and not o.flag("allusers") and not ids:
            users = [whoami(c)]
        rows = get_all(c, "/v1/jobs", all=True, job=ids, user=users,
                       account=o.list("account"), name=o.list("name"),
                       partition=o.list("partition"),
                       state=[_state(s) for s in o.list("state")] or None,
                       start=start, end=end)  # fmt: skip
    rows.sort(key=lambda r: (r["submit_time"] or 0, r["id"]))
    records = []
    for r in rows:
        if r["array_job_id"] is not None and r["state"] == "PENDING" and not r["restarts"]:
            continue  # not split off its array yet: Slurm's database has no record of it
        records.append(fields(r, now))
        if not o.flag("alloc") and r["start_time"] is not None:
            records.append(batch_step(records[-1]))
    sep = "|" if o.flag("parsable2") or o.flag("parsable") else None
    lines = layout.sacct_lines(columns, records, not o.flag("noheader"), sep, o.flag("parsable"))
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _default_start(o: Any, ids: list[str], now: float) -> float | None:
    """sacct's: midnight today; none with -j; now with -s (jobs in those states now)."""
    if ids:
        return None
    return now if o.list("state") else midnight(now)


def _state(text: str) -> str:
    codes = {v: k for k, v in STATE_CODE.items()}
    return codes.get(text.upper(), text.upper())


def fields(r: dict[str, Any], now: float) -> dict[str, str]:
    """One job's sacct values, by field name."""
    started, ended = r["start_time"], r["end_time"]
    elapsed = ((ended or now) - started) if started else 0
    nodes = _nodes(r)
    cpus = r["cpus_alloc"] or nodes  # pending: what it asks for, as Slurm shows
    gpus = r["gpus_alloc"] or 0
    state = r["state"]
    by = r.get("cancel_requested") or ""
    if state == "CANCELLED" and by and ":" not in by:  # not requeue:/preempt: (tide's own)
        state = f"CANCELLED by {_uid(by)}"
    req_gpus = r["gpus_req"] or 0
    alloc = tres(cpus, gpus, nodes) if started else ""
    return {
        "JobID": r["job_id"] if "job_id" in r else _jid(r),
        "JobIDRaw": str(r["id"]),
        "JobName": r["name"] or "",
        "Partition": r["run_partition"] or r["partition"] or "",
        "Account": r["account"] or "",
        "AllocCPUS": str(cpus),
        "NCPUS": str(cpus),
        "State": state,
        "ExitCode": f"{r['exit_code'] or 0}:{r['exit_signal'] or 0}",
        "DerivedExitCode": f"{r['exit_code'] or 0}:{r['exit_signal'] or 0}",
        "User": r["user"] or "",
        "Group": r["user"] or "",
        "QOS": r["qos"] or "",
        "Priority": str(int(r["priority"] or 0)),
        "Elapsed": hms(elapsed),
        "ElapsedRaw": str(int(elapsed)),
        "Submit": timestamp(r["submit_time"]),
        "Eligible": timestamp(r["submit_time"]),
        "Start": timestamp(started),
        "End": timestamp(ended),
        "Timelimit": hms(r["time_limit"]),
        "TimelimitRaw": "UNLIMITED" if r["time_limit"] is None else str(r["time_limit"] // 60),
        "NNodes": str(nodes),
        "AllocNodes": str(nodes if started else 0),
        "ReqNodes": str(r["nodes_req"] or 1),
        "ReqCPUS": str(r["nodes_req"] or 1),
        "NTasks": "",
        "NodeList": r["nodelist"] or "None assigned",
        "AllocTRES": alloc,
        "ReqTRES": tres(r["nodes_req"] or 1, req_gpus, r["nodes_req"] or 1),
        "Reason": r["reason"] or "None",
        "Restarts": str(r["restarts"] or 0),
        "WorkDir": "",
        "Cluster": "",
        "AllocGPUS": str(gpus),
        "ReqGPUS": str(req_gpus),
        "GPUHours": f"{(r['gpu_seconds'] or 0) / 3600:.2f}",
        "Preemptions": str(r["preemptions"] or 0),
        "LostGPUSeconds": f"{r['lost_gpu_seconds'] or 0:.0f}",
    }


def tres(cpus: int, gpus: int, nodes: int) -> str:
    """A TRES list as sacct prints it: by name, a count of 0 left out (a CPU job has
    no gres/gpu=0)."""
    return ",".join(f"{k}={v}" for k, v in (("cpu", cpus), ("gres/gpu", gpus), ("node", nodes))
                    if v)  # fmt: skip


def batch_step(job: dict[str, str]) -> dict[str, str]:
    """The batch script's step: the first node's CPUs, no partition, named batch."""
    nodes = max(1, int(job["NNodes"] or 1))
    cpus = str(max(1, int(job["AllocCPUS"] or 1) // nodes))
    first = expand(job["NodeList"])[0] if job["NodeList"] not in ("", "None assigned") else ""
    return dict(
        job,
        JobID=f"{job['JobID']}.batch",
        JobIDRaw=f"{job['JobIDRaw']}.batch",
        JobName="batch",
        Partition="",
        AllocCPUS=cpus,
        NCPUS=cpus,
        NNodes="1",
        AllocNodes="1",
        NodeList=first,
        NTasks="1",
        User="",
        Group="",
        QOS="",
        Priority="",
        Timelimit="",
        Reason="",
        AllocTRES=f"cpu={cpus},node=1",
        ReqTRES="",
    )


def _uid(user: str) -> str:
    """Slurm names who cancelled a job by uid; a user with no OS account by name."""
    try:
        import pwd

        return str(pwd.getpwnam(user).pw_uid)
    except (ImportError, KeyError):
        return user


def _jid(r: dict[str, Any]) -> str:
    if r["array_job_id"] is not None:
        return f"{r['array_job_id']}_{r['array_task_id']}"
    return str(r["id"])


def _nodes(r: dict[str, Any]) -> int:
    if r["nodelist"]:
        try:
            return len(expand(r["nodelist"]))
        except ValueError:
            pass
    return int(r["nodes_req"] or 1)
