"""tide.queue_table: the one layout of `tide queue` (squeue's columns plus GPUS)."""

from __future__ import annotations

import time

from tide import queue_table as table


def test_default_view_is_laid_out_like_squeue() -> None:
    cells = [
        table.row("12", "gpu", "trainingrun", "alice", "RUNNING", 3725.0, 2, 16, "n[1-2]"),
        table.row("13_4", "gpu,cpu", "x", "bartholomew", "PENDING", 0.0, 1, 0, "(Priority)"),
    ]
    assert table.lay_out(cells) == (
        "JOBID PARTITION NAME     USER     ST    TIME NODES GPUS NODELIST(REASON)\n"
        "   12 gpu       training alice    R  1:02:05     2   16 n[1-2]\n"
        " 13_4 gpu,cpu   x        bartholo PD    0:00     1    0 (Priority)\n"
    )


def test_start_view_and_an_empty_queue() -> None:
    t = time.mktime((2026, 12, 1, 9, 30, 0, 0, 0, -1))
    cells = [
        table.start_row("7", "gpu", "a", "bob", t, 2, "n[3-4]", "Resources"),
        table.start_row("8", "gpu", "b", "bob", None, 1, "", "Priority"),
    ]
    assert table.lay_out(cells, start=True) == (
        "JOBID PARTITION NAME USER ST START_TIME          NODES SCHEDNODES NODELIST(REASON)\n"
        "    7 gpu       a    bob  PD 2026-12-01T09:30:00     2 n[3-4]     (Resources)\n"
        "    8 gpu       b    bob  PD N/A                     1 (null)     (Priority)\n"
    )
    assert table.lay_out([]) == (
        "JOBID PARTITION NAME USER ST TIME NODES GPUS NODELIST(REASON)\n"
    )


def test_order_and_ids() -> None:
    jobs = [(True, 5.0, 3), (False, 1.0, 9), (True, 50.0, 4), (True, 5.0, 2)]
    assert sorted(jobs, key=lambda j: table.order(*j)) == [
        (False, 1.0, 9), (True, 50.0, 4), (True, 5.0, 2), (True, 5.0, 3),
    ]  # fmt: skip
    assert table.job_id_text(12, None, None) == "12"
    assert table.job_id_text(14, 12, 3) == "12_3"
    assert table.job_id_text(12, 12, None) == "12"
