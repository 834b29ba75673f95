"""The twin's files: jobs.csv (one row per job) and metrics.json.

Both are byte-identical for identical runs: fixed column and key order,
numbers printed by `fmt` (at most 3 decimals for times, 6 for metrics, no
exponent, no "-0"), "\\n" line ends.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from tide.hostlist import compress, index_ranges
from tide.model import Cluster
from tide.sim.metrics import JobResult

if TYPE_CHECKING:
    from tide.sched.types import Allocation
    from tide.sim.table import ResultTable

JOB_COLUMNS = (
    "job_id", "name", "user", "account", "partition", "qos", "gpus", "nodes", "submit",
    "eligible", "start", "end", "wait", "run", "state", "restarts", "lost_gpu_seconds",
    "leaf_switches", "nodelist", "gpu_index", "cpu_ids",
    # after the agreed columns: the rest of JobResult
    "min_leaf_switches", "held_idle_gpu_seconds", "deadlocked",
)  # fmt: skip


def fmt(x: float | int | None, decimals: int = 3) -> str:
    """'' for None; integers as integers; else fixed-point, trailing zeros cut."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, int):
        return str(x)
    if not math.isfinite(x):
        return ""
    s = f"{x:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def node_indices(pairs: Iterable[tuple[str, Iterable[int]]]) -> str:
    """Per node its GPU (or CPU) indices, consecutive nodes with the same ones
    as one hostlist, so a 4,096-node job on whole nodes is one group:
    [('gpu001', [0,1,2,3]), ('gpu002', [4,5,6,7])] -> 'gpu001:0-3;gpu002:4-7',
    [('gpu001', [0,1]), ('gpu002', [0,1])] -> 'gpu[001-002]:0-1'."""
    groups: list[tuple[list[str], str]] = []
    for node, idx in pairs:
        ranges = index_ranges(idx)
        if not ranges:
            continue
        if groups and groups[-1][1] == ranges:
            groups[-1][0].append(node)
        else:
            groups.append(([node], ranges))
    return ";".join(f"{compress(nodes)}:{ranges}" for nodes, ranges in groups)


def alloc_strings(cluster: Cluster, alloc: Allocation) -> tuple[str, str, str]:
    """(nodelist, gpu_index, cpu_ids) of an allocation, for JobResult."""
    names = [cluster.nodes[n.node].name for n in alloc.nodes]
    gpus = node_indices((cluster.nodes[n.node].name, n.gpus) for n in alloc.nodes)
    cpus = node_indices((cluster.nodes[n.node].name, n.cores) for n in alloc.nodes)
    return compress(names), gpus, cpus


def job_row(r: JobResult) -> list[str]:
    return [
        str(r.job_id), r.name, r.user, r.account, r.partition, r.qos, str(r.gpus), str(r.nodes),
        fmt(r.submit), fmt(r.ready), fmt(r.start), fmt(r.end), fmt(r.wait), fmt(r.run),
        r.state, str(r.restarts), fmt(r.lost_gpu_seconds), str(r.leaf_switches), r.nodelist,
        r.gpu_index, r.cpu_ids, str(r.min_leaf_switches), fmt(r.held_idle_gpu_seconds),
        fmt(r.deadlocked),
    ]  # fmt: skip


def fmt_column(x: np.ndarray, decimals: int = 3) -> list[str]:
    """fmt() of every entry of a float array (NaN and infinities: ""), a column at a time."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        whole = (np.abs(x) < _WHOLE) & (np.trunc(x) == x)  # NaN and inf: False
    out = list(map(str, np.where(whole, x, 0.0).astype(np.int64).tolist()))
    if not whole.all():
        odd = np.flatnonzero(~whole)
        for k, v in zip(odd.tolist(), x[odd].tolist(), strict=True):
            out[k] = fmt(v, decimals)
    return out


_WHOLE = 2.0**62  # integral floats below this print as their int64


def int_column(x: np.ndarray) -> list[str]:
    return list(map(str, np.asarray(x).tolist()))


def job_columns(tab: ResultTable) -> list[tuple[str, list[str] | np.ndarray]]:
    """The columns of jobs.csv (JOB_COLUMNS) with their kind: 's' strings as
    written, 'i' integers, 'f' times and amounts that fmt() writes (NaN: "")."""
    ready = tab.ready
    return [
        ("i", tab.job_id), ("s", tab.name), ("s", tab.user), ("s", tab.account),
        ("s", tab.partition), ("s", tab.qos), ("i", tab.gpus), ("i", tab.nodes),
        ("f", tab.submit), ("f", ready), ("f", tab.start), ("f", tab.end),
        ("f", tab.start - ready), ("f", tab.end - tab.start), ("s", tab.state),
        ("i", tab.restarts), ("f", tab.lost_gpu_seconds), ("i", tab.leaf_switches),
        ("s", tab.nodelist), ("s", tab.gpu_index), ("s", tab.cpu_ids),
        ("i", tab.min_leaf_switches), ("f", tab.held_idle_gpu_seconds),
        ("i", tab.deadlocked.astype(np.int64)),
    ]  # fmt: skip


CSV_CHUNK = 1 << 16  # rows formatted at a time: a million-row file is never held whole


def write_jobs_csv(
    path: str | Path, results: Iterable[JobResult] | ResultTable, chunk: int = CSV_CHUNK
) -> int:
    """One row per job in the order given; returns the number of rows. The same
    bytes as csv.writer over job_row() (QUOTE_MINIMAL, "\n" line ends), built a
    column at a time (in C when the kernel is built), `chunk` rows at a time."""
    from tide.sim.table import ResultTable

    tab = results if isinstance(results, ResultTable) else ResultTable.from_results(results)
    cols = job_columns(tab)
    write_rows = _csv_writer()
    if write_rows is not None:
        kinds = "".join(k for k, _ in cols)
        data = [np.ascontiguousarray(c, dtype=np.float64 if k == "f" else np.int64)
                if k != "s" else c for k, c in cols]  # fmt: skip
        with _open(path, "wb") as f:
            f.write((",".join(JOB_COLUMNS) + "\n").encode())
            for lo in range(0, len(tab), chunk):
                part = data if len(tab) <= chunk else [c[lo : lo + chunk] for c in data]
                write_rows(tuple(part), kinds, f)
        return len(tab)
    with _open(path, "w") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(JOB_COLUMNS)
        for lo in range(0, len(tab), chunk):
            text = [c[lo : lo + chunk] if isinstance(c, list)
                    else fmt_column(c[lo : lo + chunk]) if k == "f"
                    else int_column(c[lo : lo + chunk]) for k, c in cols]  # fmt: skip
            w.writerows(zip(*text, strict=True))
    return len(tab)


def _open(path: str | Path, mode: str) -> IO[Any]:
    """A jobs.csv for reading or writing; gzip-compressed when its name ends in .gz."""
    p = Path(path)
    if p.name.endswith(".gz"):
        import gzip
        import io

        if "b" in mode:
            return gzip.open(p, mode, compresslevel=3)  # type: ignore[return-value]
        # what gzip.open does in text mode, spelled out: its return type is a union
        # (a mode that is not a literal could be binary)
        return io.TextIOWrapper(gzip.GzipFile(p, mode, compresslevel=3), encoding="utf-8",
                                newline="")  # fmt: skip
    if "b" in mode:
        return p.open(mode)
    return p.open(mode, newline="", encoding="utf-8")


def _csv_writer() -> Callable[[tuple[Any, ...], str, IO[bytes]], object] | None:
    """(columns, kinds, file) -> the rows written by the kernel's csv_rows, or None
    without the kernel. It hands the file ~64 KiB at a time (no copy of the whole
    text: 7 MB and its page faults on SDSC-SP2); an older build returns the text."""
    if os.environ.get("TIDE_NO_C"):
        return None
    try:
        from tide.sim import _countsim
    except ImportError:
        return None
    rows, special = _countsim.csv_rows, _csv_special()
    if getattr(_countsim, "CSV_ROWS_WRITE", 0):
        return lambda cols, kinds, f: rows(cols, kinds, special, 3, f.write)
    return lambda cols, kinds, f: f.write(rows(cols, kinds, special, 3))


@lru_cache(maxsize=1)
def _csv_special() -> str:
    """The ASCII characters that make csv.writer (QUOTE_MINIMAL, "\n" line ends)
    quote a field, asked of this Python's csv module itself."""
    out = []
    for c in map(chr, range(1, 128)):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([f"a{c}b", "z"])
        if buf.getvalue() != f"a{c}b,z\n":
            out.append(c)
    return "".join(out)


def _stable(value: Any) -> Any:
    """Round floats to 6 decimals (and -0.0, NaN, inf to 0/None) for stable JSON."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        v = round(value, 6)
        return 0.0 if v == 0 else v
    if isinstance(value, dict):
        return {str(k): _stable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_stable(v) for v in value]
    return value


def metrics_json(metrics: dict[str, Any]) -> str:
    return json.dumps(_stable(metrics), sort_keys=True, indent=2) + "\n"


def write_metrics_json(path: str | Path, metrics: dict[str, Any]) -> None:
    Path(path).write_text(metrics_json(metrics), encoding="utf-8")


def read_jobs_csv(path: str | Path) -> list[JobResult]:
    """jobs.csv back into JobResults (for `tide sim report` on saved runs)."""
    out: list[JobResult] = []
    with _open(path, "r") as f:
        for row in csv.DictReader(f):
            out.append(_result(row))
    return out


def _opt(s: str | None) -> float | None:
    return float(s) if s not in (None, "") else None


def _result(row: dict[str, str]) -> JobResult:
    get: Sequence[str] = ("name", "user", "account", "partition", "qos", "state",
                          "nodelist", "gpu_index", "cpu_ids")  # fmt: skip
    return JobResult(
        job_id=int(row["job_id"]),
        gpus=int(row["gpus"]),
        nodes=int(row["nodes"]),
        submit=float(row["submit"]),
        eligible=_opt(row.get("eligible")),
        start=_opt(row.get("start")),
        end=_opt(row.get("end")),
        restarts=int(row.get("restarts") or 0),
        lost_gpu_seconds=float(row.get("lost_gpu_seconds") or 0),
        leaf_switches=int(row.get("leaf_switches") or 0),
        min_leaf_switches=int(row.get("min_leaf_switches") or 0),
        held_idle_gpu_seconds=float(row.get("held_idle_gpu_seconds") or 0),
        deadlocked=row.get("deadlocked") == "1",
        **{k: row.get(k, "") for k in get},  # type: ignore[arg-type]
    )
