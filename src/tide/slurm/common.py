"""What the Slurm-named commands share: the server connection, who am I, --help."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from tide.client.http import Client, connect
from tide.slurm.opts import UsageError


def connect_api() -> Client:
    """The tide server at TIDE_URL with the discovered token (tide.client.discovery)."""
    return connect()


def whoami(c: Client) -> str:
    """The user the server knows this caller as (--me)."""
    return str(c.get("/v1/whoami")["user"])


def help_exit(usage: str) -> NoReturn:
    sys.stdout.write(f"Usage: {usage}\n(tide's {usage.split()[0]}: docs/slurm-commands.md)\n")
    raise SystemExit(0)


def job_ids(words: list[str]) -> list[str]:
    """Job ids as Slurm writes them: 12, 12_3, 12_[1-3] (checked, not expanded)."""
    out = []
    for w in (x for word in words for x in word.split(",") if x):
        head = w.split("_", 1)[0]
        if not head.isdigit():
            raise UsageError(f"Invalid job id specified: {w}")
        out.append(w)
    return out


def get_all(c: Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """A columnar job listing as dicts."""
    data = c.get(path, format="columns", **params)
    return [dict(zip(data["columns"], r, strict=True)) for r in data["rows"]]
