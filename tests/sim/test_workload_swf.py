"""SWF reader: predictsim's strong filter rule by rule, the lenient filter,
GPU mapping, and the real KTH / SDSC counts."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from sim_traces import TRACES, needs_traces

from tide.sim.workload import WorkloadError, read_swf

HEADER = "; Version: 2.2\n; MaxProcs: 16\n; MaxNodes: 16\n; UnixStartTime: 1000\n"
# job submit wait run alloc cpu mem req_procs req_time mem_req status uid gid exe q part p t
ROWS = [
    "1 0 5 100 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # kept as is
    "2 10 0 50 17 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # rule 1: allocated > MaxProcs
    "3 20 0 50 4 -1 -1 17 200 -1 1 3 7 -1 -1 -1 -1 -1",  # rule 1: requested > MaxProcs
    "4 30 0 50 -1 -1 -1 2 200 -1 1 3 7 -1 -1 -1 -1 -1",  # rule 2: allocated := requested
    "5 40 0 50 3 -1 -1 -1 200 -1 1 4 -1 -1 -1 -1 -1 -1",  # rule 2: requested := allocated
    "6 50 0 50 -1 -1 -1 -1 200 -1 1 3 7 -1 -1 -1 -1 -1",  # rule 2: neither -> drop
    "7 60 0 0 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # rule 3: run time 0
    "8 70 0 50 4 -1 -1 4 -1 -1 1 3 7 -1 -1 -1 -1 -1",  # rule 4: requested time -1
    "9 80 0 300 4 -1 -1 4 200 -1 0 3 7 -1 -1 -1 -1 -1",  # rule 5: run capped at 200
    "10 -1 0 50 4 -1 -1 4 200 -1 1 3 7 -1 -1 -1 -1 -1",  # rule 6: submit < 0
    "11 -5 0 0 17 -1 -1 -1 -1 -1 1 3 7 -1 -1 -1 -1 -1",  # every rule fails: rule 1 counts
    "12 90 0 50 17 -1 -1 2 200 -1 1 3 7 -1 -1 -1 -1 -1",  # allocated checked before requested
    "13 95 0 -1 4 -1 -1 4 200 -1 5 3 7 -1 -1 -1 -1 -1",  # run time -1 (cancelled)
]


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    p = tmp_path / "mini.swf"
    p.write_text(HEADER + "\n".join(ROWS) + "\n")
    return p


def test_strong_filter_each_rule(mini: Path) -> None:
    w = read_swf(mini)
    jobs = w.jobs()
    assert [j.id for j in jobs] == [1, 4, 5, 9]
    assert w.info.read == 13 and w.info.kept == 4
    assert dict(w.info.dropped) == {
        "allocated procs > MaxProcs": 3,  # 2, 11, 12
        "requested procs > MaxProcs": 1,  # 3
        "no processor count (allocated and requested <= 0)": 1,  # 6
        "run time <= 0": 2,  # 7, 13
        "requested time <= 0": 1,  # 8
        "submit < 0": 1,  # 10
    }
    assert dict(w.info.adjusted) == {
        "allocated procs <= 0: set to requested": 1,
        "requested procs <= 0: set to allocated": 1,
        "run time > requested time: run capped at request": 1,
    }
    by = {j.id: j for j in jobs}
    assert [by[i].request.nodes_min for i in (1, 4, 5, 9)] == [4, 2, 3, 4]
    assert by[9].duration == 200 and by[9].request.time_limit == 200
    assert by[1].duration == 100 and by[1].request.time_limit == 200
    assert (by[1].user, by[1].account, by[5].account) == ("u3", "g7", "unknown")
    assert by[1].submit == 0 and by[4].submit == 30


def test_exact_estimates(mini: Path) -> None:
    jobs = read_swf(mini, estimates="exact").jobs()
    assert [j.request.time_limit for j in jobs] == [100, 50, 50, 200]


def test_filter_none_keeps_usable_records(mini: Path) -> None:
    w = read_swf(mini, filter="none")
    ids = [j.id for j in w]
    assert ids == [1, 2, 3, 4, 5, 7, 8, 9, 12, 13]
    assert dict(w.info.dropped) == {
        "submit time missing (-1)": 2,
        "no processor count (allocated and requested <= 0)": 1,
    }
    by = {j.id: j for j in w.jobs()}
    assert by[13].duration == 0 and by[13].request.time_limit == 200
    assert by[8].request.time_limit == 50  # requested time -1 -> run time
    assert by[9].duration == 300  # not capped: the engine enforces the limit
    assert by[5].request.nodes_min == 3  # requested -1 -> allocated
    assert w.info.adjusted["wider than MaxProcs: kept, can never start"] == 1  # job 3


def test_gpus_per_node_mapping_and_flat_cluster(mini: Path) -> None:
    w = read_swf(mini, gpus_per_node=8)
    j = w.jobs()[0]
    assert (j.request.gpus, j.request.nodes_min, j.request.nodes_max) == (4, 1, 2)
    assert j.request.gpus_per_node is None
    one = read_swf(mini).jobs()[0].request
    assert (one.nodes_min, one.nodes_max, one.gpus_per_node) == (4, 4, 1)
    c = w.info.flat_cluster()
    assert [n.name for n in c.nodes] == ["n001", "n002"] and c.total_gpus == 16
    assert c.default_partition().name == "batch"
    assert read_swf(mini).info.flat_cluster().total_gpus == 16


def test_header_and_gzip(mini: Path, tmp_path: Path) -> None:
    gz = tmp_path / "mini.swf.gz"
    gz.write_bytes(gzip.compress(mini.read_bytes()))
    a, b = read_swf(mini), read_swf(gz)
    assert a.jobs() == b.jobs()
    assert (b.info.max_procs, b.info.max_nodes, b.info.unix_start_time) == (16, 16, 1000)


def test_epoch_submits_are_rebased(tmp_path: Path) -> None:
    p = tmp_path / "epoch.swf"
    p.write_text(
        "1 1356996147 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 1356996247 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
    )
    w = read_swf(p, filter="none")
    assert [j.submit for j in w] == [0, 100]
    assert w.info.unix_start_time == 1356996147


def test_errors_name_the_place(tmp_path: Path, mini: Path) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text(HEADER + ROWS[0] + "\n1 2 3\n")
    with pytest.raises(WorkloadError, match=r"bad.swf:6: 3 fields"):
        read_swf(bad).jobs()
    nohdr = tmp_path / "nohdr.swf"
    nohdr.write_text(ROWS[0] + "\n")
    with pytest.raises(WorkloadError, match=r"no '; MaxProcs:' header"):
        read_swf(nohdr)
    assert len(read_swf(nohdr, max_procs=8).jobs()) == 1
    with pytest.raises(WorkloadError, match="filter='weak'"):
        read_swf(mini, filter="weak")  # type: ignore[arg-type]
    with pytest.raises(WorkloadError, match="does not exist"):
        read_swf(tmp_path / "nope.swf")


def test_original_fields_on_request(mini: Path) -> None:
    j = read_swf(mini, keep_original=True).jobs()[1]
    assert j.original["procs_alloc"] == -1 and j.original["procs_req"] == 2


# ---------------------------------------------------------------- real traces




@needs_traces
def test_kth_strong_filter_count() -> None:
    assert TRACES is not None
    w = read_swf(TRACES / "kth-sp2" / "KTH-SP2-1996-2.swf")
    jobs = w.jobs()
    assert len(jobs) == 28481
    assert w.info.read == 28489 and dict(w.info.dropped) == {"run time <= 0": 8}
    assert w.info.adjusted["run time > requested time: run capped at request"] == 475
    assert w.info.max_procs == 100
    assert all(j.duration <= j.request.time_limit for j in jobs)


@needs_traces
@pytest.mark.slow
def test_sdsc_strong_filter_count() -> None:
    assert TRACES is not None
    w = read_swf(TRACES / "sdsc-sp2" / "SDSC-SP2-1998-4.2-cln.swf.gz")
    assert sum(1 for _ in w) == 53999
    assert w.info.read == 59715 and w.info.max_procs == 128
    none = read_swf(TRACES / "sdsc-sp2" / "SDSC-SP2-1998-4.2-cln.swf.gz", filter="none")
    assert sum(1 for _ in none) == 59715
