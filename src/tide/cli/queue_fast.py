"""`tide queue` without Typer: the same options, the server's squeue text.

The server renders the table from its in-memory queue (tide.server.queue_text);
this parses the few options, asks for it and prints it. `--json` and `--help`
go through the Typer command (tide.cli.jobs.queue), which shares `filters`.
"""

from __future__ import annotations

import sys
from typing import Any

from tide.client.http import ClientError, connect
from tide.display import STATE_CODE
from tide.slurm.opts import Opt, UsageError, parse

SPEC = [
    Opt("user", "u", ("user",), True, repeat=True),
    Opt("account", "A", ("account",), True, repeat=True),
    Opt("partition", "p", ("partition",), True, repeat=True),
    Opt("states", "t", ("states",), True, repeat=True),
    Opt("jobs", "j", ("jobs",), True, repeat=True),
    Opt("name", "n", ("name",), True, repeat=True),
    Opt("start", "", ("start",)),
]


def filters(
    user: list[str], account: list[str], partition: list[str], states: list[str],
    jobs: list[str], name: list[str],
) -> dict[str, Any]:  # fmt: skip
    """The GET /v1/jobs query of a queue listing (state codes such as PD spelled out)."""
    codes = {v: k for k, v in STATE_CODE.items()}
    st = [codes.get(s.upper(), s.upper()) for s in states]
    return {"state": st or None, "user": user, "account": account, "partition": partition,
            "job": jobs, "name": name}  # fmt: skip


def queue(argv: list[str]) -> int:
    try:
        o = parse(argv, SPEC)
        if o.args:
            raise UsageError(f"unexpected argument {o.args[0]!r}")
    except UsageError as e:
        sys.stderr.write(f"tide: error: {e}\n  fix: see `tide queue --help`\n")
        return 2
    params = filters(*(o.list(k) for k in ("user", "account", "partition", "states", "jobs",
                                             "name")))  # fmt: skip
    client = connect()
    try:
        fmt = "squeue-start" if o.flag("start") else "squeue"
        sys.stdout.write(client.get_text("/v1/jobs", format=fmt, **params))
    except ClientError as e:
        where = f" ({e.field})" if e.field and e.field not in e.error else ""
        fix = f"  fix: {e.fix}\n" if e.fix else ""
        sys.stderr.write(f"tide: error: {e.error}{where}\n{fix}")
        return 1
    finally:
        client.close()
    return 0
