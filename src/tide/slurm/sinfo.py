"""sinfo: partitions and nodes in Slurm's layouts.

Default: one line per partition and node state; `-N` one line per node and
partition; `-s` summary (NODES(A/I/O/T)); `-l` long; `-R` reasons of down and
drained nodes; `-o` formats; `-p`, `-t`, `-n` filters; `-h`.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tide.display import duration
from tide.hostlist import compress, expand
from tide.slurm import layout
from tide.slurm.common import connect_api, help_exit
from tide.slurm.opts import Opt, parse

SPEC = [
    Opt("partition", "p", ("partition",), True, repeat=True),
    Opt("states", "t", ("states", "state"), True, repeat=True),
    Opt("nodes", "n", ("nodes",), True),
    Opt("node", "N", ("Node",)),
    Opt("long", "l", ("long",)),
    Opt("summarize", "s", ("summarize",)),
    Opt("list_reasons", "R", ("list-reasons",)),
    Opt("format", "o", ("format",), True),
    Opt("noheader", "h", ("noheader",)),
    Opt("all", "a", ("all",)),
    Opt("help", "", ("help", "usage")),
]

DEFAULT = "%#P %.5a %.10l %.6D %.6t %N"
SUMMARY = "%#P %.5a %.10l %.16F %N"
LONG = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
NODE = "%#9N %.6D %#.9P %6t"
NODE_LONG = "%#9N %.6D %#.9P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"
REASONS = "%20E %9u %19H %N"

LETTERS = {
    "P": "partition", "R": "partition_name", "a": "avail", "l": "timelimit", "D": "nodes",
    "t": "state", "T": "state_long", "N": "nodelist", "F": "nodes_aiot", "s": "job_size",
    "r": "root", "h": "oversubscribe", "g": "groups", "c": "cpus", "z": "sct", "m": "memory",
    "d": "tmp_disk", "w": "weight", "f": "features", "E": "reason", "u": "user",
    "H": "timestamp", "G": "gres", "C": "cpus_aiot", "O": "cpu_load", "e": "free_mem",
}  # fmt: skip
HEADERS = {
    "partition": "PARTITION", "partition_name": "PARTITION", "avail": "AVAIL",
    "timelimit": "TIMELIMIT", "nodes": "NODES", "state": "STATE", "state_long": "STATE",
    "nodelist": "NODELIST", "nodes_aiot": "NODES(A/I/O/T)", "job_size": "JOB_SIZE",
    "root": "ROOT", "oversubscribe": "OVERSUBS", "groups": "GROUPS", "cpus": "CPUS",
    "sct": "S:C:T", "memory": "MEMORY", "tmp_disk": "TMP_DISK", "weight": "WEIGHT",
    "features": "AVAIL_FE", "reason": "REASON", "user": "USER", "timestamp": "TIMESTAMP",
    "gres": "GRES", "cpus_aiot": "CPUS(A/I/O/T)", "cpu_load": "CPU_LOAD", "free_mem": "FREE_MEM",
}  # fmt: skip
SHORT_STATE = {"IDLE": "idle", "MIXED": "mix", "ALLOCATED": "alloc", "DRAINING": "drng",
               "DRAINED": "drain", "DOWN": "down", "FUTURE": "futr", "COMPLETING": "comp",
               "RESERVED": "resv"}  # fmt: skip
SCT = ("sockets", "cores_per_socket", "threads_per_core")
STATE_ORDER = ["ALLOCATED", "MIXED", "IDLE", "DRAINING", "DRAINED", "DOWN", "FUTURE"]


def run(argv: list[str]) -> int:
    o = parse(argv, SPEC)
    if o.flag("help"):
        help_exit("sinfo [-N] [-l] [-s] [-R] [-p PART] [-t STATES] [-o FMT] [-h]\n"
                  "  e.g. sinfo -N -l -p gpu")  # fmt: skip
    with connect_api() as c:
        nodes = c.get("/v1/nodes")["nodes"]
        parts = c.get("/v1/partitions")["partitions"]
    nodes, parts = _filter(o, nodes, parts)
    node_view = o.flag("node")
    if o.flag("list_reasons"):
        fmt, rows = o.get("format") or REASONS, _reason_rows(nodes)
    else:
        long = o.flag("long")
        default = (NODE_LONG if long else NODE) if node_view else (LONG if long else DEFAULT)
        fmt = o.get("format") or (SUMMARY if o.flag("summarize") else default)
        rows = _node_rows(nodes, parts) if node_view else _groups(nodes, parts, o.flag("summarize"))
    out = []
    if o.flag("long"):
        out.append(time.strftime("%a %b %d %H:%M:%S %Y"))
    pieces = layout.percent(fmt, LETTERS)
    out += layout.render(pieces, rows, None if o.flag("noheader") else HEADERS)
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


def _filter(
    o: Any, nodes: list[dict[str, Any]], parts: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if o.list("partition"):
        parts = [p for p in parts if p["name"] in o.list("partition")]
    if o.get("nodes"):
        keep = set(expand(o.get("nodes")))
        nodes = [n for n in nodes if n["name"] in keep]
    if o.list("states"):
        wanted = {s.lower() for s in o.list("states")}
        nodes = [n for n in nodes if {n["state"].lower(), _short(n["state"])} & wanted]
    return nodes, parts


def _short(state: str) -> str:
    return SHORT_STATE.get(state, state.lower())


def _part_cells(p: dict[str, Any]) -> dict[str, str]:
    limit = p["max_time"]
    return {
        "partition": p["name"] + ("*" if p["default"] else ""),
        "partition_name": p["name"],
        "avail": "up" if p["state"] == "UP" else p["state"].lower(),
        "timelimit": "infinite" if limit is None else duration(limit),
        "job_size": f"1-{p['max_nodes'] or 'infinite'}",
        "root": "no",
        "oversubscribe": "NO",
        "groups": "all",
    }


def _node_cells(n: dict[str, Any]) -> dict[str, str]:
    gpus = f"gpu:{n['gpu_type']}:{n['gpus']}" if n["gpu_type"] else f"gpu:{n['gpus']}"
    reason = n["reason"] or "none"
    return {
        "nodelist": n["name"],
        "state": _short(n["state"]) + ("*" if n["state"] == "DOWN" else ""),
        "state_long": n["state"].lower(),
        "cpus": str(n["cpus"]),
        "sct": ":".join(str(n.get(k, 1)) for k in SCT),
        "memory": str(n["memory"]),
        "tmp_disk": "0",
        "weight": "1",
        "features": ",".join(n["features"]) or "(null)",
        "reason": reason,
        "gres": gpus if n["gpus"] else "(null)",
        "cpus_aiot": f"{n['cpus_alloc']}/{n['cpus'] - n['cpus_alloc']}/0/{n['cpus']}",
        "cpu_load": "N/A",
        "free_mem": "N/A",
        "nodes": "1",
    }


def _in(p: dict[str, Any], n: dict[str, Any]) -> bool:
    return n["name"] in p["nodes"] or p["name"] in n["partitions"]


def _groups(
    nodes: list[dict[str, Any]], parts: list[dict[str, Any]], summary: bool
) -> list[dict[str, str]]:
    """One row per partition and state (per partition with -s)."""
    rows = []
    for p in parts:
        members = [n for n in nodes if _in(p, n)]
        states = [None] if summary else sorted(
            {n["state"] for n in members},
            key=lambda s: STATE_ORDER.index(s) if s in STATE_ORDER else 99)  # fmt: skip
        for state in states:
            group = [n for n in members if state is None or n["state"] == state]
            row = {**_part_cells(p), **(_node_cells(group[0]) if group else {})}
            row.update(nodes=str(len(group)), nodelist=compress(n["name"] for n in group) or "")
            row.update(nodes_aiot=_aiot(group))
            if not group:
                row.update(state="n/a", state_long="n/a")
            rows.append(row)
    return rows


def _aiot(group: list[dict[str, Any]]) -> str:
    busy = sum(n["state"] in ("ALLOCATED", "MIXED", "DRAINING") for n in group)
    idle = sum(n["state"] == "IDLE" for n in group)
    return f"{busy}/{idle}/{len(group) - busy - idle}/{len(group)}"


def _node_rows(nodes: list[dict[str, Any]], parts: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One row per node and partition."""
    rows = []
    for n in nodes:
        for p in parts:
            if _in(p, n):
                rows.append({**_part_cells(p), **_node_cells(n)})
    return rows


def _reason_rows(nodes: list[dict[str, Any]]) -> list[dict[str, str]]:
    down = [n for n in nodes if n["state"] in ("DOWN", "DRAINED", "DRAINING") and n["reason"]]
    by_reason: dict[str, list[str]] = {}
    for n in down:
        by_reason.setdefault(n["reason"], []).append(n["name"])
    return [
        {"reason": r, "user": "root", "timestamp": "Unknown", "nodelist": compress(names)}
        for r, names in by_reason.items()
    ]
