"""sprio: priority factors of pending jobs in Slurm's layout (`-l` adds USER,
ASSOC, QOS and NICE; `-j`, `-u`, `-p`, `-h`, `-n` normalised is not modelled)."""

from __future__ import annotations

import sys
from typing import Any

from tide.slurm import layout
from tide.slurm.common import connect_api, help_exit, job_ids
from tide.slurm.opts import Opt, parse

SPEC = [
    Opt("jobs", "j", ("jobs",), True, repeat=True),
    Opt("user", "u", ("user",), True, repeat=True),
    Opt("partition", "p", ("partition",), True, repeat=True),
    Opt("long", "l", ("long",)),
    Opt("noheader", "h", ("noheader",)),
    Opt("format", "o", ("format",), True),
    Opt("help", "", ("help", "usage")),
]
DEFAULT = "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.20T"
LONG = "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"
LETTERS = {"i": "jobid", "r": "partition", "u": "user", "Y": "priority", "S": "site",
           "A": "age", "B": "assoc", "F": "fairshare", "J": "jobsize", "P": "part",
           "Q": "qos", "N": "nice", "T": "tres"}  # fmt: skip
HEADERS = {"jobid": "JOBID", "partition": "PARTITION", "user": "USER", "priority": "PRIORITY",
           "site": "SITE", "age": "AGE", "assoc": "ASSOC", "fairshare": "FAIRSHARE",
           "jobsize": "JOBSIZE", "part": "PARTITION", "qos": "QOS", "nice": "NICE",
           "tres": "TRES"}  # fmt: skip


def run(argv: list[str]) -> int:
    o = parse(argv, SPEC)
    if o.flag("help"):
        help_exit("sprio [-j IDS] [-u USER] [-p PART] [-l] [-h] [-o FMT]\n  e.g. sprio -l -u alice")
    with connect_api() as c:
        rows = c.get("/v1/priority", job=job_ids(o.list("jobs")), user=o.list("user"))["jobs"]
    if o.list("partition"):
        rows = [r for r in rows if r["partition"] in o.list("partition")]
    rows = collapse_arrays(rows)
    cells = [
        {
            "jobid": str(r["job_id"]),
            "partition": r["partition"] or "",
            "user": r["user"],
            "priority": str(int(r["total"])),
            "site": str(int(r["site"])),
            "age": str(int(r["age"])),
            "assoc": str(int(r["assoc"])),
            "fairshare": str(int(r["fairshare"])),
            "jobsize": str(int(r["job_size"])),
            "part": str(int(r["partition_factor"])),
            "qos": str(int(r["qos"])),
            "nice": str(int(r["nice"])),
            "tres": ",".join(f"{k}={int(v)}" for k, v in (r.get("tres") or {}).items() if int(v)),
        }
        for r in rows
    ]
    fmt = o.get("format") or (LONG if o.flag("long") else DEFAULT)
    header = None if o.flag("noheader") else HEADERS
    lines = layout.render(layout.percent(fmt, LETTERS), cells, header)
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def collapse_arrays(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Slurm keeps an array's pending tasks in one record until they start, and sprio
    prints it once under the array's id: here too, with its first task's factors."""
    out, seen = [], set()
    for r in rows:
        head, sep, _ = str(r["job_id"]).partition("_")
        if sep:
            if head in seen:
                continue
            seen.add(head)
            r = {**r, "job_id": head}
        out.append(r)
    return out
