"""One scheduling cycle at platform scale, and how it grows.

Default: 10,000 nodes x 8 GPUs under a 3-level switch tree (leaves of 20
nodes, spines of 10 leaves, one core), 20,000 running jobs and 100,000
pending jobs of mixed sizes, multifactor priority with fair-share, main pass
and conservative backfill over bf_max_job_test=1,000 jobs.

Prints the cycle time (median of --repeat runs), its phases, the peak memory
the cycle allocates (tracemalloc), and two small tables: time vs nodes and
time vs queue length. Baseline in the same run: the time to merely sort the
pending queue by priority (what any scheduler must at least do).

    python bench/bench_core.py            # full figures (~1-2 min)
    python bench/bench_core.py --quick    # a smaller run for a smoke check
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

from tide.model import (
    Account,
    AccountTree,
    Cluster,
    Job,
    JobRequest,
    Partition,
    Switch,
    Topology,
    TopologyKind,
    UserAssoc,
)
from tide.model.sched_config import BackfillMode, PriorityWeights, SchedulerConfig
from tide.sched.index import build_index
from tide.sched.scheduler import Scheduler
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc, Running, Snapshot
from tide.testing.builders import gpu_node


def cluster_of(n_nodes: int, leaf: int = 20, per_spine: int = 10) -> Cluster:
    nodes = [gpu_node(f"g{i:05d}") for i in range(n_nodes)]
    switches, leaves = [], []
    for k in range(0, n_nodes, leaf):
        name = f"leaf{k // leaf:04d}"
        switches.append(Switch(name, nodes=tuple(n.name for n in nodes[k : k + leaf])))
        leaves.append(name)
    spines = []
    for k in range(0, len(leaves), per_spine):
        name = f"spine{k // per_spine:03d}"
        switches.append(Switch(name, switches=tuple(leaves[k : k + per_spine])))
        spines.append(name)
    switches.append(Switch("core", switches=tuple(spines)))
    part = Partition("gpu", nodes=tuple(n.name for n in nodes), default=True)
    return Cluster("bench", nodes, [part], Topology(TopologyKind.TREE, switches))


def accounts_of(n_accounts: int = 20, users_per: int = 10) -> AccountTree:
    tree = AccountTree()
    for a in range(n_accounts):
        tree.accounts[f"acct{a}"] = Account(f"acct{a}", fairshare=1 + a % 5)
        for u in range(users_per):
            tree.users.append(UserAssoc(f"u{a}_{u}", f"acct{a}"))
    return tree


def request(rng: np.random.Generator, multi: float = 0.3) -> JobRequest:
    """Mixed sizes: single-node jobs of 1-8 GPUs, and multi-node jobs of
    2-16 whole 8-GPU nodes with probability `multi`."""
    kind = 1 - rng.random()
    limit = int(rng.choice([1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600]))
    if kind > multi:
        return JobRequest(gpus_per_node=int(rng.choice([1, 2, 4, 8])), time_limit=limit)
    nodes = int(rng.choice([2, 4, 8, 16]) if multi > 0.1 else rng.choice([2, 4]))
    return JobRequest(nodes_min=nodes, nodes_max=nodes, gpus_per_node=8, time_limit=limit)


def running_jobs(cluster: Cluster, n: int, rng: np.random.Generator) -> list[Running]:
    """Up to n running jobs packed onto the cluster (first fit over a rotating
    cursor), so the cluster ends up mostly full with mixed fragments."""
    n_nodes = len(cluster.nodes)
    free = np.full(n_nodes, 8)
    cores = np.zeros(n_nodes, dtype=int)
    out: list[Running] = []
    cursor = 0
    for jid in range(1, n + 1):
        req = request(rng, multi=0.03)  # what runs is mostly small: 20k jobs fit
        k, g = req.nodes_min or 1, req.gpus_per_node or 1
        cand = np.flatnonzero(free >= g)
        if len(cand) < k:
            continue
        cand = np.roll(cand, -int(np.searchsorted(cand, cursor)))[:k]
        cursor = (int(cand[-1]) + 1) % n_nodes
        nas = []
        for node in cand.tolist():
            first = 8 - int(free[node])
            nas.append(NodeAlloc(node, tuple(range(first, first + g)), (int(cores[node]),), 0))
            free[node] -= g
            cores[node] += 1
        a = int(rng.integers(20))
        job = Job(jid, req, user=f"u{a}_{rng.integers(10)}", account=f"acct{a}", submit=-7200.0)
        start = -float(rng.integers(0, req.time_limit or 3600))
        out.append(Running(job, Allocation(jid, tuple(nas)), start, start + (req.time_limit or 0)))
    return out


def pending_jobs(n: int, first_id: int, rng: np.random.Generator) -> list[Job]:
    jobs = []
    for k in range(n):
        a = int(rng.integers(20))
        jobs.append(
            Job(
                first_id + k,
                request(rng),
                user=f"u{a}_{rng.integers(10)}",
                account=f"acct{a}",
                submit=-float(rng.integers(0, 86400)),
                eligible=0.0,
            )
        )
    return jobs


def config() -> SchedulerConfig:
    return SchedulerConfig(
        backfill=BackfillMode.CONSERVATIVE,
        bf_max_job_test=1000,
        bf_resolution=60,
        bf_window=86400,
        weights=PriorityWeights(age=1000, fairshare=10000, job_size=1000, partition=1000, qos=1000),
    )


def setup(n_nodes: int, n_running: int, n_pending: int, seed: int = 1):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    cluster = cluster_of(n_nodes)
    running = running_jobs(cluster, n_running, rng)
    pending = pending_jobs(n_pending, 10**6, rng)
    usage_keys = {
        f"acct{a}/u{a}_{u}": float(rng.integers(0, 10**6)) for a in range(20) for u in range(10)
    }
    snap = Snapshot(cluster, config(), 0.0, pending, running, accounts_of(), usage_keys)
    ix = build_index(cluster)
    usage = Usage.empty(ix)
    for r in running:
        usage.allocate(r.alloc)
    return snap, ix, usage


def time_cycle(snap: Snapshot, ix, usage, repeat: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Median CPU seconds of one cycle (process time: on a shared 2-core
    machine wall time mostly measures the neighbours)."""
    times = []
    starts = 0
    for _ in range(repeat):
        sched = Scheduler(ix)  # a fresh memo: every cycle pays its full cost
        t0 = time.process_time()
        d = sched.schedule(snap, usage)
        times.append(time.process_time() - t0)
        starts = len(d.starts)
    return statistics.median(times), starts


def baseline_sort(snap: Snapshot) -> float:
    t0 = time.process_time()
    sorted(snap.pending, key=lambda j: (j.submit, j.id))
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    nodes, running, pending = (1000, 2000, 10000) if args.quick else (10000, 20000, 100000)
    t0 = time.perf_counter()
    snap, ix, usage = setup(nodes, running, pending)
    print(
        f"setup: {nodes} nodes x 8 GPUs, {len(snap.running)} running, {pending} pending "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    cycle, starts = time_cycle(snap, ix, usage, args.repeat)
    base = baseline_sort(snap)
    tracemalloc.start()
    Scheduler(ix).schedule(snap, usage)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        f"full cycle: {cycle * 1000:.0f} ms (median of {args.repeat}), {starts} starts; "
        f"baseline sort of the queue {base * 1000:.0f} ms (ratio {cycle / base:.1f}x); "
        f"peak memory allocated by the cycle {peak / 2**20:.0f} MiB"
    )
    print("\nnodes    running  pending  cycle_ms")
    for n in [1000, 2500, 5000, 10000] if not args.quick else [250, 500, 1000]:
        s, i, u = setup(n, running * n // nodes, pending)
        print(f"{n:>6} {len(s.running):>9} {pending:>8} {time_cycle(s, i, u, 1)[0] * 1000:>9.0f}")
    print("\npending  cycle_ms   (nodes fixed)")
    for q in [1000, 10000, 50000, 100000] if not args.quick else [1000, 5000, 10000]:
        s, i, u = setup(nodes, running, q)
        print(f"{q:>7} {time_cycle(s, i, u, 1)[0] * 1000:>9.0f}")


if __name__ == "__main__":
    main()
