"""The twin's fast paths give what the plain code gives, byte for byte: jobs.csv
rows in C against csv.writer + fmt, the report's occupancy and SVG path text in
C against numpy / Python, columns against JobResults and Samples, and the
plain option coercion of `tide sim` against Typer's own."""

from __future__ import annotations

import csv
import io
import math
import os
import random
import struct

import numpy as np
import pytest

from tide.sim.metrics import JobResult, Sample, compute_metrics
from tide.sim.outputs import _csv_special, fmt, write_jobs_csv
from tide.sim.table import ResultTable, Timeline

_countsim = pytest.importorskip("tide.sim._countsim", reason="the C kernel is not built")


def _floats(rng: random.Random, n: int) -> list[float]:
    special = [0.0, -0.0, 0.05, -0.05, 0.25, 0.35, 0.0005, 0.0015, 2.0005, -1e-9, 1e300,
               float("nan"), float("inf"), -float("inf"), 1e15 - 0.05, 123456789.5]  # fmt: skip
    out = []
    for _ in range(n):
        k = rng.random()
        if k < 0.3:
            out.append(rng.uniform(-1e4, 1e4))
        elif k < 0.5:
            out.append(float(rng.randint(-(10**9), 10**9)))
        elif k < 0.6:
            out.append(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        elif k < 0.7:
            out.append(rng.uniform(-1, 1) * 10 ** rng.randint(-8, 20))
        else:
            out.append(rng.choice(special))
    return out


def test_csv_rows_same_as_csv_writer() -> None:
    rng = random.Random(7)
    chars = ["a", ",", '"', "\n", "\r", "é", " ", "\t", ";", "\x00", "["]
    strs = ["".join(rng.choice(chars) for _ in range(rng.randint(0, 6))) for _ in range(3000)]
    ints = np.array([rng.randint(-(2**63), 2**63 - 1) for _ in range(3000)], dtype=np.int64)
    floats = np.array(_floats(rng, 3000))
    body = _countsim.csv_rows((strs, ints, floats), "sif", _csv_special(), 3)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(
        zip(strs, map(str, ints.tolist()), [fmt(v) for v in floats.tolist()], strict=True)
    )
    assert body == buf.getvalue().encode()


def test_svg_path_same_as_format() -> None:
    x = np.array(_floats(random.Random(3), 20000))
    y = x[::-1].copy()
    move = (np.arange(len(x)) % 7 == 0).astype(np.int64)
    points = zip(move.tolist(), x.tolist(), y.tolist(), strict=True)
    want = " ".join(f"{'M' if m else 'L'}{a:.1f},{b:.1f}" for m, a, b in points)
    assert _countsim.svg_path(x, y, move) == want


def test_hostlists_same_as_compress() -> None:
    from tide.hostlist import compress
    from tide.sim.count_fast import node_strings

    names = [f"gpu{i:03d}" for i in range(1, 41)]
    rng = random.Random(1)
    need = np.array([rng.randint(1, 12) for _ in range(400)], dtype=np.int64)
    ids = np.concatenate([np.sort(rng.sample(range(40), int(k))) for k in need]).astype(np.int32)
    started = np.array([rng.random() < 0.9 for _ in range(400)])
    nodelist, gpu_index = node_strings(names, 8, ids, need, started)
    bounds = np.concatenate(([0], np.cumsum(need)))
    for k in range(400):
        mine = [names[i] for i in ids[bounds[k] : bounds[k + 1]]] if started[k] else []
        assert nodelist[k] == (compress(mine) if mine else "")
        assert gpu_index[k] == (f"{compress(mine)}:0-7" if mine else "")


def _results(rng: random.Random, n: int) -> list[JobResult]:
    out = []
    for k in range(n):
        submit = float(rng.randint(0, 5000))
        start = submit + rng.choice([0.0, 1.5, 60.0, 999.25]) if rng.random() < 0.9 else None
        end = start + rng.uniform(0, 3000) if start is not None and rng.random() < 0.95 else None
        nodes = rng.randint(1, 4)
        first = rng.randint(1, 20 - nodes)
        hosts = [f"gpu{first + i:02d}" for i in range(nodes)]
        out.append(JobResult(
            k + 1, f"j{k}", f"u{k % 3}", rng.choice(["a", "b", "c,d"]), "p", "normal",
            gpus=4 * nodes, nodes=nodes, submit=submit, start=start, end=end,
            eligible=submit + 5 if rng.random() < 0.2 else None,
            state="COMPLETED" if end is not None else "PENDING",
            nodelist=f"gpu[{first:02d}-{first + nodes - 1:02d}]" if nodes > 1 else hosts[0],
            gpu_index=";".join(f"{h}:0-3" for h in hosts) if start is not None else "",
            held_idle_gpu_seconds=rng.choice([0.0, 12.5]), deadlocked=rng.random() < 0.05,
            lost_gpu_seconds=rng.choice([0.0, 7.125]),
        ))  # fmt: skip
    return out


def test_table_round_trip_and_jobs_csv(tmp_path: os.PathLike[str]) -> None:
    rs = _results(random.Random(2), 300)
    tab = ResultTable.from_results(rs)
    assert tab.to_results() == rs
    a, b = f"{tmp_path}/a.csv", f"{tmp_path}/b.csv"
    write_jobs_csv(a, tab)
    os.environ["TIDE_NO_C"] = "1"
    try:
        write_jobs_csv(b, rs)
    finally:
        del os.environ["TIDE_NO_C"]
    with open(a, "rb") as fa, open(b, "rb") as fb:
        assert fa.read() == fb.read()


def test_timeline_round_trip_and_time_order() -> None:
    samples = [Sample(5.0, 3, 0, 1, {"a": 1, "b": 2}), Sample(1.0, 1, 1, 2, {}),
               Sample(5.0, 0, 0, 0, {"b": 4})]  # fmt: skip
    tl = Timeline.from_samples(samples)
    assert [s.t for s in tl.to_samples()] == [1.0, 5.0, 5.0]
    assert [s.by_account for s in tl.to_samples()] == [{}, {"a": 1, "b": 2}, {"b": 4}]
    raw = Timeline(np.array([5.0, 1.0]), np.array([3, 1]), np.array([0, 1]), np.array([1, 2]),
                   np.array([0, 2, 2]), np.array([0, 1]), np.array([1, 2]), ["a", "b"])  # fmt: skip
    sorted_ = raw.in_time_order()
    assert sorted_.t.tolist() == [1.0, 5.0] and sorted_.first.tolist() == [0, 0, 2]


def test_report_occupancy_same_with_and_without_c(monkeypatch: pytest.MonkeyPatch) -> None:
    from tide.sim import report
    from tide.sim.workload.clusters import tree_cluster

    rs = _results(random.Random(4), 400)
    cluster = tree_cluster("t", nodes=20, nodes_per_leaf=4)  # gpu01..gpu20 under 5 leaves
    runs = {"tree": report.RunData(rs, 80, cluster=cluster), "blocks": report.RunData(rs[::2], 80),
            "flat": report.RunData(rs[1::3], 80, cluster=tree_cluster("f", 20, 20))}  # fmt: skip
    fast = report.render_report(runs)
    monkeypatch.setenv("TIDE_NO_C", "1")
    assert report.render_report(runs) == fast


def test_metrics_same_from_objects_and_columns() -> None:
    rs = _results(random.Random(5), 200)
    samples = [Sample(float(t), t % 7, t % 3, t % 5, {"a": t % 4, "b": 1})
               for t in range(0, 900, 9)]  # fmt: skip
    a = compute_metrics(rs, 80, samples, {"a": 1, "b": 2})
    b = compute_metrics(ResultTable.from_results(rs), 80, Timeline.from_samples(samples),
                        {"a": 1, "b": 2})  # fmt: skip
    assert a == b and not math.isnan(a["mean_wait"])


def test_sim_options_same_as_typer() -> None:
    """The plain coercion of `tide sim` options: Typer's results and errors."""
    from typer import core
    from typer._coercion import build_runtime_param
    from typer.main import get_command

    from tide.cli import fast_params
    from tide.cli.sim import sim_app

    params = {p.name: p for p in get_command(sim_app).commands["run"].params}  # type: ignore[attr-defined]
    saved = core.build_runtime_param
    try:
        assert fast_params.install()
        cases = {
            "policy": ["slurm", ""], "seed": ["0", "-3", "007", "+5", "1_000", " 12", "1e3", "x",
                                              7, True],
            "mttr": ["3600", "-0", "2.5", "-0.0", "1e3", ".5", "x", 3600.0, 2],
            "out": ["out/sim", "/tmp", "-"], "bf_interval": ["0", "12", "1.5"],
            # ranges (IntRange x>=1, FloatRange x>=0, 0<=x<=1): in range, on the bounds, out
            "max_procs": ["1", "128", "0", "-4", "1.5", 5, 0],
            "price": ["0", "2.5", "-0.5", "-0", "1e3", 0.0, -1.0],
            "mfu": ["0", "1", "0.45", "1.01", "-0.1", "2", 1, 0.5],
        }  # fmt: skip
        for name, values in cases.items():
            p = params[name]
            fast = core.build_runtime_param(p.type_descriptor)
            plain = build_runtime_param(p.type_descriptor)
            for v in values:
                got, want = _outcome(fast, v, p), _outcome(plain, v, p)
                assert got == want and type(got) is type(want), (name, v, got, want)
    finally:
        core.build_runtime_param = saved


def _outcome(rp: object, value: object, param: object) -> object:
    try:
        return rp.coerce(value, param=param, ctx=None)  # type: ignore[attr-defined]
    except Exception as e:  # the message is what is compared
        return f"{type(e).__name__}: {e}"


COMPARE_OWN = ("policies", "parallel", "patterns", "days", "investment", "opex", "burst_price",
               "baseline")  # fmt: skip


def test_run_and_compare_share_options() -> None:
    """One definition of the replay options; each command keeps its own first
    option and `--out` default."""
    from typer.main import get_command

    from tide.cli.sim import _REPLAY_OPTIONS, sim_app

    cmds = get_command(sim_app).commands  # type: ignore[attr-defined]
    shared = [name for name, _, _ in _REPLAY_OPTIONS]
    for cmd, own, out in (
        ("run", ["policy"], "out/sim"),
        ("compare", [*COMPARE_OWN], "out/compare"),
    ):
        params = {p.name: p for p in cmds[cmd].params if p.name != "help"}
        assert list(params) == [*own, *shared]
        assert str(params["out"].default) == out and params["mttr"].default == 3600.0
        assert params["gpus_per_node"].opts == ["--gpus-per-node"]


def test_parse_swf_numbers_as_float() -> None:
    """parse_swf reads every plain number as float() does, and gives up (None)
    on a token float() would not take or the SWF reader would not split."""
    rng = random.Random(9)
    good = ["0", "-0", "12", "-12", "007", "123456789012345", "1234567890123456", "-1",
            "1.5", "+3", "1e3", ".5", "5.", "-0.0", "9999999999999999999"]  # fmt: skip
    odd = ["12a", "a", "-", "--1", "1-2"]
    for _ in range(3000):
        width = rng.randint(1, 4)
        rows = [[rng.choice(good) for _ in range(width)] for _ in range(rng.randint(1, 4))]
        spoil = rng.random() < 0.3
        if spoil:
            rows[rng.randrange(len(rows))][rng.randrange(width)] = rng.choice(odd)
        text = rng.choice(["\n", "\r\n"]).join(rng.choice([" ", "\t", "  "]).join(r) for r in rows)
        out = _countsim.parse_swf(text.encode(), width)
        if spoil:
            assert out is None, text
            continue
        got = np.frombuffer(out, dtype=np.float64).tolist()
        want = [float(t) for r in rows for t in r]
        assert [math.copysign(1, v) for v in got] == [math.copysign(1, v) for v in want]
        assert got == want, text


def test_percentiles_bit_for_bit_numpy() -> None:
    from tide.sim.metrics import percentiles

    rng = np.random.default_rng(1)
    for trial in range(3000):
        n = int(rng.integers(1, 40)) if trial % 3 else int(rng.integers(1, 3000))
        x = [rng.random(n) * 1e5, rng.integers(0, 900, n).astype(float),
             np.round(rng.normal(0, 1e4, n), 3)][trial % 3]  # fmt: skip
        want = np.percentile(x, [50, 95, 99], method="linear").tolist()
        assert [v.hex() for v in percentiles(x, (50, 95, 99))] == [v.hex() for v in want]


def test_jobs_csv_in_chunks_is_the_same_file(tmp_path: os.PathLike[str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """jobs.csv written a few rows at a time (C and Python) equals it written whole."""
    tab = ResultTable.from_results(_results(random.Random(3), 300))
    whole, parts = f"{tmp_path}/whole.csv", f"{tmp_path}/parts.csv"
    for no_c in ("", "1"):
        monkeypatch.setenv("TIDE_NO_C", no_c)
        write_jobs_csv(whole, tab, chunk=10**9)
        assert write_jobs_csv(parts, tab, chunk=7) == 300
        with open(whole, "rb") as fa, open(parts, "rb") as fb:
            assert fa.read() == fb.read()
    empty = ResultTable.from_results([])
    write_jobs_csv(parts, empty, chunk=7)
    with open(parts) as f:
        assert f.read().count("\n") == 1  # the header alone


def test_csv_rows_to_a_write_callable_same_bytes() -> None:
    """csv_rows handing its text to write() in pieces gives the text it returns whole."""
    rng = random.Random(11)
    n = 5000  # ~3 pieces of 64 KiB
    strs = [rng.choice(["", "a,b", 'q"q', "n[001-004]", "é" * rng.randint(0, 9)]) * 3
            for _ in range(n)]  # fmt: skip
    ints = np.array([rng.randint(-(2**63), 2**63 - 1) for _ in range(n)], dtype=np.int64)
    floats = np.array(_floats(rng, n))
    cols = (strs, ints, floats, strs)
    whole = _countsim.csv_rows(cols, "sifs", _csv_special(), 3)
    pieces: list[bytes] = []
    assert _countsim.csv_rows(cols, "sifs", _csv_special(), 3, pieces.append) is None
    assert len(pieces) > 1 and all(type(p) is bytes for p in pieces)
    assert b"".join(pieces) == whole
    empty: list[bytes] = []
    _countsim.csv_rows(([], np.zeros(0, dtype=np.int64)), "si", _csv_special(), 3, empty.append)
    assert b"".join(empty) == b""

    def refuse(piece: bytes) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        _countsim.csv_rows(cols, "sifs", _csv_special(), 3, refuse)


def test_numbered_and_suffixed_as_f_strings() -> None:
    """The C kernel's per-job labels equal the f-strings they replace (ASCII or not)."""
    rng = random.Random(5)
    values = np.array([rng.randint(-(2**63), 2**63 - 1) for _ in range(2000)] + [0, -1, 10],
                      dtype=np.int64)  # fmt: skip
    for prefix in ("job", "", "é-", "n"):
        assert _countsim.numbered(prefix, values) == [f"{prefix}{v}" for v in values.tolist()]
    items = [rng.choice(["", "n001", "gpu[01-04,07]", "ü7", "x" * 40]) for _ in range(2000)]
    for suffix in (":0", ":0-7", "", "·"):
        assert _countsim.suffixed(items, suffix) == [f"{x}{suffix}" if x else "" for x in items]
    with pytest.raises(TypeError):
        _countsim.suffixed(["a", 3], ":0")  # type: ignore[list-item]


def test_keep_heap_on_glibc() -> None:
    """keep_heap() sets glibc's thresholds (True there), in a process of its own:
    it changes the allocator for the rest of the process."""
    import platform
    import subprocess
    import sys

    code = "from tide.sim import _countsim; print(_countsim.keep_heap())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    assert out == str(platform.libc_ver()[0] == "glibc")


def test_account_series_as_read_off_the_samples() -> None:
    """Timeline.account_series: per account, the samples that list it (rising) and
    its GPUs there, as read sample by sample (empty samples included)."""
    rng = random.Random(9)
    names = [f"a{k}" for k in range(7)]
    samples = []
    for k in range(400):
        listed = rng.sample(names, rng.choice([0, 0, 1, 3, 7]))
        samples.append(Sample(float(k), 8, 0, 1, {a: rng.randint(1, 9) for a in listed}))
    tl = Timeline.from_samples(samples)
    want: dict[str, tuple[list[int], list[int]]] = {}
    for k, s in enumerate(samples):
        for a, g in s.by_account.items():
            want.setdefault(a, ([], []))
            want[a][0].append(k)
            want[a][1].append(g)
    got = tl.account_series()
    assert sorted(got) == sorted(want)
    for a, (pos, gpus) in got.items():
        assert (pos.tolist(), gpus.tolist()) == want[a]


def test_parse_swf_line_ends_comments_and_blanks() -> None:
    """parse_swf's result sized from the line count: any mix of \\n, \\r\\n and \\r,
    comments, blank lines, a last line without an end, rows wider than asked;
    the rows as float() reads them, the result writable (the filters fix fields)."""
    rng = random.Random(12)
    for _ in range(500):
        width = rng.randint(1, 5)
        lines, want = [], []
        for _ in range(rng.randint(0, 12)):
            kind = rng.random()
            if kind < 0.15:
                lines.append(rng.choice(["", "  ", "\t"]))
            elif kind < 0.3:
                lines.append("; " + rng.choice(["MaxProcs: 4", "x y", ""]))
            else:
                row = [str(rng.randint(-9, 99999)) for _ in range(width + rng.choice([0, 0, 2]))]
                lines.append(" ".join(row))
                want.extend(float(t) for t in row[:width])
        ends = [rng.choice(["\n", "\r\n", "\r"]) for _ in lines]
        text = "".join(a + b for a, b in zip(lines, ends, strict=True))
        if lines and rng.random() < 0.5:
            text = text[: -len(ends[-1])]  # no end on the last line
        out = _countsim.parse_swf(text.encode(), width)
        assert isinstance(out, bytearray)
        assert np.frombuffer(out, dtype=np.float64).tolist() == want, repr(text)


def test_hostlists_of_non_ascii_names_same_as_compress() -> None:
    """Node names beyond ASCII take the kernel's decoding branch: the same hostlists."""
    from tide.hostlist import compress
    from tide.sim.count_fast import node_strings

    rng = random.Random(4)
    for names in ([f"nœud{i:02d}" for i in range(1, 30)], [f"n{i:03d}·a" for i in range(1, 30)]):
        need = np.array([rng.randint(1, 9) for _ in range(200)], dtype=np.int64)
        ids = np.concatenate([np.sort(rng.sample(range(29), int(k))) for k in need])
        started = np.array([rng.random() < 0.9 for _ in range(200)])
        nodelist, gpu_index = node_strings(names, 1, ids.astype(np.int32), need, started)
        bounds = np.concatenate(([0], np.cumsum(need)))
        for k in range(200):
            mine = [names[i] for i in ids[bounds[k] : bounds[k + 1]]] if started[k] else []
            assert nodelist[k] == (compress(mine) if mine else "")
            assert gpu_index[k] == (f"{nodelist[k]}:0" if mine else "")
