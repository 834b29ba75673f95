"""`tide sim export`: a tide server's job history as a twin workload (tide JSONL)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from tide.cli.plain_console import ConsoleLike


def _num(t: float) -> str:
    return f"{t:.3f}".rstrip("0").rstrip(".")


def export_history(data_dir: Path, db: str | None, out: Path, console: ConsoleLike) -> int:
    """Read the store of `data_dir` (or `db`), write `out`; returns the jobs written."""
    from tide.sim.workload.history import to_workload
    from tide.sim.workload.jsonl import write_jsonl
    from tide.store.db import StoreError, default_url
    from tide.store.history import read_history

    if db is None and not (data_dir / "tide.db").is_file():
        console.print(f"[red]error:[/red] {escape(str(data_dir))}: no tide.db there; give the "
                      "server's --data-dir, or --db URL for a PostgreSQL store")  # fmt: skip
        raise SystemExit(1)
    try:
        history = read_history(db or default_url(data_dir))
    except StoreError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        raise SystemExit(1) from None
    from tide.server.pass_log import read_passes

    logged = read_passes(data_dir)
    exported = to_workload(history, logged.passes, logged.released)
    header = {
        "source": f"tide server history ({data_dir if db is None else db}), "
        f"{len(exported.jobs)} of {len(history)} jobs",
        "epoch": f"{exported.origin:.3f}",
        "passes": ",".join(
            _num(t) if b is None else f"{_num(t)}:{int(b)}" for t, b in exported.passes
        ),
    }
    n = write_jsonl(exported.jobs, out, header)
    left = ", ".join(f"{k}: {v}" for k, v in sorted(exported.skipped.items()))
    note = f" (left out: {left})" if left else ""
    console.print(f"wrote {n} jobs to {escape(str(out))}{note}")
    return n
