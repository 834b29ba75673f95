"""scontrol: show job/node/partition/config in Slurm's key=value layout, show
hostnames/hostlist, hold/release/requeue/suspend/resume/update jobs, update nodes.

    scontrol show job 12             scontrol show hostnames 'gpu[01-03]'
    scontrol update JobId=12 TimeLimit=30:00 Priority=100
    scontrol update NodeName=gpu03 State=DRAIN Reason="bad fan"
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from tide.client.http import Client
from tide.hostlist import HostlistError, compress, expand
from tide.slurm import show
from tide.slurm.common import connect_api, help_exit, job_ids
from tide.slurm.opts import UsageError

USAGE = (
    "scontrol show {job|node|partition|config} [NAME] | show hostnames|hostlist LIST |\n"
    "                hold|release|requeue|suspend|resume JOBID... |\n"
    "                update JobId=ID KEY=VALUE... |\n"
    "                update NodeName=LIST State=DRAIN|RESUME|DOWN Reason=TEXT\n"
    "  e.g. scontrol show job 12"
)
JOB_KEYS = {  # scontrol update JobId=... keys -> PATCH /v1/jobs fields
    "timelimit": "time_limit", "priority": "priority", "nice": "nice", "jobname": "name",
    "name": "name", "partition": "partition", "qos": "qos", "account": "account",
}  # fmt: skip


def run(argv: list[str]) -> int:
    words = [w for w in argv if w not in ("-d", "--details", "-o", "--oneliner")]
    oneliner = any(w in ("-o", "--oneliner") for w in argv)
    if not words or words[0] in ("-h", "--help", "help"):
        help_exit(USAGE)
    verb, rest = words[0].lower(), words[1:]
    if verb == "show":
        return _show(rest, oneliner)
    if verb in ("hold", "uhold", "release", "requeue", "suspend", "resume"):
        return _act("hold" if verb == "uhold" else verb, rest)
    if verb == "update":
        return _update(rest)
    raise UsageError(f"invalid keyword: {words[0]}")


def _show(rest: list[str], oneliner: bool) -> int:
    if not rest:
        raise UsageError("show what? job, node, partition, config, hostnames or hostlist")
    what, names = rest[0].lower(), rest[1:]
    if what in ("hostnames", "hostlist"):
        return _hostlist(what, names)
    with connect_api() as c:
        if what in ("job", "jobs"):
            blocks = _jobs(c, names)
        elif what in ("node", "nodes"):
            blocks = _nodes(c, names)
        elif what in ("partition", "partitions"):
            blocks = _partitions(c, names)
        elif what == "config":
            sys.stdout.write(show.config(c.get("/v1/cluster")))
            return 0
        else:
            raise UsageError(f"invalid entity: {rest[0]} for keyword:show")
    sep = " " if oneliner else "\n   "
    sys.stdout.write("".join(sep.join(b) + "\n" + ("" if oneliner else "\n") for b in blocks))
    return 0


def _hostlist(what: str, names: list[str]) -> int:
    text = ",".join(names) or os.environ.get("SLURM_JOB_NODELIST", "")
    if not text:
        raise UsageError("error: no hostlist given and SLURM_JOB_NODELIST is not set")
    try:
        hosts = expand(text)
    except (HostlistError, ValueError) as e:
        raise UsageError(f"error: invalid hostlist {text!r}: {e}") from None
    out = "".join(h + "\n" for h in hosts) if what == "hostnames" else compress(hosts) + "\n"
    sys.stdout.write(out)
    return 0


def _jobs(c: Client, names: list[str]) -> list[list[str]]:
    now = time.time()
    if names:
        jobs = [j for jid in job_ids(names) for j in c.get(f"/v1/jobs/{jid}")["jobs"]]
    else:
        rows = c.get("/v1/jobs")["jobs"]
        jobs = [j for r in rows for j in c.get(f"/v1/jobs/{r['job_id']}")["jobs"]]
    if not jobs:
        sys.stdout.write("No jobs in the system\n")
    return [show.job(j, now) for j in jobs]


def _nodes(c: Client, names: list[str]) -> list[list[str]]:
    nodes = c.get("/v1/nodes")["nodes"]
    if names:
        wanted = {h for n in names for h in expand(n)}
        nodes = [n for n in nodes if n["name"] in wanted]
        if not nodes:
            raise UsageError(f"error: Node {','.join(names)} not found")
    return [show.node(n) for n in nodes]


def _partitions(c: Client, names: list[str]) -> list[list[str]]:
    parts = c.get("/v1/partitions")["partitions"]
    nodes = {n["name"]: n for n in c.get("/v1/nodes")["nodes"]}
    if names:
        parts = [p for p in parts if p["name"] in names]
        if not parts:
            raise UsageError(f"error: Partition {','.join(names)} not found")
    mode = (c.get("/v1/cluster").get("config") or {}).get("PreemptMode", "OFF")
    return [show.partition(p, nodes, mode) for p in parts]


def _act(action: str, ids: list[str]) -> int:
    if not ids:
        raise UsageError(f"error: {action}: no job id given")
    with connect_api() as c:
        for jid in job_ids(ids):
            c.post(f"/v1/jobs/{jid}/{action}")
    return 0


def _update(pairs: list[str]) -> int:
    kv = _pairs(pairs)
    if "nodename" in kv:
        return _update_node(kv)
    jid = kv.pop("jobid", None) or kv.pop("job", None)
    if jid is None:
        raise UsageError("error: update needs JobId=ID or NodeName=LIST")
    body: dict[str, Any] = {}
    for key, value in kv.items():
        field = JOB_KEYS.get(key)
        if field is None:
            raise UsageError(f"error: Update of this parameter is not supported: {key}={value}")
        body[field] = _job_value(field, value)
    with connect_api() as c:
        for one in job_ids([jid]):
            c.patch(f"/v1/jobs/{one}", body)
    return 0


def _job_value(field: str, value: str) -> Any:
    if field == "time_limit":
        from tide.jobspec.timefmt import parse_job_time

        try:
            return parse_job_time(value)
        except ValueError as e:
            raise UsageError(f"error: Invalid TimeLimit {value!r}: {e}") from None
    if field in ("priority", "nice"):
        if not value.lstrip("-").isdigit():
            raise UsageError(f"error: Invalid {field} value: {value}")
        return int(value)
    return value


def _update_node(kv: dict[str, str]) -> int:
    names, state = kv["nodename"], kv.get("state", "").upper()
    action = {"DRAIN": "drain", "RESUME": "resume", "IDLE": "resume", "UNDRAIN": "resume",
              "DOWN": "down", "FAIL": "fail"}.get(state)  # fmt: skip
    if action is None:
        raise UsageError(f"error: Invalid node state specified: {kv.get('state', '')}")
    with connect_api() as c:
        c.post(f"/v1/nodes/{names}/{action}", {"reason": kv.get("reason", "")})
    return 0


def _pairs(words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        key, eq, value = w.partition("=")
        if not eq:
            raise UsageError(f"error: invalid update argument: {w} (write KEY=VALUE)")
        out[key.lower()] = value
    return out

