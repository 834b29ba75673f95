"""Schedule quality: the `tide` policy against EASY and the SC'15 figures.

For every workload log in the traces folder that the twin can read (SWF
logs: KTH-SP2, SDSC-SP2, CERIT-SC...), the strong filter, users' requested
times, `--backfill easy --order fcfs --bf-interval 0`, one process, in this
run:

- EASY: the `slurm` policy (EASY backfill in FCFS order: on KTH-SP2 and
  SDSC-SP2 the published figures, job for job, tests/sim/test_faithfulness.py);
- tide: the `tide` policy with its fixed configuration (docs/policies.md);

and, next to them, the published figures of Gaussier et al., "Improving
Backfilling by using Machine Learning to predict Running Times" (SC'15;
dinesh121991/predictsim, experiments/data/<LOG>/sim_analysis/metrics_complete):
EASY++ (Tsafrir's predictor and correction), the best single learned
configuration over both logs, and the best configuration of each log.
Each row prints the mean bounded slowdown (max(1, (wait + run) / max(10,
run))), the mean wait, and the change against EASY measured in this run.

    .venv/bin/python bench/bench_quality.py                  # every readable log
    .venv/bin/python bench/bench_quality.py --logs kth-sp2   # one log
    .venv/bin/python bench/bench_quality.py --json out.json
    .venv/bin/python bench/bench_quality.py --variants tide tide-nosteer  # before/after

--variants adds other configurations of the tide policy in the same run
(VARIANTS: tide-nosteer is steer=False, tide-steer-<mode> steer="<mode>":
TidePolicy's steering modes), each with its change against EASY.

TIDE_TRACES overrides the traces folder (default: ../shared/traces, then
/work/shared/traces). The tide policy runs on the general engine: about
half a minute of CPU for KTH-SP2, a minute and a half for SDSC-SP2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOG_SUFFIXES = (".swf", ".swf.gz")

# SC'15's published mean bounded slowdowns (metrics_complete; SDSC-SP2 on the
# paper's 54,006-job revision of the log, 0.05 % above this 53,999-job one)
SC15: dict[str, dict[str, float]] = {
    "kth-sp2": {
        "EASY": 92.58,
        "EASY++ (Tsafrir)": 63.50,
        "EASY++ (Tsafrir predictor, limit correction)": 62.86,
        "learned, best on both logs": 57.89,
        "learned, best for this log": 45.80,
        "clairvoyant SJBF": 49.85,
    },
    "sdsc-sp2": {
        "EASY": 87.87,
        "EASY++ (Tsafrir)": 79.40,
        "EASY++ (Tsafrir predictor, limit correction)": 65.06,
        "learned, best on both logs": 65.02,
        "learned, best for this log": 65.02,
        "clairvoyant SJBF": 56.84,
    },
}
# issue 16's goals for the fixed configuration
GOALS = {"kth-sp2": 60.2, "sdsc-sp2": 65.9}
# the tide policy's configurations this bench can run: TidePolicy's options
# changed from its defaults (tide: the fixed configuration)
VARIANTS: dict[str, dict[str, Any]] = {
    "tide": {},
    "tide-nosteer": {"steer": False},
    "tide-noguardnodes": {"guard_nodes": False},
    "tide-steer-large": {"steer": "large"},
    "tide-steer-all": {"steer": "all"},
    "tide-steer-overrun": {"steer": "overrun"},
}


def traces_dir() -> Path | None:
    for cand in (os.environ.get("TIDE_TRACES"), ROOT.parent / "shared" / "traces",
                 Path("/work/shared/traces")):  # fmt: skip
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


def find_logs(traces: Path, only: list[str] | None) -> list[Path]:
    logs = sorted(p for p in traces.glob("*/*") if p.name.lower().endswith(LOG_SUFFIXES))
    if only:
        logs = [p for p in logs if p.parent.name in only]
    return logs


def machine_size(path: Path) -> int | None:
    """Processors of an Alea-format log's machine (`LOG.machines`: id, name,
    nodes, cores per node, ...), for logs without a MaxProcs header."""
    machines = path.with_name(path.name + ".machines")
    if not machines.is_file():
        return None
    rows = [line.split() for line in machines.read_text().splitlines() if line.strip()]
    return sum(int(r[2]) * int(r[3]) for r in rows)


def run_variant(inputs: Any, config: Any, options: dict[str, Any]) -> dict[str, float]:
    """The tide policy with `options` on the general engine, as run_policy
    runs it; its metrics."""
    import copy

    from tide.sched.index import build_index
    from tide.sched.policies.tide_policy import TidePolicy
    from tide.sim.engine import Engine
    from tide.sim.metrics import compute_metrics

    cluster = copy.deepcopy(inputs.cluster)
    ix = build_index(cluster)
    engine = Engine(cluster, config, "tide", inputs.accounts, [], index=ix)
    engine.policy = TidePolicy(ix, **options)
    out = engine.run(inputs.jobs())
    return compute_metrics(out.table, out.capacity_gpus, out.timeline, inputs.target_shares)


def run_log(path: Path, variants: list[str]) -> dict[str, Any] | str:
    """EASY and tide on one log; a string says why the log was skipped."""
    from tide.model.sched_config import BackfillMode, QueueOrder, SchedulerConfig
    from tide.sim.runner import WorkloadOptions, load_inputs, run_policy
    from tide.sim.workload.base import WorkloadError

    config = SchedulerConfig(backfill=BackfillMode.EASY, order=QueueOrder.FCFS, bf_interval=0,
                             bf_resolution=1, bf_max_job_test=10**9, bf_window=10**9)  # fmt: skip
    opts = WorkloadOptions(estimates="user", max_procs=machine_size(path))
    try:
        inputs = load_inputs(str(path), None, None, opts)
        jobs = sum(1 for _ in inputs.jobs())
    except (WorkloadError, OSError, ValueError) as e:
        return f"not readable: {e}"
    if jobs == 0:
        return "no job left after the strong filter (no requested times?)"
    out: dict[str, Any] = {"jobs": jobs}
    for policy in ("slurm", *variants):
        print(f"[quality] {path.parent.name}: {policy} on {jobs} jobs ...", file=sys.stderr,
              flush=True)  # fmt: skip
        t0 = time.process_time()
        if policy in ("slurm", "tide"):
            m = run_policy(inputs, policy, config).metrics
        else:
            m = run_variant(inputs, config, VARIANTS[policy])
        cpu = time.process_time() - t0
        out[policy] = {"mean_bsld": m["mean_bsld"], "mean_wait": m["mean_wait"],
                       "utilization": m["utilization"], "cpu_s": cpu}  # fmt: skip
        print(f"[quality] {path.parent.name}: {policy} done, bsld {m['mean_bsld']:.2f} "
              f"({out[policy]['cpu_s']:.0f} s CPU)", file=sys.stderr, flush=True)  # fmt: skip
    return out


def pct(value: float, base: float) -> str:
    return f"{100.0 * (value - base) / base:+.1f} %"


def print_log(name: str, res: dict[str, Any], variants: list[str]) -> None:
    easy = res["slurm"]["mean_bsld"]
    print(f"\n## {name} ({res['jobs']:,} jobs)\n")
    print("| scheduler | mean bsld | change vs EASY | mean wait (s) |")
    print("|---|---|---|---|")
    print(f"| EASY (slurm policy, this run) | {easy:.2f} | | {res['slurm']['mean_wait']:.0f} |")
    for label, value in SC15.get(name, {}).items():
        print(f"| SC'15 published: {label} | {value:.2f} | {pct(value, easy)} | |")
    tide = res["tide"]["mean_bsld"]
    print(f"| **tide policy (this run)** | **{tide:.2f}** | **{pct(tide, easy)}** "
          f"| {res['tide']['mean_wait']:.0f} |")  # fmt: skip
    for v in variants:
        if v != "tide":
            r = res[v]
            print(f"| {v} ({VARIANTS[v]}, this run) | {r['mean_bsld']:.2f} "
                  f"| {pct(r['mean_bsld'], easy)} | {r['mean_wait']:.0f} |")  # fmt: skip
    goal = GOALS.get(name)
    if goal is not None:
        print(f"\ngoal: tide <= {goal} ({pct(goal, easy)}): {'met' if tide <= goal else 'NOT met'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--logs", nargs="*", help="trace folder names (default: all readable)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--variants", nargs="+", default=["tide"], choices=list(VARIANTS),
                    help="tide configurations to run (default: tide, the fixed one)")  # fmt: skip
    args = ap.parse_args()
    variants = ["tide"] + [v for v in args.variants if v != "tide"]
    traces = traces_dir()
    if traces is None:
        print("no traces folder (set TIDE_TRACES)", file=sys.stderr)
        return 2
    results: dict[str, Any] = {}
    for path in find_logs(traces, args.logs):
        res = run_log(path, variants)
        results[path.parent.name] = res
        if isinstance(res, str):
            print(f"\n## {path.parent.name}: skipped, {res}")
        else:
            print_log(path.parent.name, res, variants)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
