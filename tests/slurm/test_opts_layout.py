"""Slurm's command-line and output conventions (tide.slurm.opts, tide.slurm.layout)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tide.slurm import layout
from tide.slurm.opts import Opt, UsageError, parse

SPEC = [
    Opt("jobs", "j", ("jobs",), True, repeat=True),
    Opt("noheader", "h", ("noheader",)),
    Opt("long", "l", ("long",)),
    Opt("format", "o", ("format",), True),
    Opt("me", "", ("me",)),
]


@pytest.mark.parametrize(
    "argv",
    [
        ["-j12,13", "-hl"],
        ["-j", "12,13", "-h", "-l"],
        ["--jobs=12", "--jobs", "13", "--noheader", "--long"],
        ["--job=12,13", "--nohead", "-lh"],  # unambiguous prefixes, bundled flags
    ],
)
def test_getopt_long_spellings_agree(argv: list[str]) -> None:
    o = parse(argv, SPEC)
    assert o.list("jobs") == ["12", "13"] and o.flag("noheader") and o.flag("long")


def test_bad_options_are_slurms_one_line_errors() -> None:
    with pytest.raises(UsageError, match="unrecognized option '--nope'"):
        parse(["--nope"], SPEC)
    with pytest.raises(UsageError, match="invalid option -- 'z'"):
        parse(["-z"], SPEC)
    with pytest.raises(UsageError, match="requires an argument"):
        parse(["-o"], SPEC)
    with pytest.raises(UsageError, match="doesn't allow an argument"):
        parse(["--me=yes"], SPEC)


def test_positional_words_and_double_dash() -> None:
    o = parse(["12", "-h", "--", "-j"], SPEC)
    assert o.args == ["12", "-j"] and o.flag("noheader")
    assert parse(["-h", "cmd", "-l"], SPEC, stop_at_first_arg=True).args == ["cmd", "-l"]


def test_percent_format_pads_cuts_and_right_justifies() -> None:
    pieces = layout.percent("%.6i|%-4j|%5t%%", {"i": "id", "j": "name", "t": "st"})
    rows = [{"id": "12", "name": "training", "st": "R"}]
    assert layout.render(pieces, rows, {"id": "JOBID", "name": "NAME", "st": "ST"}) == [
        " JOBID|NAME|ST   %",
        "    12|trai|R    %",
    ]


def test_uncut_fields_overflow_like_slurms_times() -> None:
    pieces = layout.percent("%.9l", {"l": "limit"}, uncut=frozenset({"limit"}))
    assert layout.render(pieces, [{"limit": "365-00:00:00"}], {"limit": "TIME_LIMIT"}) == [
        "TIME_LIMI",
        "365-00:00:00",
    ]


def test_fit_columns_take_the_widest_value() -> None:
    pieces = layout.percent("%#P %.5a", {"P": "p", "a": "a"})
    lines = layout.render(pieces, [{"p": "gpu*", "a": "up"}, {"p": "interactive", "a": "up"}], {
        "p": "PARTITION", "a": "AVAIL"})  # fmt: skip
    assert lines == ["PARTITION   AVAIL", "gpu*           up", "interactive    up"]


def test_sacct_columns_cut_with_a_plus_and_parsable_has_no_padding() -> None:
    cols = layout.sacct_columns("JobID,jobname%5,State", {"JobID": 12, "JobName": 10, "State": 10})
    assert cols == [("JobID", 12), ("JobName", 5), ("State", 10)]
    rows = [{"JobID": "3.batch", "JobName": "training", "State": "COMPLETED"}]
    assert layout.sacct_lines(cols, rows, True, None) == [
        "JobID        JobNa      State ",
        "------------ ----- ---------- ",
        "3.batch      trai+  COMPLETED ",
    ]
    assert layout.sacct_lines(cols, rows, True, "|") == [
        "JobID|JobName|State",
        "3.batch|training|COMPLETED",
    ]
    with pytest.raises(UsageError, match='Invalid field requested: "Nope"'):
        layout.sacct_columns("JobID,Nope", {"JobID": 12})


@given(st.lists(st.sampled_from(["%i", "%.5j", "%-3t", " ", "|", "%%"]), max_size=8))
def test_every_line_has_the_header_width_when_nothing_overflows(parts: list[str]) -> None:
    pieces = layout.percent("".join(parts), {"i": "i", "j": "j", "t": "t"})
    head = layout.render(pieces, [], {"i": "ID", "j": "NAME", "t": "ST"})[0]
    row = layout.render(pieces, [{"i": "ID", "j": "abcde", "t": "R"}], None)[0]
    widths = [p.width for p in pieces if isinstance(p, layout.Col)]
    if all(w is not None for w in widths):
        assert len(head) == len(row)


def test_sacct_tres_leaves_out_what_the_job_has_none_of() -> None:
    """Slurm 22.05's sacct: a CPU job's AllocTRES is cpu=8,node=1 (no gres/gpu=0)."""
    from tide.slurm.sacct import tres

    assert tres(8, 0, 1) == "cpu=8,node=1"
    assert tres(64, 8, 1) == "cpu=64,gres/gpu=8,node=1"


def test_scontrol_show_job_memory_and_gpus_as_slurm_prints_them() -> None:
    """As Slurm 22.05's scontrol show job: MinMemoryNode=64G for --mem=64G, MinMemoryCPU=1.50G
    for --mem-per-cpu=1536, OverSubscribe=NO for --exclusive, TresPerNode only when asked."""
    from tide.slurm.show import job

    base = {"id": 5, "user": "nobody-here", "state": "RUNNING", "nodelist": "n1",
            "cpus_alloc": 64, "gpus_alloc": 8, "start_time": 100.0}  # fmt: skip
    lines = job({**base, "request": {"exclusive": True, "mem_per_node": 65536}}, 200.0)
    assert "MinCPUsNode=1 MinMemoryNode=64G MinTmpDiskNode=0" in lines
    assert any(ln.startswith("OverSubscribe=NO ") for ln in lines)
    assert not any(ln.startswith("TresPer") for ln in lines)  # 8 GPUs held, none asked for
    lines = job({**base, "request": {"mem_per_cpu": 1536, "gpus_per_node": 2}}, 200.0)
    assert "MinCPUsNode=1 MinMemoryCPU=1.50G MinTmpDiskNode=0" in lines
    assert lines[-1] == "TresPerNode=gres:gpu:2"


def test_sprio_lists_an_arrays_pending_tasks_once_under_the_arrays_id() -> None:
    """Slurm 22.05: `sbatch --array=1-3` pending shows one sprio line, JOBID 23."""
    from tide.slurm.sprio import collapse_arrays

    rows = [{"job_id": "6", "total": 5}, {"job_id": "7_1", "total": 4},
            {"job_id": "7_2", "total": 3}, {"job_id": "9", "total": 1}]  # fmt: skip
    assert collapse_arrays(rows) == [{"job_id": "6", "total": 5}, {"job_id": "7", "total": 4},
                                     {"job_id": "9", "total": 1}]  # fmt: skip


def test_squeue_shows_an_arrays_pending_tasks_as_one_line_whatever_their_reasons() -> None:
    """Slurm 22.05 keeps them in one record: `24_[1-3] (Resources)` once the first is the
    top job (tide's tasks had Resources and Priority: two lines); a held task is its own."""
    from tide.slurm.squeue import _cells, _collapse_arrays

    def row(task: int, reason: str) -> dict[str, object]:
        return {"id": 23 + task, "array_job_id": 24, "array_task_id": task, "state": "PENDING",
                "reason": reason, "start_time": None, "end_time": None, "time_limit": 300,
                "nodes_req": 1, "nodelist": "", "name": "arr", "user": "u", "partition": "gpu",
                "run_partition": None, "account": "a", "qos": "normal", "priority": 1,
                "gpus_req": 0, "cpus_alloc": 0, "planned_start": None,
                "planned_nodes": "", "submit_time": 0.0}  # fmt: skip

    rows = [row(1, "Resources"), row(2, "Priority"), row(3, "Priority"), row(4, "JobHeldUser")]
    lines = _collapse_arrays(rows, [_cells(r, 0.0) for r in rows], {24: None})
    assert [(ln["jobid"], ln["reason"]) for ln in lines] == [
        ("24_[1-3]", "Resources"), ("24_4", "JobHeldUser")]  # fmt: skip
