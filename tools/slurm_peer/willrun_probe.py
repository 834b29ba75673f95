"""Experiment, not a fix: how close does the twin get if backfill reservations start where
Slurm 22.05's will-run test puts them? (docs/slurm-peer.md, "will-run batches")

  .venv/bin/python tools/slurm_peer/willrun_probe.py out/slurm-peer/one

Slurm's select/cons_tres will-run test (src/plugins/select/cons_common/job_test.c,
_will_run_test, tag slurm-22-05-8-1) does not try every release time. It sorts the running
jobs by end time, removes them in batches and tests the pending job after each batch; the
planned start is the end time of the last job removed. The first batch takes the jobs ending
up to B + 30 s, where B is the first overlapping job's end rounded up to the next multiple of
30 s of the epoch; after a failed test the window doubles (60, 120, ... s past B). Only jobs on
the candidate nodes are removed, but a job on other nodes still ends the window check for the
job that follows it. So a reservation can start up to a window later than the exact earliest
time the core computes, and the gap is what lets short jobs backfill in Slurm.

This script patches tide.sched.plan.Plan at run time (the core is not edited) so that every
node's release time is moved to the end of its batch, reruns the twin on the saved workload
and prints the same comparison as run.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from slurm_peer import compare, slurmlog, twin

WINDOW = 30  # seconds: the first window and the barrier of Slurm's will-run batches


def batch_ends(jobs: list[tuple[float, bool]], epoch0: float) -> list[float]:
    """End times at which Slurm tests the pending job: `jobs` are (end, on candidate nodes)
    sorted by end, in seconds from `epoch0` (the epoch of twin time 0)."""
    ends: list[float] = []
    barrier: float | None = None
    window, i, more = WINDOW, 0, True
    while more:
        last = None
        while True:
            if i >= len(jobs):
                more = False
                break
            end, mine = jobs[i]
            i += 1
            if not mine:
                continue  # skipped without the window check (as in Slurm)
            if barrier is None:
                barrier = end + WINDOW - (end + epoch0) % WINDOW
            last = end
            if i >= len(jobs):
                more = False
                break
            if jobs[i][0] > barrier + window:
                break
        if last is None or barrier is None:
            break
        window *= 2
        while i < len(jobs) and jobs[i][0] > barrier + window:
            window *= 2
        ends.append(last)
    return ends


def patch(epoch0: float) -> None:
    from tide.sched import plan as p

    running: dict[int, list[tuple[float, frozenset[int]]]] = {}
    build, candidates = p.Plan.build.__func__, p.Plan.reservation_candidates  # type: ignore[attr-defined]

    def new_build(cls: Any, ix: Any, usage: Any, run: Any, now: float, share: bool = False) -> Any:
        plan = build(cls, ix, usage, run, now, share)
        jobs = [(float(end), frozenset(na.node for na in a.nodes)) for a, end in run]
        running[id(plan)] = sorted(jobs, key=lambda j: j[0])
        return plan

    def new_candidates(self: Any, shape: Any, eligible: Any, skip: Any, horizon: float,
                       res: int) -> tuple[list[float], np.ndarray]:  # fmt: skip
        jobs = running.get(id(self))
        times, ready = candidates(self, shape, eligible, skip, horizon, res)
        if shape.spread or not jobs:
            return times, ready
        nodes = set(np.flatnonzero(eligible).tolist())
        ends = batch_ends([(e, bool(n & nodes)) for e, n in jobs], epoch0)

        def batched(t: float) -> float:
            return t if t <= self.now else next((b for b in ends if b >= t), t)

        base = np.array([batched(float(x)) for x in self.node_ready(shape)])
        if len(self.holds):
            base = self.hold_aware_ready(base, shape.time_limit, skip)
        return sorted(set(times) | {batched(t) for t in times})[: p.MAX_CANDIDATES], base

    p.Plan.build = classmethod(new_build)  # type: ignore[method-assign, assignment]
    p.Plan.reservation_candidates = new_candidates  # type: ignore[method-assign]


def main(out: Path) -> None:
    from tide.sim.runner import WorkloadOptions, configure, load_inputs, run_policy

    records = twin.read_slurm(out / "slurm_jobs.csv", out / "manifest.csv")
    t0 = twin.origin(records)
    patch(t0)
    inputs = load_inputs(str(out / "twin.jsonl"), None, str(out / "conf"), WorkloadOptions())
    run = run_policy(inputs, "slurm", configure(inputs.config, None, None, None))
    result = {r.job_id: twin.TwinRecord(r.job_id, r.start, r.end, r.nodelist, r.leaf_switches)
              for r in run.results}  # fmt: skip
    log = slurmlog.read_log(out / "slurmctld.log")
    init = {j: lj.init_prio for j, lj in log.items() if lj.init_prio is not None}
    prio = twin.priorities_at_submit(out / "conf", out / "twin.jsonl")
    rows = compare.build_rows(records, result, t0, init, prio)
    print(compare.format_table(rows) + "\n\n" + compare.format_summary(compare.summarize(rows)))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "out/slurm-peer"))
