"""sreport: usage over a period. `sreport cluster AccountUtilizationByUser`,
`sreport user TopUsage`, `sreport cluster Utilization` with `start=`/`end=`
(default: yesterday), `-P`, `-n`. tide accounts GPUs: usage is reported in
GPU minutes (sreport's `--tres=gres/gpu`), with tide's cost column."""

from __future__ import annotations

import sys
import time

from tide.display import midnight, parse_time, timestamp
from tide.slurm import layout
from tide.slurm.common import connect_api, help_exit
from tide.slurm.opts import Opt, UsageError, parse

SPEC = [
    Opt("parsable2", "P", ("parsable2",)),
    Opt("parsable", "p", ("parsable",)),
    Opt("noheader", "n", ("noheader",)),
    Opt("tres", "T", ("tres",), True),
    Opt("time", "t", ("time",), True),
    Opt("help", "h", ("help", "usage")),
]
REPORTS = {
    ("cluster", "accountutilizationbyuser"): ("account", "Cluster/Account/User Utilization"),
    ("user", "topusage"): ("user", "Top Users"),
    ("cluster", "utilization"): ("total", "Cluster Utilization"),
}
WIDTHS = {"Account": 15, "Login": 9, "Used": 10, "Jobs": 6, "Cost": 10}


def run(argv: list[str]) -> int:
    o = parse(argv, SPEC)
    words = [w for w in o.args if "=" not in w]
    kv = dict(w.split("=", 1) for w in o.args if "=" in w)
    if o.flag("help") or len(words) < 2:
        help_exit("sreport cluster AccountUtilizationByUser|Utilization | user TopUsage "
                  "[start=TIME] [end=TIME] [-P]\n  e.g. sreport user TopUsage start=now-7days")
    key = (words[0].lower(), words[1].lower())
    if key not in REPORTS:
        raise UsageError(f"Not valid report {words[0]} {words[1]}")
    by, title = REPORTS[key]
    now = time.time()
    try:
        end = parse_time(kv["end"]) if kv.get("end") else midnight(now)
        start = parse_time(kv["start"]) if kv.get("start") else end - 86400
    except ValueError as e:
        raise UsageError(f"error: {e}") from None
    with connect_api() as c:
        group = "user" if by != "total" else "account"
        data = c.get("/v1/usage/report", start=start, end=end, by=group)
    rows = data["lines"]
    if by == "total":
        rows = [{"account": "", "user": "", "gpu_hours": data["total_gpu_hours"],
                 "jobs": sum(r["jobs"] for r in rows), "cost": data["total_cost"]}]  # fmt: skip
    cells = [{"Account": r["account"], "Login": r.get("user") or "", "Jobs": str(r["jobs"]),
              "Used": str(round(r["gpu_hours"] * 60)), "Cost": f"{r['cost']:.2f}"}
             for r in rows]  # fmt: skip
    names = {"account": "Account,Login,Used,Jobs,Cost", "user": "Login,Account,Used,Jobs,Cost",
             "total": "Used,Jobs,Cost"}[by]  # fmt: skip
    sep = "|" if o.flag("parsable2") or o.flag("parsable") else None
    out = []
    if sep is None and not o.flag("noheader"):
        bar = "-" * 80
        out += [bar, f"{title} {timestamp(start)} - {timestamp(end)}",
                "Usage reported in GPU Minutes", bar]  # fmt: skip
    columns = layout.sacct_columns(names, WIDTHS)
    out += layout.sacct_lines(columns, cells, not o.flag("noheader"), sep, o.flag("parsable"))
    sys.stdout.write("".join(ln + "\n" for ln in out))
    return 0
