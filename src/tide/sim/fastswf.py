"""SWF logs read as columns: the same jobs as `read_swf`, in milliseconds.

`read_swf` handles a record at a time in Python (about 50 µs a line). Here
the text is parsed in blocks, by the C helper `_countsim.parse_swf` when it
is built, else by numpy, and the filters run on whole columns. Every rule,
its order and its counts follow tide.sim.workload.swf exactly;
tests/sim/test_countsim.py compares the two on the bundled-trace logs.

Anything the fast path does not cover (a short line, a token that is not a
plain decimal number, a non-ASCII byte, `keep_original`) goes to
`read_swf`, which also writes the error messages.
"""

from __future__ import annotations

import os
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tide.sim.workload.base import SimJob, Workload, WorkloadError, WorkloadInfo
from tide.sim.workload.swf import (
    _EPOCH_LIKE,
    Estimates,
    SwfFilter,
    SwfInfo,
    _request,
    read_swf,
)

try:
    from tide.sim import _countsim
except ImportError:  # not built: numpy parses
    _countsim = None  # type: ignore[assignment]

WIDTH = 18  # SWF fields used; extended logs append more
# bytes of text inflated and parsed at a time: memory stays bounded, and a freed block's
# memory serves the next (a whole SDSC-SP2 log at once paged in ~20 MB more)
BLOCK = 1 << 20
_INT_SAFE = 2.0**62  # |x| below this converts to int64 exactly as int() does
# the fields the columns take: job, submit, run, requested procs and time, user, group
_USED = [0, 1, 3, 7, 8, 11, 12]


@dataclass(slots=True)
class SwfColumns:
    """The kept jobs, file order. Times in seconds from the trace start."""

    id: np.ndarray  # int64
    submit: np.ndarray  # float64
    run: np.ndarray  # float64, capped at the request (strong filter)
    procs: np.ndarray  # int64
    limit: np.ndarray  # int64 time limit (requested, or the run time with exact estimates)
    uid: np.ndarray  # int64
    gid: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.id)

    def users(self) -> list[str]:
        uniq, inv = np.unique(self.uid, return_inverse=True)  # no order of names needed
        names = [_label("u", v) for v in uniq.tolist()]
        return list(map(names.__getitem__, inv.reshape(-1).tolist()))

    def accounts(self) -> list[str]:
        return self.account_codes().labels()

    def account_codes(self) -> Coded:
        return coded(self.gid, "g")


@dataclass(slots=True)
class Coded:
    """A column of labels as codes: entry k is names[codes[k]]; names in order of
    first appearance (as a dict filled entry by entry would hold them)."""

    codes: np.ndarray  # int64
    names: list[str]

    def labels(self) -> list[str]:
        return list(map(self.names.__getitem__, self.codes.tolist()))


def _label(prefix: str, v: int) -> str:
    return f"{prefix}{v}" if v >= 0 else "unknown"


def coded(values: np.ndarray, prefix: str) -> Coded:
    """f"{prefix}{v}" for v >= 0, else "unknown" (as swf._to_job), as codes: one
    label per distinct value, not one string per entry."""
    uniq, first, inv = np.unique(values, return_index=True, return_inverse=True)
    labels = [_label(prefix, v) for v in uniq.tolist()]
    index: dict[str, int] = {}  # several negative values share "unknown"
    code = np.empty(len(uniq), dtype=np.int64)
    for u in np.argsort(first, kind="stable").tolist():
        code[u] = index.setdefault(labels[u], len(index))
    return Coded(code[inv.reshape(-1)], list(index))


class SwfWorkload(Workload):
    """A Workload over an SWF log that also hands out its columns.

    Iterating yields the SimJobs `read_swf` would; `columns()` gives the
    same jobs as arrays (the count driver takes them without any SimJob).
    The log is parsed once, on first use; only the kept columns are held.
    """

    def __init__(
        self, info: SwfInfo, path: Path, filt: SwfFilter, estimates: Estimates, epoch: bool
    ) -> None:
        super().__init__(info, self._iter_jobs)
        self.swf_info = info
        self.path, self.filt, self.estimates = path, filt, estimates
        self._epoch = epoch  # no UnixStartTime header: rebase epoch-like submits
        self._cols: SwfColumns | None = None
        self._tally: tuple[int, Counter[str], Counter[str], str | None] | None = None

    def columns(self) -> SwfColumns:
        """The kept jobs as columns; `info` counts as after one full pass."""
        cols = self._load()
        self._count(self.info)
        self.info.kept = len(cols)
        return cols

    def _load(self) -> SwfColumns:
        if self._cols is None:
            self._cols, self._tally = _parse(self.path, self.swf_info, self.filt, self.estimates,
                                             self._epoch)  # fmt: skip
        return self._cols

    def _count(self, info: WorkloadInfo) -> None:
        assert self._tally is not None
        read, dropped, adjusted, note = self._tally
        info.read, info.kept = read, 0  # Workload.__iter__ counts kept jobs as they go
        info.dropped.clear()
        info.dropped.update(dropped)
        info.adjusted.clear()
        info.adjusted.update(adjusted)
        if note:  # read_swf notes the rebase on each pass
            info.notes.append(note)

    def _iter_jobs(self, info: WorkloadInfo) -> Iterator[SimJob]:
        assert isinstance(info, SwfInfo)
        cols = self._load()
        self._count(info)
        users, accounts = cols.users(), cols.accounts()
        rows = zip(
            cols.id.tolist(), cols.submit.tolist(), cols.run.tolist(), cols.procs.tolist(),
            cols.limit.tolist(), users, accounts, strict=True,
        )  # fmt: skip
        for jid, submit, run, procs, limit, user, account in rows:
            req = _request(procs, info, limit, f"job{jid}", account)
            yield SimJob(id=jid, submit=submit, duration=run, request=req, user=user,
                         account=account)  # fmt: skip


def read_swf_fast(
    path: str | Path,
    *,
    filter: SwfFilter = "strong",
    estimates: Estimates = "user",
    gpus_per_node: int = 1,
    max_procs: int | None = None,
    keep_original: bool = False,
) -> Workload:
    """`read_swf` with the same arguments and jobs, parsed as columns (SwfWorkload).
    `keep_original` needs the raw fields of every record: the plain reader then."""
    plain = read_swf(path, filter=filter, estimates=estimates, gpus_per_node=gpus_per_node,
                     max_procs=max_procs, keep_original=keep_original)  # fmt: skip
    if keep_original:
        return plain
    info = plain.info
    assert isinstance(info, SwfInfo)  # read_swf checked the arguments and read the header
    return SwfWorkload(info, Path(path), filter, estimates, info.unix_start_time is None)


# -- parsing ----------------------------------------------------------------------


class _Slow(Exception):
    """The fast path cannot tell: the plain reader decides (and words any error)."""


def _parse(
    path: Path, info: SwfInfo, filt: SwfFilter, estimates: Estimates, epoch: bool
) -> tuple[SwfColumns, tuple[int, Counter[str], Counter[str], str | None]]:
    try:
        return _parse_fast(path, info, filt, estimates, epoch)
    except _Slow:
        return _parse_slow(path, info, filt, estimates, epoch)


def _parse_fast(
    path: Path, info: SwfInfo, filt: SwfFilter, estimates: Estimates, epoch: bool
) -> tuple[SwfColumns, tuple[int, Counter[str], Counter[str], str | None]]:
    tally = _Tally()
    parts: list[np.ndarray] = []
    read = 0
    for rows in _blocks(path):
        read += len(rows)
        keep = _strong(rows, info.max_procs or 0, tally) if filt == "strong" else (
            _lenient(rows, info.max_procs, tally))  # fmt: skip
        parts.append(rows[keep][:, _USED])  # the kept rows' fields the columns take
        tally.base += len(rows)
    f = np.concatenate(parts) if parts else np.zeros((0, len(_USED)))
    job_id, submit, run, procs, req_time, uid, gid = (f[:, k] for k in range(len(_USED)))
    used = f[:, [0, 2, 3, 4, 5, 6]]  # the fields read as integers below
    if not np.isfinite(submit).all() or not (np.abs(used) < _INT_SAFE).all():
        raise _Slow  # int() of inf/NaN fails there, with its own message
    origin, note = 0.0, None
    if epoch and len(f) and submit[0] > _EPOCH_LIKE:
        origin = float(submit[0])
        note = f"submit times are epoch seconds; rebased to {origin:.0f}"
    if estimates == "user":
        limit = np.trunc(req_time).astype(np.int64)
    else:
        limit = np.maximum(1.0, np.ceil(run)).astype(np.int64)
    cols = SwfColumns(
        id=np.trunc(job_id).astype(np.int64),
        submit=submit - origin,
        run=np.ascontiguousarray(run),
        procs=np.trunc(procs).astype(np.int64),
        limit=limit,
        uid=np.trunc(uid).astype(np.int64),
        gid=np.trunc(gid).astype(np.int64),
    )
    if note:
        info.unix_start_time = int(origin)
    return cols, (read, tally.counter(tally.dropped), tally.counter(tally.adjusted), note)


def _parse_slow(
    path: Path, info: SwfInfo, filt: SwfFilter, estimates: Estimates, epoch: bool
) -> tuple[SwfColumns, tuple[int, Counter[str], Counter[str], str | None]]:
    """The plain reader's jobs, gathered into columns."""
    saved = info.unix_start_time
    if epoch:
        info.unix_start_time = None  # as on a first pass
    notes = len(info.notes)
    wl = read_swf(path, filter=filt, estimates=estimates, gpus_per_node=1,
                  max_procs=info.max_procs)  # fmt: skip
    wl.info = info  # count into ours
    jobs = list(wl)
    note = info.notes[notes] if len(info.notes) > notes else None
    del info.notes[notes:]
    if not epoch:
        info.unix_start_time = saved
    cols = SwfColumns(
        id=np.array([j.id for j in jobs], dtype=np.int64),
        submit=np.array([j.submit for j in jobs], dtype=np.float64),
        run=np.array([j.duration for j in jobs], dtype=np.float64),
        procs=np.array([j.request.gpus or j.request.nodes_min for j in jobs], dtype=np.int64),
        limit=np.array([j.request.time_limit for j in jobs], dtype=np.int64),
        uid=np.array([_num(j.user) for j in jobs], dtype=np.int64),
        gid=np.array([_num(j.account) for j in jobs], dtype=np.int64),
    )
    return cols, (info.read, Counter(info.dropped), Counter(info.adjusted), note)


def _num(label: str) -> int:
    return -1 if label == "unknown" else int(label[1:])


def _chunks(path: Path) -> Iterator[bytes]:
    """The file's bytes, a block at a time; a .gz file inflated by zlib directly
    (gzip's reader adds Python-level copies and checksums). Anything unusual about
    the compressed stream (a bad header, trailing bytes, a truncated member) is
    _Slow: the plain reader reads it and says what is wrong."""
    with path.open("rb") as f:
        if path.suffix != ".gz":
            while chunk := f.read(BLOCK):
                yield chunk
            return
        d = zlib.decompressobj(31)  # gzip wrapper; CRC and size checked by zlib
        fresh = True  # at the start of a member
        while raw := f.read(BLOCK):
            full = False  # the last piece filled BLOCK: zlib may hold more text
            while raw or full:
                if fresh and not raw.startswith(b"\x1f\x8b"):
                    raise _Slow
                try:
                    out = d.decompress(raw, BLOCK)  # at most BLOCK bytes of text
                except zlib.error:
                    raise _Slow from None
                fresh, full = False, len(out) == BLOCK
                if out:
                    yield out
                raw = d.unconsumed_tail  # input left when the text filled BLOCK
                if d.eof:  # another member may follow, as gzip.open reads it
                    raw, d, fresh, full = d.unused_data, zlib.decompressobj(31), True, False
        if not fresh:
            raise _Slow  # the last member ended early


def _blocks(path: Path) -> Iterator[np.ndarray]:
    """The records, a block of text at a time, as (rows, WIDTH) float64."""
    parse = _parse_c if _countsim is not None and not os.environ.get("TIDE_NO_C") else _parse_np
    rest = b""
    for chunk in _chunks(path):
        text = rest + chunk
        cut = max(text.rfind(b"\n"), text.rfind(b"\r")) + 1
        rest = text[cut:]
        if cut:
            yield parse(text[:cut])
    if rest:
        yield parse(rest)


def _parse_c(text: bytes) -> np.ndarray:
    out = _countsim.parse_swf(text, WIDTH)
    if out is None:
        raise _Slow
    return np.frombuffer(out, dtype=np.float64).reshape(-1, WIDTH)


def _parse_np(text: bytes) -> np.ndarray:
    """numpy's parser, on text made only of plain decimal numbers."""
    lines = [s for s in (line.strip() for line in text.splitlines()) if s and s[:1] != b";"]
    if not lines:
        return np.zeros((0, WIDTH))
    if any(len(s.split()) != WIDTH for s in lines):
        raise _Slow  # short lines (an error) and extended logs: the plain reader
    body = b"\n".join(lines)
    if body.translate(None, b"0123456789+-.eE \t\v\f\n"):
        raise _Slow  # inf, nan, 1_000, non-ASCII: float() rules, in the plain reader
    try:
        values = np.array(body.split(), dtype=np.float64)
    except ValueError:
        raise _Slow from None
    return values.reshape(-1, WIDTH)


# -- the filters, on columns ----------------------------------------------------------


class _Tally:
    """Drop and adjust counts, keyed in first-occurrence order like the plain reader's."""

    def __init__(self) -> None:
        self.base = 0  # rows before the current block
        self.dropped: dict[str, tuple[int, int]] = {}  # reason -> (count, first row)
        self.adjusted: dict[str, tuple[int, int]] = {}

    def add(self, table: dict[str, tuple[int, int]], reason: str, mask: np.ndarray) -> None:
        n = int(mask.sum())
        if n:
            count, first = table.get(reason, (0, self.base + int(mask.argmax())))
            table[reason] = (count + n, first)

    @staticmethod
    def counter(table: dict[str, tuple[int, int]]) -> Counter[str]:
        # equal first rows keep rule order: dicts keep insertion order and sort is stable
        items = sorted(table.items(), key=lambda kv: kv[1][1])
        return Counter({k: v[0] for k, v in items})


def _strong(f: np.ndarray, m: int, tally: _Tally) -> np.ndarray:
    """swf._strong on every row at once; fixes f in place; returns the kept rows."""
    drop: Callable[[str, np.ndarray], None] = lambda r, k: tally.add(tally.dropped, r, k)  # noqa: E731
    adjust: Callable[[str, np.ndarray], None] = lambda r, k: tally.add(tally.adjusted, r, k)  # noqa: E731
    alive = ~(f[:, 4] > m)
    drop("allocated procs > MaxProcs", ~alive)
    d = alive & (f[:, 7] > m)
    drop("requested procs > MaxProcs", d)
    alive &= ~d
    req_pos, alloc_pos = f[:, 7] > 0, f[:, 4] > 0
    fix = alive & ~(req_pos & alloc_pos)
    a = fix & req_pos
    f[a, 4] = f[a, 7]
    adjust("allocated procs <= 0: set to requested", a)
    b = fix & ~req_pos & alloc_pos
    f[b, 7] = f[b, 4]
    adjust("requested procs <= 0: set to allocated", b)
    d = fix & ~req_pos & ~alloc_pos
    drop("no processor count (allocated and requested <= 0)", d)
    alive &= ~d
    for col, reason in ((3, "run time <= 0"), (8, "requested time <= 0")):
        d = alive & (f[:, col] <= 0)
        drop(reason, d)
        alive &= ~d
    a = alive & (f[:, 8] < f[:, 3])
    f[a, 3] = f[a, 8]
    adjust("run time > requested time: run capped at request", a)
    d = alive & (f[:, 1] < 0)
    drop("submit < 0", d)
    return alive & ~d


def _lenient(f: np.ndarray, max_procs: int | None, tally: _Tally) -> np.ndarray:
    """swf._lenient on every row at once; fixes f in place; returns the kept rows."""
    d = f[:, 1] < 0
    tally.add(tally.dropped, "submit time missing (-1)", d)
    alive = ~d
    fix = alive & (f[:, 7] <= 0)
    d = fix & (f[:, 4] <= 0)
    tally.add(tally.dropped, "no processor count (allocated and requested <= 0)", d)
    a = fix & ~d
    f[a, 7] = f[a, 4]
    tally.add(tally.adjusted, "requested procs missing: set to allocated", a)
    alive &= ~d
    a = alive & (f[:, 3] < 0)
    f[a, 3] = 0.0
    tally.add(tally.adjusted, "run time missing (never ran): duration 0", a)
    a = alive & (f[:, 8] <= 0)
    f[a, 8] = np.maximum(1.0, np.ceil(f[a, 3]))
    tally.add(tally.adjusted, "requested time missing: limit = run time", a)
    if max_procs:
        a = alive & (f[:, 7] > max_procs)
        tally.add(tally.adjusted, "wider than MaxProcs: kept, can never start", a)
    return alive


__all__ = ["Coded", "SwfColumns", "SwfWorkload", "WorkloadError", "coded", "read_swf_fast"]
