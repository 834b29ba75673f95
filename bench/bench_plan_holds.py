"""Plan.hold_aware_ready (pushes, then a sorted sweep per node) next to the
fixed point it replaced (kept as the reference in tests/sched/test_plan_holds.py),
in the same run: 16 nodes, chains of one-hour whole-node holds (what a
conservative plan gives), every node ready now, a one-hour job.

    .venv/bin/python bench/bench_plan_holds.py --holds 10,100,1000,3000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "sched"))

from test_plan_holds import reference  # noqa: E402

from tide.sched.index import build_index  # noqa: E402
from tide.sched.plan import Plan  # noqa: E402
from tide.sched.state import Usage  # noqa: E402
from tide.testing.builders import flat_cluster  # noqa: E402


def per_call(fn, budget: float = 0.5) -> float:  # type: ignore[no-untyped-def]
    """CPU microseconds per call, calling for about `budget` CPU seconds."""
    n, t0 = 0, time.process_time()
    while time.process_time() - t0 < budget:
        fn()
        n += 1
    return (time.process_time() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--holds", default="10,100,1000,3000", help="hold counts, e.g. 10,1000")
    a = ap.parse_args()
    ix = build_index(flat_cluster(16, gpus=8))
    rng = np.random.default_rng(0)
    print(f"{'holds':>6} {'sweep us':>9} {'fixed point us':>15} {'ratio':>7}")
    for holds in [int(x) for x in a.holds.split(",")]:
        plan = Plan.build(ix, Usage.empty(ix), [], 0.0)
        free = np.zeros(16)
        for _ in range(holds):
            node = int(rng.integers(0, 16))
            plan.hold(node, free[node], free[node] + 3600)
            free[node] += 3600
        ready = np.zeros(16)
        assert np.array_equal(
            plan.hold_aware_ready(ready, 3600.0), reference(plan, ready, 3600.0, None)
        )
        new = per_call(lambda: plan.hold_aware_ready(ready, 3600.0))  # noqa: B023
        old = per_call(lambda: reference(plan, ready, 3600.0, None))  # noqa: B023
        print(f"{holds:6,} {new:9.1f} {old:15.1f} {old / new:6.1f}x")


if __name__ == "__main__":
    main()
