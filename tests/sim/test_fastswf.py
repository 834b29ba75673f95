"""SWF read as columns (tide.sim.fastswf) gives what read_swf gives: the same
SimJobs, counts and notes, through the C parser and through numpy, in blocks
or whole, and falls back to read_swf for whatever it does not parse itself."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from sim_traces import TRACES, needs_traces

from tide.sim import fastswf
from tide.sim.fastswf import SwfWorkload, read_swf_fast
from tide.sim.workload import WorkloadError, read_swf
from tide.sim.workload.base import SimJob, Workload

HEADER = "; Version: 2.2\n; MaxProcs: 16\n; MaxNodes: 16\n; UnixStartTime: 1000\n"
# job submit wait run alloc cpu mem req_procs req_time mem_req status uid gid exe q part p t
ROWS = [
    "1 0 5 100 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # kept
    "2 10 0 50 17 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # allocated > MaxProcs
    "3 20 0 50 4 -1 -1 17 200 -1 1 3 7 -1 -1 -1 -1 -1",  # requested > MaxProcs
    "4 30 0 50 -1 -1 -1 2 200 -1 1 3 7 -1 -1 -1 -1 -1",  # allocated := requested
    "5 40 0 50 3 -1 -1 -1 200 -1 1 4 -1 -1 -1 -1 -1 -1",  # requested := allocated, gid -1
    "6 50 0 50 -1 -1 -1 -1 200 -1 1 3 7 -1 -1 -1 -1 -1",  # no processor count
    "7 60 0 0 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # run time 0
    "8 70 0 50 4 -1 -1 4 -1 -1 1 3 7 -1 -1 -1 -1 -1",  # requested time -1
    "9 80 0 300 4 -1 -1 4 200 -1 0 -1 7 -1 -1 -1 -1 -1",  # run capped at 200, uid -1
    "10 -1 0 50 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # submit < 0
    "11 -5 0 0 17 -1 -1 -1 -1 -1 1 3 7 -1 -1 -1 -1 -1",  # every rule fails
    "12 90 0 50.5 2 -1 -1 2 60.7 -1 1 3 7 -1 -1 -1 -1 -1",  # fractions
    "13 95 0 -1 4 -1 -1 0.5 200 -1 5 3 7 -1 -1 -1 -1 -1",  # run -1, procs 0.5
    "14 99 0 1e2 1 -1 -1 -0 1.5E2 -1 1 3 7 -1 -1 -1 -1 -1",  # exponents, -0
    "15 99 0 .5 1 -1 -1 +1 1. -1 1 3 7 -1 -1 -1 -1 -1",  # .5, +1, 1.
]


def _key(j: SimJob) -> tuple[object, ...]:
    r = j.request
    nan = j.duration != j.duration  # NaN passes both filters; NaN != NaN
    return (j.id, j.submit, "nan" if nan else j.duration, j.user, j.account, j.name, r.name,
            r.nodes_min, r.nodes_max, r.gpus, r.gpus_per_node, r.time_limit, r.account)  # fmt: skip


def _facts(w: Workload) -> tuple[object, ...]:
    i = w.info
    return (i.read, i.kept, list(i.dropped.items()), list(i.adjusted.items()), i.notes,
            i.unix_start_time, i.max_procs)  # fmt: skip


@pytest.fixture(params=["c", "numpy"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "c":
        if fastswf._countsim is None:
            pytest.skip("tide.sim._countsim is not built (pip install -e . compiles it)")
        monkeypatch.delenv("TIDE_NO_C", raising=False)
    else:
        monkeypatch.setenv("TIDE_NO_C", "1")
    return str(request.param)


_REFERENCE: dict[tuple[str, str], tuple[object, tuple[object, ...] | None]] = {}


def _reference(path: Path, **kw: object) -> tuple[object, tuple[object, ...] | None]:
    """read_swf's jobs and counts (or its error); kept for the big logs, read once."""
    key = (str(path), repr(sorted(kw.items())))
    if key not in _REFERENCE:
        try:
            slow = read_swf(path, **kw)  # type: ignore[arg-type]
            want: object = [_key(j) for j in slow]
            facts: tuple[object, ...] | None = _facts(slow)
        except (WorkloadError, ValueError, OverflowError) as e:
            want, facts = (type(e), str(e)), None
        if path.stat().st_size < 1 << 20:
            return want, facts
        _REFERENCE[key] = (want, facts)
    return _REFERENCE[key]


def _same(path: Path, **kw: object) -> SwfWorkload:
    """read_swf_fast and read_swf agree on jobs and on every count; the fast one."""
    want, facts = _reference(path, **kw)
    fast = read_swf_fast(path, **kw)  # type: ignore[arg-type]
    assert isinstance(fast, SwfWorkload)
    try:
        got: object = [_key(j) for j in fast]
    except (WorkloadError, ValueError, OverflowError) as e:
        got = (type(e), str(e))
    assert got == want
    if facts is not None:
        assert _facts(fast) == facts
    return fast


def _write(tmp_path: Path, text: str, name: str = "log.swf") -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(text.encode("latin-1")))
    else:
        p.write_bytes(text.encode("latin-1"))
    return p


@pytest.mark.parametrize("filt", ["strong", "none"])
@pytest.mark.parametrize("estimates", ["user", "exact"])
@pytest.mark.parametrize("gpn", [1, 4])
def test_rules_counts_and_jobs(
    tmp_path: Path, parser: str, filt: str, estimates: str, gpn: int
) -> None:
    p = _write(tmp_path, HEADER + "\n".join(ROWS) + "\n")
    w = _same(p, filter=filt, estimates=estimates, gpus_per_node=gpn)
    cols = w.columns()
    assert len(cols) == w.info.kept
    assert cols.id.tolist() == [j.id for j in w]


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_blocks_cut_anywhere(
    tmp_path: Path, parser: str, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fastswf, "BLOCK", block)
    text = HEADER + "\r\n".join(ROWS * 5) + "\r\n\n; trailing comment\n   \n" + ROWS[0]  # no EOL
    _same(_write(tmp_path, text, "log.swf.gz"))


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
@pytest.mark.parametrize("shape", ["members", "truncated", "trailing bytes"])
def test_gzip_members_and_damage_in_blocks(
    tmp_path: Path, parser: str, block: int, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text inflated at most `block` bytes at a time: two gzip members read as one log
    (as gzip.open reads them); a truncated stream or bytes after it go to read_swf,
    which refuses them with gzip's own error, as on the plain reader."""
    monkeypatch.setattr(fastswf, "BLOCK", block)
    body = "\n".join(ROWS * 9) + "\n"
    one, two = gzip.compress((HEADER + body).encode()), gzip.compress(body.encode())
    data = {"members": one + two, "truncated": one[:-30], "trailing bytes": one + b"junk"}
    p = tmp_path / "log.swf.gz"
    p.write_bytes(data[shape])
    if shape == "members":
        _same(p)
        return
    with pytest.raises((EOFError, OSError)) as plain:
        list(read_swf(p))
    with pytest.raises(type(plain.value), match=re.escape(str(plain.value))):
        list(read_swf_fast(p))


@pytest.mark.parametrize(
    "row, fast",
    [
        ("16 99 0 50 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1 x y", True),  # extended log
        ("16 99 0 50 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1 ; trailing", True),
        ("16 99 0 inf 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1", False),  # float() forms
        ("16 99 0 1_000 4 -1 -1 4 2_000 -1 1 3 7 -1 -1 -1 -1 -1", False),
        ("16 99 0 nan 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1", False),
        ("16 99 0 1e400 4 -1 -1 4 1e400 -1 1 3 7 -1 -1 -1 -1 -1", True),  # inf: int() fails
        ("16 99 0 50 4 -1 -1 4 200 -1 1 3 7", False),  # short: the plain reader's error
        ("16 99 0 5x 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1", False),  # not a number
        ("16 99 0 50 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 \xa0-1", False),  # latin-1 space
        ("16\x1c99 0 50 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1", False),  # str.split() space
        ("; caf\xe9 comment", True),
    ],
)
def test_odd_records(tmp_path: Path, parser: str, row: str, fast: bool) -> None:
    p = _write(tmp_path, HEADER + "\n".join([*ROWS[:3], row, *ROWS[3:]]) + "\n")
    _same(p)
    _same(p, filter="none", estimates="exact")
    if parser == "c" and fastswf._countsim is not None:
        parsed = fastswf._countsim.parse_swf(p.read_bytes(), 18)
        assert (parsed is not None) == fast


def test_epoch_submits_rebased(tmp_path: Path, parser: str) -> None:
    rows = [r.split() for r in ROWS[:5]]
    for r in rows:
        r[1] = str(1_300_000_000 + int(r[1]))
    text = "; MaxProcs: 16\n" + "\n".join(" ".join(r) for r in rows) + "\n"
    w = _same(_write(tmp_path, text))
    assert w.info.unix_start_time == 1_300_000_000
    assert w.columns().submit.tolist()[0] == 0.0
    assert [j.submit for j in w] == [j.submit for j in w]  # every pass rebases


def test_max_procs_override_and_errors(tmp_path: Path, parser: str) -> None:
    p = _write(tmp_path, HEADER + "\n".join(ROWS) + "\n")
    _same(p, max_procs=3)
    with pytest.raises(WorkloadError, match="does not exist"):
        read_swf_fast(tmp_path / "missing.swf")
    with pytest.raises(WorkloadError, match="filter="):
        read_swf_fast(p, filter="weak")  # type: ignore[arg-type]


def test_keep_original_is_the_plain_reader(tmp_path: Path) -> None:
    p = _write(tmp_path, HEADER + "\n".join(ROWS) + "\n")
    w = read_swf_fast(p, keep_original=True)
    assert not isinstance(w, SwfWorkload)
    assert w.jobs()[0].original["procs_req"] == 4


# ---------------------------------------------------------------- real traces




@needs_traces
@pytest.mark.parametrize("filt", ["strong", "none"])
def test_kth_same_as_read_swf(parser: str, filt: str) -> None:
    assert TRACES is not None
    w = _same(TRACES / "kth-sp2" / "KTH-SP2-1996-2.swf", filter=filt)
    assert w.info.kept == (28481 if filt == "strong" else 28489)


@needs_traces
@pytest.mark.slow
def test_sdsc_same_as_read_swf(parser: str) -> None:
    assert TRACES is not None
    w = _same(TRACES / "sdsc-sp2" / "SDSC-SP2-1998-4.2-cln.swf.gz", estimates="exact")
    assert w.info.kept == 53999 and w.info.read == 59715


def test_coded_labels_as_a_dict_fills_them() -> None:
    """fastswf.coded: the labels per entry as swf writes them, the names in order of
    first appearance (what a dict filled entry by entry holds), negative values
    all "unknown" under one code."""
    import random

    import numpy as np

    rng = random.Random(2)
    for n in (0, 1, 50, 3000):
        values = np.array([rng.choice([-1, -7, 0, 3, 12, 40, 7, 99999]) for _ in range(n)],
                          dtype=np.int64)  # fmt: skip
        got = fastswf.coded(values, "g")
        want = [f"g{v}" if v >= 0 else "unknown" for v in values.tolist()]
        index: dict[str, int] = {}
        codes = [index.setdefault(a, len(index)) for a in want]
        assert got.labels() == want
        assert got.codes.tolist() == codes and got.names == list(index)
