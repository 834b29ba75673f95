"""QOS definitions as `sacctmgr -P show qos` prints them (tide's QOS section).

Dumps from older Slurm have no QOS lines. Paste the output of

    sacctmgr -P show qos format=Name,Priority,Preempt,PreemptMode,GraceTime,UsageFactor,\
Flags,MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU,MaxTRES,GrpTRES,GrpJobs

(or plain `sacctmgr -P show qos`) into the dump file or into qos.txt next to
it: a header line starting `Name|`, then one `|`-separated row per QOS
(`-p` output with a trailing `|` works too). Column names are sacctmgr's.
"""

from __future__ import annotations

from pathlib import Path

from tide.config.errors import Warnings
from tide.config.sacctmgr_fields import set_qos_option
from tide.config.values import Loc
from tide.model import Qos


def read_qos_table(path: Path, warn: Warnings) -> dict[str, Qos]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise Loc(path.name).error(f"cannot read {path}: {e.strerror or e}",
                                   "check the path and its permissions") from None
    rows = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")]
    return parse_qos_rows(rows, path.name, warn)


def parse_qos_rows(rows: list[tuple[int, str]], file: str, warn: Warnings) -> dict[str, Qos]:
    """rows[0] is the header; returns QOS by name, in row order."""
    if not rows:
        return {}
    head_line, head = rows[0]
    trailing = head.endswith("|")  # `-p` output ends every line with '|'
    columns = _cells(head, trailing)
    if not columns or columns[0].lower() != "name":
        raise Loc(file, head_line).error("QOS table header must start with Name|",
                                         "paste the output of `sacctmgr -P show qos`")
    out: dict[str, Qos] = {}
    warned: set[str] = set()
    for lineno, row in rows[1:]:
        loc = Loc(file, lineno)
        cells = _cells(row, trailing)
        if len(cells) != len(columns):
            raise loc.error(f"QOS row has {len(cells)} fields, the header {len(columns)}",
                            "keep every row in the same format as the header")
        qos = Qos(cells[0].strip())
        for col, cell in zip(columns[1:], cells[1:], strict=True):
            if cell:  # empty = not set
                set_qos_option(qos, col, cell, loc, warn, warned)
        out[qos.name] = qos
    return out


def _cells(line: str, trailing: bool) -> list[str]:
    text = line[:-1] if trailing and line.endswith("|") else line
    return [c.strip() for c in text.split("|")]
