"""sshare: the fair-share tree (Slurm's columns; `-l` adds NormUsage and LevelFS,
`-a` every user, `-A`, `-u`, `-n`, `-P`)."""

from __future__ import annotations

import sys
from typing import Any

from tide.slurm import layout
from tide.slurm.common import connect_api, help_exit
from tide.slurm.opts import Opt, parse

SPEC = [
    Opt("accounts", "A", ("accounts",), True, repeat=True),
    Opt("users", "u", ("users",), True, repeat=True),
    Opt("all", "a", ("all",)),
    Opt("long", "l", ("long",)),
    Opt("noheader", "n", ("noheader",)),
    Opt("parsable2", "P", ("parsable2",)),
    Opt("parsable", "p", ("parsable",)),
    Opt("help", "h", ("help", "usage")),
]
WIDTHS = {"Account": 20, "User": 10, "RawShares": 10, "NormShares": 11, "RawUsage": 11,
          "NormUsage": 11, "EffectvUsage": 13, "FairShare": 10, "LevelFS": 10}  # fmt: skip
DEFAULT = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"
LONG = "Account,User,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,FairShare,LevelFS"


def run(argv: list[str]) -> int:
    o = parse(argv, SPEC)
    if o.flag("help"):
        help_exit("sshare [-a] [-A ACCOUNTS] [-u USERS] [-l] [-n] [-P]\n  e.g. sshare -a -l")
    with connect_api() as c:
        rows = c.get("/v1/share")["rows"]
    if o.list("accounts"):
        rows = [r for r in rows if r["account"] in o.list("accounts")]
    if o.list("users"):
        rows = [r for r in rows if not r["user"] or r["user"] in o.list("users")]
    columns = layout.sacct_columns(LONG if o.flag("long") else DEFAULT, WIDTHS)
    sep = "|" if o.flag("parsable2") or o.flag("parsable") else None
    cells = [_cells(r) for r in rows]
    head = not o.flag("noheader")
    lines = layout.sacct_lines(columns, cells, head, sep, o.flag("parsable"), ("Account",))
    sys.stdout.write("".join(ln + "\n" for ln in lines))
    return 0


def _f(v: float | None) -> str:
    return "" if v is None else ("inf" if v == float("inf") else f"{v:.6f}")


def _cells(r: dict[str, Any]) -> dict[str, str]:
    account = " " * r["depth"] + r["account"]
    return {
        "Account": account,
        "User": r["user"] or "",
        "RawShares": "parent" if r["raw_shares"] == -1 else str(r["raw_shares"]),
        "NormShares": _f(r["norm_shares"]),
        "RawUsage": str(int(r["raw_usage"])),
        "NormUsage": _f(r.get("norm_usage")),
        "EffectvUsage": _f(r["eff_usage"]),
        "FairShare": _f(r["fairshare"]) if r["user"] else "",
        "LevelFS": _f(r.get("level_fs")),
    }
