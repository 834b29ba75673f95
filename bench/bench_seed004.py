"""A whole-cluster job in a stream of tiny ones (seed004, scaled): `tide` against `slurm`.

Issue 16's seed004 goal: the large job waits no longer than under slurm,
utilization at least slurm's, small-job turnaround unchanged. The stream,
scaled to 5 nodes x 8 GPUs: 1-4-GPU jobs of 2-10 s (limit 60 s) keeping the
GPUs about 85 % busy until 1.25 h (seeded), and at 1 h a 40-GPU job (the
whole cluster) of 7000 s (limit 2 h); EASY backfill, bf_interval 30.

Prints, per policy, the large job's wait, utilization, the small jobs' mean
turnaround (wait + run) and mean wait, the CPU the run took, and the ratio
against slurm measured in this run. `tide` is the policy's fixed
configuration (TidePolicy's defaults); `tide-noguard` the same with
guard_big=False (the configuration before the guard); `tide-nosteer` with
steer=False (jobs started beside a reservation placed by best fit alone),
`tide-steer-<mode>` with steer="<mode>" (TidePolicy's steering modes).
--big-nodes makes the large job smaller than the cluster (3: 24 of 40
GPUs: large for tide, guarded as whole nodes of 8-GPU nodes;
`tide-noguardnodes` is guard_nodes=False, where steering decides where
the tiny jobs go while it waits).

    .venv/bin/python bench/bench_seed004.py                       # slurm, tide
    .venv/bin/python bench/bench_seed004.py --policies slurm tide tide-noguard
    .venv/bin/python bench/bench_seed004.py --policies tide-steer-large tide-nosteer --big-nodes 3

About 10 s of CPU for slurm and 30 s for tide; tide-noguard takes much longer
(its large job waits while tiny jobs keep being backfilled).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

BIG = 10**6  # the large job's id
VARIANTS: dict[str, dict[str, Any] | None] = {
    "slurm": None,
    "tide": {},
    "tide-noguard": {"guard_big": False},
    "tide-noguardnodes": {"guard_nodes": False},
    "tide-nosteer": {"steer": False},
    "tide-steer-large": {"steer": "large"},
    "tide-steer-all": {"steer": "all"},
    "tide-steer-overrun": {"steer": "overrun"},
}
NODES = 5


def stream(seed: int = 4, big_nodes: int = NODES) -> list[Any]:
    import numpy as np

    from tide.model import JobRequest
    from tide.sim.workload.base import SimJob

    rng = np.random.default_rng(seed)
    jobs, t, i = [], 0.0, 0
    while t < 4500:  # arrivals until 1.25 h
        i += 1
        gpus, run = int(rng.integers(1, 5)), float(rng.uniform(2, 10))
        req = JobRequest(name="tiny", nodes_min=1, nodes_max=1, gpus_per_node=gpus,
                         time_limit=60)  # fmt: skip
        jobs.append(SimJob(i, t, run, req, user=f"u{i % 7}", account="a"))
        t += float(rng.exponential(2.5 * 6 / 34))  # mean 2.5 GPUs x 6 s: ~85 % of 40 GPUs
    big = JobRequest(name="big", nodes_min=big_nodes, nodes_max=big_nodes, gpus_per_node=8,
                     time_limit=7200)  # fmt: skip
    jobs.append(SimJob(BIG, 3600.0, 7000.0, big, user="t", account="b"))
    return sorted(jobs, key=lambda j: (j.submit, j.id))


def run(name: str, jobs: list[Any]) -> dict[str, float]:
    import numpy as np

    from tide.model.sched_config import BackfillMode, SchedulerConfig
    from tide.sched.policies.tide_policy import TidePolicy
    from tide.sim.engine import Engine
    from tide.sim.metrics import compute_metrics
    from tide.testing.builders import flat_cluster

    kw = VARIANTS[name]
    t0 = time.process_time()
    eng = Engine(flat_cluster(NODES), SchedulerConfig(backfill=BackfillMode.EASY, bf_interval=30),
                 "slurm" if kw is None else "tide")  # fmt: skip
    if kw is not None:
        eng.policy = TidePolicy(eng.ix, **kw)
    out = eng.run(jobs)
    res = out.results
    m = compute_metrics(res, out.capacity_gpus, out.samples)
    big = next(r for r in res if r.job_id == BIG)
    small = [r for r in res if r.job_id != BIG and r.start is not None and r.end is not None]
    return {
        "big_wait": big.start - big.submit if big.start is not None else float("nan"),
        "utilization": m["utilization"],
        "small_turnaround": float(np.mean([r.end - r.submit for r in small])),
        "small_wait": float(np.mean([r.start - r.submit for r in small])),
        "cpu_s": time.process_time() - t0,
    }


def main() -> int:
    example = "example: bench/bench_seed004.py --policies slurm tide"
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=example)
    ap.add_argument("--policies", nargs="+", default=["slurm", "tide"], choices=list(VARIANTS),
                    help="what to run; slurm always runs first, as the baseline")  # fmt: skip
    ap.add_argument("--big-nodes", type=int, default=NODES, choices=range(1, NODES + 1),
                    metavar=f"1-{NODES}",
                    help="the large job's nodes (default: all 5)")  # fmt: skip
    args = ap.parse_args()
    names = ["slurm"] + [n for n in args.policies if n != "slurm"]
    jobs = stream(big_nodes=args.big_nodes)
    print(f"seed004 scaled: {NODES} x 8 GPUs, {len(jobs)} jobs, "
          f"a {8 * args.big_nodes}-GPU job at 1 h")  # fmt: skip
    rows = {}
    for name in names:
        print(f"[seed004] {name} ...", file=sys.stderr, flush=True)
        rows[name] = run(name, jobs)
    base = rows["slurm"]
    print(f"{'policy':14} {'big wait s':>10} {'util':>6} {'small turn s':>12} {'small wait s':>12}"
          f" {'CPU s':>6}  ratio vs slurm (big wait, util, small turnaround)")  # fmt: skip
    for name, r in rows.items():
        ratio = " ".join(f"{r[k] / base[k]:.3f}" for k in ("big_wait", "utilization",
                                                           "small_turnaround"))  # fmt: skip
        print(
            f"{name:14} {r['big_wait']:10.1f} {r['utilization']:6.3f}",
            f"{r['small_turnaround']:12.1f} {r['small_wait']:12.1f} {r['cpu_s']:6.1f} ",
            ratio,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
