"""scancel: cancel jobs by id (12, 12_3, 12_[1-3] is not expanded: give the
array id for all tasks), or every job matching the filters (`-u`, `--me`,
`-n`, `-t`, `-p`, `-A`); `-s SIGNAL` sends a signal instead."""

from __future__ import annotations

import sys
from typing import Any

from tide.client.http import ClientError
from tide.slurm.common import connect_api, get_all, help_exit, job_ids, whoami
from tide.slurm.opts import Opt, UsageError, parse
from tide.slurm.squeue import _state_name

SPEC = [
    Opt("user", "u", ("user",), True, repeat=True),
    Opt("me", "", ("me",)),
    Opt("name", "n", ("name", "jobname"), True, repeat=True),
    Opt("state", "t", ("state",), True, repeat=True),
    Opt("partition", "p", ("partition",), True, repeat=True),
    Opt("account", "A", ("account",), True, repeat=True),
    Opt("signal", "s", ("signal",), True),
    Opt("batch", "b", ("batch",)),
    Opt("quiet", "Q", ("quiet",)),
    Opt("verbose", "v", ("verbose",)),
    Opt("help", "h", ("help", "usage")),
]


def run(argv: list[str]) -> int:
    o = parse(argv, SPEC)
    if o.flag("help"):
        help_exit("scancel [JOBID...] [-u USER|--me] [-n NAME] [-t STATE] [-p PART] "
                  "[-s SIGNAL]\n  e.g. scancel --me -t PENDING")  # fmt: skip
    ids = job_ids(o.args)
    filters = any(o.list(k) for k in ("user", "name", "state", "partition", "account"))
    if not ids and not filters and not o.flag("me"):
        raise UsageError("error: No job identification provided")
    rc = 0
    with connect_api() as c:
        if not ids:
            ids = _matching(c, o)
        elif filters or o.flag("me"):
            keep = {str(r["id"]) for r in _rows(c, o, ids)}
            ids = [i for i in ids if i.split("_", 1)[0] in keep or i in keep]
        for jid in ids:
            try:
                c.delete(f"/v1/jobs/{jid}", signal=o.get("signal"))
            except ClientError as e:
                rc = 1
                if not o.flag("quiet"):
                    sys.stderr.write(f"scancel: error: Kill job error on job id {jid}: {e.error}\n")
    return rc


def _rows(c: Any, o: Any, ids: list[str] | None = None) -> list[dict[str, Any]]:
    users = o.list("user") + ([whoami(c)] if o.flag("me") else [])
    states = [_state_name(s) for s in o.list("state")]
    return get_all(c, "/v1/jobs", job=ids or [], user=users, name=o.list("name"),
                   partition=o.list("partition"), account=o.list("account"),
                   state=states or None)  # fmt: skip


def _matching(c: Any, o: Any) -> list[str]:
    """The jobs the filters select (array tasks as ARRAY_TASK)."""
    out: list[str] = []
    for r in _rows(c, o):
        jid = str(r["id"])
        if r["array_job_id"] is not None:
            jid = f"{r['array_job_id']}_{r['array_task_id']}"
        out.append(jid)
    return out
