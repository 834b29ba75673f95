"""Victim choice (issue 13 item 5): time and lost work of the exact
least-lost-work search against the greedy one (cheapest first, then pruned,
per node/leaf), measured in the same run on the same scenes.

Scenes: a flat cluster and a two-level tree, every GPU busy with low-QOS
jobs of 2-8 GPUs and random checkpoints, one high-QOS preemptor of one or
two whole nodes (or half a node). Prints, per cluster, the median time of
one preemption cycle for each search, the ratio, and the total GPU-seconds
of work the chosen victims lose (the greedy's over the exact's).

    python bench/bench_preempt.py            # 200 scenes per cluster
    python bench/bench_preempt.py --quick    # 30
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import numpy as np

from tide.model import AccountTree, Job, JobRequest, Qos
from tide.model.cluster import Cluster
from tide.model.sched_config import BackfillMode, SchedulerConfig
from tide.sched import preempt
from tide.sched.index import build_index
from tide.sched.scheduler import Scheduler
from tide.sched.types import Allocation, NodeAlloc, Running, Snapshot
from tide.testing.builders import flat_cluster, tree_cluster

NOW = 10_000.0


def scene(c: Cluster, rng: np.random.Generator) -> Snapshot:
    runs, jid = [], 100
    for i, _node in enumerate(c.nodes):
        free = list(range(8))
        while free:
            k = int(rng.integers(min(2, len(free)), len(free) + 1))
            gpus, free = tuple(free[:k]), free[k:]
            jid += 1
            j = Job(jid, JobRequest(gpus=k, time_limit=36000), "u", "root", submit=0.0, qos="low")
            start = float(rng.integers(0, int(NOW)))
            alloc = Allocation(jid, (NodeAlloc(i, gpus, (len(runs) % 32,), 0),))
            runs.append(Running(j, alloc, start, start + 36000))
    size = rng.choice([(1, 4), (1, 8), (2, 8)])
    req = JobRequest(nodes_min=int(size[0]), nodes_max=int(size[0]),
                     gpus_per_node=int(size[1]), time_limit=3600)  # fmt: skip
    high = Job(1, req, "v", "root", submit=NOW, qos="high")
    cfg = SchedulerConfig(backfill=BackfillMode.NONE, preempt_type="preempt/qos",
                          preempt_mode="REQUEUE")  # fmt: skip
    acc = AccountTree(qos={"normal": Qos("normal"), "low": Qos("low"),
                           "high": Qos("high", priority=100, preempt=("low",))})  # fmt: skip
    ck = {r.job.id: float(rng.integers(int(r.start), int(NOW))) for r in runs if rng.random() < .5}
    snap = Snapshot(cluster=c, config=cfg, now=NOW, pending=[high], running=runs, accounts=acc)
    return replace(snap, last_checkpoint=ck)


def measure(c: Cluster, scenes: list[Snapshot], exact_max: int) -> tuple[float, float]:
    preempt.EXACT_MAX = exact_max
    ix = build_index(c)
    times, lost = [], 0.0
    for snap in scenes:
        t0 = time.perf_counter()
        d = Scheduler(ix, victim_order="lost_work").schedule(snap)
        times.append(time.perf_counter() - t0)
        lost += sum(p.lost_gpu_seconds for p in d.preemptions)
    return statistics.median(times), lost


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="30 scenes per cluster")
    n = 30 if ap.parse_args().quick else 200
    exact_max = preempt.EXACT_MAX
    print(f"{'cluster':<22}{'greedy ms':>10}{'exact ms':>10}{'ratio':>7}"
          f"{'greedy lost':>13}{'exact lost':>12}{'ratio':>7}")  # fmt: skip
    for name, c in (("flat 3 x 8 GPUs", flat_cluster(3)),
                    ("tree 1+2 nodes", tree_cluster([1, 2])),
                    ("flat 6 x 8 GPUs", flat_cluster(6))):  # fmt: skip
        rng = np.random.default_rng(7)
        scenes = [scene(c, rng) for _ in range(n)]
        g_t, g_lost = measure(c, scenes, 0)
        e_t, e_lost = measure(c, scenes, exact_max)
        print(f"{name:<22}{g_t * 1e3:>10.2f}{e_t * 1e3:>10.2f}{e_t / g_t:>7.2f}"
              f"{g_lost:>13.0f}{e_lost:>12.0f}{g_lost / max(e_lost, 1e-9):>7.2f}")  # fmt: skip
    preempt.EXACT_MAX = exact_max


if __name__ == "__main__":
    main()
