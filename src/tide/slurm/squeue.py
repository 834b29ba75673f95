"""squeue: pending and running jobs in Slurm's layouts.

Default `%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R`, `-l`, `--start`, `-o`, `-O`,
`-h`; filters `-u/--me/-A/-p/-t/-j/-n/-q`; sorted as Slurm's default "P,t,-p"
(partition, state, priority high first). Pending tasks of an array share one
line, `2_[6-9%3]`, unless `-r`.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any

from tide.client.http import Client, ClientError
from tide.display import STATE_CODE, duration, timestamp
from tide.hostlist import index_ranges
from tide.slurm import layout
from tide.slurm.common import connect_api, get_all, help_exit, whoami
from tide.slurm.opts import Opt, parse

SPEC = [
    Opt("user", "u", ("user",), True, repeat=True),
    Opt("me", "", ("me",)),
    Opt("account", "A", ("account",), True, repeat=True),
    Opt("partition", "p", ("partition",), True, repeat=True),
    Opt("states", "t", ("states", "state"), True, repeat=True),
    Opt("jobs", "j", ("jobs", "job"), True, repeat=True),
    Opt("name", "n", ("name",), True, repeat=True),
    Opt("qos", "q", ("qos",), True, repeat=True),
    Opt("format", "o", ("format",), True),
    Opt("Format", "O", ("Format",), True),
    Opt("noheader", "h", ("noheader",)),
    Opt("long", "l", ("long",)),
    Opt("start", "", ("start",)),
    Opt("array", "r", ("array",)),
    Opt("all", "a", ("all",)),
    Opt("help", "", ("help", "usage")),
]

DEFAULT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"

# letter -> key (the key is also the -O name's target)
LETTERS = {
    "i": "jobid", "A": "jobid_raw", "F": "array_job_id", "K": "array_task_id", "P": "partition",
    "j": "name", "u": "user", "a": "account", "q": "qos", "t": "st", "T": "state",
    "M": "time", "l": "time_limit", "L": "time_left", "D": "nodes", "C": "cpus",
    "R": "nodelist_reason", "N": "nodelist", "r": "reason", "S": "start_time",
    "V": "submit_time", "e": "end_time", "Y": "schednodes", "Q": "priority",
    "p": "priority_norm", "b": "tres_per_node",
}  # fmt: skip
HEADERS = {
    "jobid": "JOBID", "jobid_raw": "JOBID", "array_job_id": "ARRAY_JOB_ID",
    "array_task_id": "ARRAY_TASK_ID", "partition": "PARTITION", "name": "NAME", "user": "USER",
    "account": "ACCOUNT", "qos": "QOS", "st": "ST", "state": "STATE", "time": "TIME",
    "time_limit": "TIME_LIMIT", "time_left": "TIME_LEFT", "nodes": "NODES", "cpus": "CPUS",
    "nodelist_reason": "NODELIST(REASON)", "nodelist": "NODELIST", "reason": "REASON",
    "start_time": "START_TIME", "submit_time": "SUBMIT_TIME", "end_time": "END_TIME",
    "schednodes": "SCHEDNODES", "priority": "PRIORITY", "priority_norm": "PRIORITY",
    "tres_per_node": "TRES_PER_NODE",
}  # fmt: skip
# -O names (squeue --helpformat2) -> key
FIELDS = {
    "JobID": "jobid_raw", "JobArrayID": "jobid", "ArrayJobID": "array_job_id",
    "ArrayTaskID": "array_task_id", "Partition": "partition", "Name": "name",
    "UserName": "user", "Account": "account", "QOS": "qos", "StateCompact": "st",
    "State": "state", "TimeUsed": "time", "TimeLimit": "time_limit", "TimeLeft": "time_left",
    "NumNodes": "nodes", "NumCPUs": "cpus", "ReasonList": "nodelist_reason",
    "NodeList": "nodelist", "Reason": "reason", "StartTime": "start_time",
    "SubmitTime": "submit_time", "EndTime": "end_time", "SchedNodes": "schednodes",
    "PriorityLong": "priority", "Priority": "priority_norm", "tres-per-node": "tres_per_node",
}  # fmt: skip
UNCUT = frozenset({"time", "time_limit", "time_left", "start_time", "submit_time", "end_time"})
STATE_ORDER = ["PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "COMPLETED", "CANCELLED"]


def run(argv: list[str]) -> int:
    o = parse(argv, SPEC)
    if o.flag("help"):
        help_exit("squeue [-u USER|--me] [-j IDS] [-p PART] [-t STATES] [-o FMT|-O FIELDS] [-l] "
                  "[-h] [--start] [-r]\n  e.g. squeue --me -t PD --start")  # fmt: skip
    pieces = _layout(o.get("format"), o.get("Format"), o.flag("long"), o.flag("start"))
    now = time.time()
    with connect_api() as c:
        users = o.list("user") + ([whoami(c)] if o.flag("me") else [])
        params = _filters(o, users)
        rows = get_all(c, "/v1/jobs", **params)
        if o.flag("start"):
            rows = [r for r in rows if r["state"] == "PENDING"]
        throttles = {} if o.flag("array") else _throttles(c, rows)
        if not rows and len(o.list("jobs")) == 1 and not _known(c, o.list("jobs")[0]):
            sys.stderr.write("slurm_load_jobs error: Invalid job id specified\n")
            return 1
    rows.sort(key=_order)
    lines = [_cells(r, now) for r in rows]
    if not o.flag("array"):
        lines = _collapse_arrays(rows, lines, throttles)
    out = []
    if o.flag("long"):
        out.append(time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)))
    header = None if o.flag("noheader") else HEADERS
    out += layout.render(pieces, lines, header)
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


def _layout(fmt: str | None, fields: str | None, long: bool, start: bool) -> list[layout.Piece]:
    if fields:
        return layout.fields(fields, FIELDS)
    return layout.percent(fmt or (START if start else LONG if long else DEFAULT), LETTERS, UNCUT)


def _filters(o: Any, users: list[str]) -> dict[str, Any]:
    states = [_state_name(s) for s in o.list("states")]
    params: dict[str, Any] = {
        "user": users,
        "account": o.list("account"),
        "partition": o.list("partition"),
        "job": o.list("jobs"),
        "name": o.list("name"),
    }
    if "ALL" in states:
        params.update(all=True, start=time.time() - 300)  # MinJobAge: ended in the last 5 min
    elif states:
        params["state"] = states
    return params


def _state_name(text: str) -> str:
    codes = {v: k for k, v in STATE_CODE.items()}
    up = text.upper()
    return codes.get(up, up)


def _order(r: dict[str, Any]) -> tuple[Any, ...]:
    state = r["state"]
    rank = STATE_ORDER.index(state) if state in STATE_ORDER else len(STATE_ORDER)
    part = r["run_partition"] or r["partition"] or ""
    return (part, rank, -(r["priority"] or 0), r["id"])


def _cells(r: dict[str, Any], now: float) -> dict[str, str]:
    state = r["state"]
    pending = state == "PENDING"
    started = r["start_time"] if not pending else None
    elapsed = (now if r["end_time"] is None else r["end_time"]) - started if started else 0
    limit = r["time_limit"]
    nodes = r["nodes_req"] if pending or not r["nodelist"] else _count(r["nodelist"])
    reason = r["reason"] or "None"
    jid = r["id"] if r["array_job_id"] is None else f"{r['array_job_id']}_{r['array_task_id']}"
    return {
        "jobid": str(jid),
        "jobid_raw": str(r["id"] if r["array_job_id"] is None else r["array_job_id"]),
        "array_job_id": str(r["array_job_id"] or r["id"]),
        "array_task_id": "N/A" if r["array_task_id"] is None else str(r["array_task_id"]),
        "partition": r["run_partition"] or r["partition"] or "",
        "name": r["name"] or "",
        "user": r["user"] or "",
        "account": r["account"] or "",
        "qos": r["qos"] or "",
        "st": STATE_CODE.get(state, state),
        "state": state,
        "time": duration(elapsed),
        "time_limit": duration(limit),
        "time_left": "UNLIMITED" if limit is None else duration(max(0, limit - elapsed)),
        "nodes": str(nodes or 1),
        "cpus": str(r["cpus_alloc"] or 1),
        "nodelist_reason": f"({reason})" if pending else (r["nodelist"] or ""),
        "nodelist": "" if pending else (r["nodelist"] or ""),
        "reason": reason,
        "start_time": _when(r["planned_start"] if pending else r["start_time"]),
        "submit_time": _when(r["submit_time"]),
        "end_time": _when(r["end_time"] or (started + limit if started and limit else None)),
        "schednodes": (r["planned_nodes"] or "(null)") if pending else "(null)",
        "priority": str(r["priority"] or 0),
        "priority_norm": f"{(r['priority'] or 0) / 4294967295:.8f}",
        "tres_per_node": _gres(r["gpus_req"], nodes),
    }  # fmt: skip


def _gres(gpus: int | None, nodes: int | None) -> str:
    return f"gres:gpu:{gpus // max(1, nodes or 1)}" if gpus else "N/A"


def _when(t: float | None) -> str:
    return "N/A" if t is None else timestamp(t)


def _count(nodelist: str) -> int:
    from tide.hostlist import expand

    try:
        return len(expand(nodelist))
    except ValueError:
        return 1


def _throttles(c: Any, rows: list[dict[str, Any]]) -> dict[int, int | None]:
    """Each array with pending tasks -> its %N throttle (one small request per array)."""
    first: dict[int, str] = {}
    for r in rows:
        if r["state"] == "PENDING" and r["array_job_id"] is not None:
            first.setdefault(r["array_job_id"], f"{r['array_job_id']}_{r['array_task_id']}")
    out: dict[int, int | None] = {}
    for aid, one in first.items():
        jobs = c.get(f"/v1/jobs/{one}")["jobs"]
        array = (jobs[0].get("request") or {}).get("array") if jobs else None
        out[aid] = array.get("max_running") if isinstance(array, dict) else None
    return out


def _known(c: Client, job_id: str) -> bool:
    """Whether the server has the job at all (squeue -j ID of an ended job lists nothing;
    of a job that never was, it is an error, as Slurm's once the job is purged)."""
    try:
        c.get(f"/v1/jobs/{job_id}")
    except ClientError as e:
        if e.status in (400, 404):
            return False
        raise
    return True


def _collapse_arrays(
    rows: list[dict[str, Any]], lines: list[dict[str, str]], throttles: dict[int, int | None]
) -> list[dict[str, str]]:
    """Pending tasks of one array become one line, `2_[6-9%3]`, with the first one's
    reason: Slurm keeps them in one job record (one reason) until a task starts or is
    held on its own (held tasks keep lines of their own here too)."""
    groups: dict[tuple[int, bool], list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        if r["state"] == "PENDING" and r["array_job_id"] is not None:
            held = (r["reason"] or "").startswith("JobHeld")
            groups[(r["array_job_id"], held)].append(i)
    merged: dict[int, dict[str, str]] = {}
    skip: set[int] = set()
    for (aid, _), members in groups.items():
        if len(members) < 2:
            continue
        tasks = sorted(rows[i]["array_task_id"] for i in members)
        limit = throttles.get(aid)
        line = dict(lines[members[0]])
        line["jobid"] = f"{aid}_[{index_ranges(tasks)}{'' if limit is None else f'%{limit}'}]"
        line["array_task_id"] = line["jobid"].split("_", 1)[1]
        merged[members[0]] = line
        skip.update(members[1:])
    return [merged.get(i, line) for i, line in enumerate(lines) if i not in skip]
