"""GPU fragmentation: FGD against best fit on the Alibaba openb trace, with
FGD's methodology (Weng et al., USENIX ATC'23; tide.sim.inflate).

All 1,213 GPU nodes of openb_node_list_gpu_node.csv (the artifact's
cluster: CPU-only pods share the GPU nodes), all 8,152 pods of
openb_pod_list_default.csv as the population; tasks sampled from it with
replacement (seeded) arrive on an empty cluster and never finish, until
their GPU requests reach 130 % of the cluster's 6,212 GPUs. GPU-sharing pods
keep their fraction (milli-GPUs). The task mix FGD minimises fragmentation
against: all the trace's GPU pod types (tide's default, `fgd`), or the most
popular ones covering 95 % (the artifact's, `fgd-95`).

Prints, per placement, the % of GPUs allocated when the arrived requests
reach 100 % and 130 % of the cluster (the artifact's columns), when the
first task found no node, and the ratio FGD / best fit measured in this run;
next to it the artifact's expected results (mean of seeds 42-51).

    .venv/bin/python bench/bench_fgd.py                # seed 42
    .venv/bin/python bench/bench_fgd.py --seeds 42 43 44
    .venv/bin/python bench/bench_fgd.py --tune 1.0     # stop at 100 %

TIDE_TRACES overrides the traces folder (default: ../shared/traces, then
/work/shared/traces). About 25 s of CPU per seed for the three placements.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPENB = "alibaba-gpu-2023-openb"
# expected_results/analysis_allo_discrete.csv of the FGD artifact, openb_pod_list_default
PUBLISHED = {"bestfit": (92.86, 93.08), "fgd": (95.23, 95.39)}


def traces_dir() -> Path | None:
    for cand in (os.environ.get("TIDE_TRACES"), ROOT.parent / "shared" / "traces",
                 Path("/work/shared/traces")):  # fmt: skip
        if cand and (Path(cand) / OPENB).is_dir():
            return Path(cand)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: bench/bench_fgd.py --seeds 42 43")  # fmt: skip
    ap.add_argument("--seeds", type=int, nargs="+", default=[42])
    ap.add_argument("--tune", type=float, default=1.3, help="stop at this x the cluster's GPUs")
    args = ap.parse_args()
    traces = traces_dir()
    if traces is None:
        print(f"no traces folder with {OPENB} (set TIDE_TRACES)", file=sys.stderr)
        return 2
    from tide.sched.frag import TaskMix
    from tide.sim.inflate import Pool, inflate, placer, tasks_of
    from tide.sim.workload.openb import openb_cluster, read_openb

    folder = traces / OPENB
    cluster = openb_cluster(folder / "openb_node_list_gpu_node.csv")
    models = Pool.of(cluster).models
    tasks = tasks_of(read_openb(folder / "openb_pod_list_default.csv", pending="keep"), models)
    kinds = [(t.cpu, t.gpus, t.milli) for t in tasks]
    mixes = {"bestfit": TaskMix.of(kinds), "fgd": TaskMix.of(kinds),
             "fgd-95": TaskMix.of(kinds, popular=0.95)}  # fmt: skip
    print(f"openb: {len(cluster.nodes)} nodes, {Pool.of(cluster).capacity // 1000} GPUs, "
          f"{len(tasks)} pods ({sum(t.shared for t in tasks)} sharing a GPU), "
          f"task mix: {len(mixes['fgd'])} types (95 %: {len(mixes['fgd-95'])}); "
          f"tune {args.tune}, seeds {args.seeds}")  # fmt: skip
    res: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in mixes}
    for seed in args.seeds:
        for name in res:
            t0 = time.process_time()
            place = placer(name.split("-")[0], mixes[name])
            curve = inflate(Pool.of(cluster), tasks, place, seed, args.tune)
            cpu = time.process_time() - t0
            first = curve.first_failure if curve.first_failure is not None else float("nan")
            res[name].append((curve.at(100), curve.at(100 * args.tune), first, cpu))
            print(f"  seed {seed} {name:7s}: {curve.placed} placed, {curve.failed} failed, "
                  f"{cpu:.1f} s CPU", flush=True)  # fmt: skip
    hi = f"at {100 * args.tune:.0f}"
    print(f"\n{'placement':10s} {'at 100':>8s} {hi:>8s} {'1st fail':>9s}   published (100, 130)")
    means = {}
    for name, rows in res.items():
        m = [sum(r[i] for r in rows) / len(rows) for i in range(3)]
        means[name] = m
        pub = PUBLISHED.get(name)
        ref = f"{pub[0]:.2f}%, {pub[1]:.2f}%" if pub else ""
        print(f"{name:10s} {m[0]:7.2f}% {m[1]:7.2f}% {m[2]:8.2f}%   {ref}")
    b = means["bestfit"]
    for name in ("fgd", "fgd-95"):
        f = means[name]
        pub = f"{PUBLISHED['fgd'][0] / PUBLISHED['bestfit'][0]:.4f}" if name == "fgd" else ""
        print(f"{name + '/bestfit':14s} {f[0] / b[0]:.4f} {f[1] / b[1]:8.4f} {f[2] / b[2]:9.4f}"
              f"   {pub}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
