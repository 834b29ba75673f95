"""How the general engine's CPU time and peak memory grow with nodes and jobs
(issue 12 item 5): a table of cells NODES x JOBS, each its own process, each
figure next to its ratio to the smallest cell measured in the same run.

The workload is bench/twin_cases.growth: N nodes x 8 GPUs in leaf switches of
32 (topology/tree), jobs of 1 to 32 GPUs arriving to keep it ~90 % busy. A
cell replays it through the general engine (run_policy, slurm; EASY backfill,
bf_interval=30, or --backfill none for a cheaper pass) and writes jobs.csv,
metrics.json and report.html, as `tide sim run` does. Its CPU time (user +
sys) and peak RSS come from wait4 on the child, so each cell's memory is its
own. A cell still running after --budget CPU seconds stops feeding jobs (those
fed run to their end, no outputs are written) and says how many it had fed:
its CPU and RSS are then those of that many jobs.

    nice -n 10 .venv/bin/python bench/bench_growth.py
    nice -n 10 .venv/bin/python bench/bench_growth.py --nodes 100,1000 --jobs 10000,100000 \\
        --budget 120 --backfill none
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import twin_cases


def _cell(nodes: int, jobs: int, backfill: str, budget: float) -> dict[str, float]:
    """One cell in a child process: its own figures, plus CPU and peak RSS from wait4."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        opts = twin_cases.growth(Path(tmp) / "case", nodes, jobs)
        made = time.perf_counter() - t0
        conf, workload = opts[1], opts[3]
        cmd = [sys.executable, __file__, "--child", conf, workload, backfill, str(budget),
               f"{tmp}/out"]  # fmt: skip
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(cmd, stdout=out)
            _, status, ru = os.wait4(proc.pid, 0)
            out.seek(0)
            text = out.read().decode(errors="replace")
        if status != 0:
            raise SystemExit(f"cell {nodes} x {jobs} failed (status {status}): {text[-2000:]}")
        got = json.loads(text.strip().splitlines()[-1])
        csv = Path(tmp) / "out" / "jobs.csv"
        got["csv_mb"] = csv.stat().st_size / 2**20 if csv.exists() else 0.0
    got.update(cpu=ru.ru_utime + ru.ru_stime, rss=ru.ru_maxrss / 1024, made=made)
    return got


def child(conf: str, workload: str, backfill: str, budget: str, out: str) -> None:
    """Replay one cell; stop feeding jobs once `budget` CPU seconds are spent."""
    from tide.sim.runner import (
        WorkloadOptions,
        configure,
        load_inputs,
        run_policy,
        write_comparison,
        write_policy_outputs,
    )

    inputs = load_inputs(workload, None, conf, WorkloadOptions())
    cfg = configure(inputs.config, backfill, None, None)
    fed, limit, source = 0, float(budget), inputs.jobs
    stopped = False

    def feed():  # type: ignore[no-untyped-def]
        nonlocal fed, stopped
        for job in source():
            if fed % 256 == 0 and time.process_time() > limit:
                stopped = True
                return
            fed += 1
            yield job

    inputs.jobs = feed
    run = run_policy(inputs, "slurm", cfg)
    if not stopped:  # the outputs of a whole run, as tide sim run writes them
        write_policy_outputs(Path(out), run)
        write_comparison(Path(out), inputs, [run])
    print(json.dumps({"fed": fed, "stopped": stopped, "driver": run.driver,
                      "done": int(run.metrics.get("jobs_completed", 0))}))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="100,1000,10000", help="node counts (8 GPUs each)")
    ap.add_argument("--jobs", default="10000,100000,1000000", help="job counts")
    ap.add_argument("--backfill", default="easy", help="easy, conservative or none")
    ap.add_argument(
        "--big-backfill", default="none", help="backfill of cells of 1,000,000 jobs or more"
    )
    ap.add_argument("--budget", type=float, default=180.0, help="CPU seconds per cell at most")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
          f"budget {a.budget:.0f} CPU s per cell")  # fmt: skip
    head = (f"{'nodes':>7} {'jobs':>9} {'backfill':>8} {'fed':>9} {'CPU s':>7} {'us/job':>7} "
            f"{'RSS MB':>7} {'jobs.csv MB':>11} {'x CPU':>7} {'x us/job':>8} "
            f"{'x RSS':>6}")  # fmt: skip
    print(head, flush=True)
    base: dict[str, float] | None = None
    for nodes in [int(x) for x in a.nodes.split(",")]:
        for jobs in [int(x) for x in a.jobs.split(",")]:
            bf = a.big_backfill if jobs >= 1_000_000 else a.backfill
            c = _cell(nodes, jobs, bf, a.budget)
            c["per_job"] = c["cpu"] / max(1, c["fed"]) * 1e6
            base = base or c
            note = f"  (stopped at the budget: {c['fed']:,} of {jobs:,} fed)"
            note = note if c["stopped"] else ""
            print(f"{nodes:7,} {jobs:9,} {bf:>8} {c['fed']:9,} {c['cpu']:7.1f} "
                  f"{c['per_job']:7.0f} {c['rss']:7.0f} {c['csv_mb']:11.1f} "
                  f"{c['cpu'] / base['cpu']:7.1f} {c['per_job'] / base['per_job']:8.2f} "
                  f"{c['rss'] / base['rss']:6.2f}{note}", flush=True)  # fmt: skip
    print(
        "ratios (x) are to the first cell; CPU is user + sys of the cell's process "
        "(workload generation not included), RSS its peak"
    )


if __name__ == "__main__":
    main()
