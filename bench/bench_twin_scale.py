"""The twin at real-cluster scale (issue 12), each figure next to a baseline
measured in the same run; every run is its own process (CPU and peak RSS from
wait4).

- fairshare: the issue's 16-node fair-share case (bench/twin_cases.py), the
  whole `tide sim run` command, against the every-pass engine (skip_quiet and
  starts_only off, as before item 1), which runs for --budget seconds of CPU:
  its rate of simulated time gives its projected time, hence the ratio.
- swf: a synthetic SWF log of NODES one-GPU nodes and JOBS jobs through the
  whole `tide sim run` (the count path), CPU, RSS and jobs.csv size; pyss
  (its Python 3 port, ../shared/peers/pyss) on the same file when built,
  stopped at --budget.
- growth: the general engine (topology, EASY, bf_interval=30) on N nodes x 8
  GPUs and J jobs keeping it ~90 % busy: jobs/s and RSS per cell, each cell
  stopped at --budget seconds.

    .venv/bin/python bench/bench_twin_scale.py fairshare
    .venv/bin/python bench/bench_twin_scale.py swf --nodes 80000 --jobs 300000
    .venv/bin/python bench/bench_twin_scale.py growth --nodes 100,1000 --jobs 10000,100000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import twin_cases

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], limit: float | None = None) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, stdout) of one process; killed at `limit` CPU seconds."""

    def cap() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_CPU, (int(limit), int(limit) + 5))

    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, preexec_fn=cap)
        _, _, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode(errors="replace")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, text


def _tide() -> str:
    return str(Path(sys.executable).parent / "tide")


# -- children ----------------------------------------------------------------------------


def child_full(folder: str, budget: str) -> None:
    """The every-pass engine on the fair-share case, for `budget` CPU seconds:
    prints the simulated time reached and the CPU it took."""
    import signal

    from tide.sim.engine import Engine
    from tide.sim.runner import WorkloadOptions, configure, load_inputs

    opts = twin_cases.fairshare(Path(folder))
    inputs = load_inputs(opts[3], None, opts[1], WorkloadOptions())
    cfg = configure(inputs.config, "conservative", None, None)
    reached = [0.0, 0]

    def progress(t: float, done: int, submitted: int) -> None:
        reached[0], reached[1] = t, done

    class Stop(BaseException):
        pass

    def stop(*_: object) -> None:
        raise Stop

    signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_PROF, float(budget))
    signal.signal(signal.SIGPROF, stop)
    engine = Engine(inputs.cluster, cfg, "slurm", inputs.accounts, progress=progress,
                    skip_quiet=False, starts_only=False)  # fmt: skip
    t0 = time.process_time()
    with contextlib.suppress(Stop):
        engine.run(inputs.jobs())
    cpu = time.process_time() - t0
    print(json.dumps({"virtual_t": reached[0], "done": reached[1], "cpu": cpu}))


# -- benchmarks ---------------------------------------------------------------------------


def fairshare(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        opts = twin_cases.fairshare(Path(tmp) / "case")
        wall, cpu, rss, _ = _run([_tide(), "sim", "run", *opts, "--out", f"{tmp}/out"])
        with open(f"{tmp}/out/jobs.csv") as f:
            ends = [float(r.split(",")[11]) for r in list(f)[1:] if r.split(",")[11]]
        span = max(ends)
        print(f"fair-share case (16 x 8 GPUs, bf_interval=1, conservative, 1,200 jobs at t=0): "
              f"tide sim run wall {wall:.1f}s cpu {cpu:.1f}s RSS {rss:.0f} MB, "
              f"simulated {span / 3600:.1f} h")  # fmt: skip
        _, _, _, text = _run([sys.executable, __file__, "--child", "full", f"{tmp}/full",
                              str(a.budget)])  # fmt: skip
        e = json.loads(text.strip().splitlines()[-1])
        rate = e["virtual_t"] / max(e["cpu"], 1e-9)  # simulated s per CPU s
        projected = span / rate if rate > 0 else float("inf")
        print("  baseline, every pass with full plans (skip_quiet, starts_only off): "
              f"{e['virtual_t'] / 3600:.2f} simulated h in {e['cpu']:.0f} CPU s "
              f"({e['done']} jobs ended) -> projected {projected:,.0f} CPU s for the run; "
              f"ratio x{projected / cpu:,.0f} (CPU)")  # fmt: skip


def swf(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = twin_cases.swf(Path(tmp) / "big.swf", a.nodes, a.jobs)
        for gz in (False, True):
            out = Path(tmp) / f"out{int(gz)}"
            cmd = [_tide(), "sim", "run", "--workload", str(log), "--backfill", "easy",
                   "--order", "fcfs", "--bf-interval", "0", "--out", str(out)]  # fmt: skip
            wall, cpu, rss, _ = _run(cmd + (["--gzip"] if gz else []))
            name = "jobs.csv.gz" if gz else "jobs.csv"
            size = (out / name).stat().st_size / 2**20
            flag = " --gzip" if gz else ""
            print(f"swf {a.nodes:,} nodes x {a.jobs:,} jobs: tide sim run{flag} wall {wall:.1f}s "
                  f"cpu {cpu:.1f}s RSS {rss:.0f} MB, {name} {size:.1f} MB")  # fmt: skip
        pyss = _pyss_cmd(log, Path(tmp) / "pyss.swf.gz")
        if pyss is None:
            print("  pyss: skipped (build its Python 3 port: ../shared/peers/pyss/run_all.sh)")
            return
        pw, pc, prss, _ = _run(pyss, a.budget)
        stopped = pc >= a.budget - 1
        print(
            f"  pyss (py3.11): wall {pw:.1f}s cpu {pc:.1f}s RSS {prss:.0f} MB"
            + (f" (stopped at the {a.budget:.0f} s budget: a lower bound)" if stopped else "")
            + f"; tide is x{pc / cpu:.1f}"
            + (" at least" if stopped else "")
            + " faster (CPU)"
        )


def _pyss_cmd(log: Path, out: Path) -> list[str] | None:
    near = ROOT.parent / "shared" / "peers" / "pyss"
    home = Path(os.environ.get("PYSS_HOME", near if near.exists() else "/work/shared/peers/pyss"))
    src = Path(os.environ.get("PYSS_SRC", "/tmp/pyss-repro/py3/src"))
    py = os.environ.get("PYSS_PYTHON", "/root/.pyenv/versions/3.11.7/bin/python3.11")
    if not (home / "run_pyss.py").exists() or not src.exists() or not Path(py).exists():
        return None
    return [py, str(home / "run_pyss.py"), str(src), str(log),
            str(home / "configs" / "easy_user.py"), str(out)]  # fmt: skip


def growth(a: argparse.Namespace) -> None:
    print(f"general engine (topology, EASY, bf_interval=30), budget {a.budget:.0f} CPU s per cell")
    print(f"  {'nodes':>7} {'jobs':>9} {'fed':>9} {'cpu s':>7} {'jobs/s':>8} {'RSS MB':>7}")
    for nodes in [int(x) for x in a.nodes_list.split(",")]:
        for jobs in [int(x) for x in a.jobs_list.split(",")]:
            with tempfile.TemporaryDirectory() as tmp:
                opts = twin_cases.growth(Path(tmp), nodes, jobs)[1::2]  # conf, workload
                cmd = [sys.executable, __file__, "--child", "feed", *opts, str(a.budget)]
                _, _, rss, text = _run(cmd)
                e = json.loads(text.strip().splitlines()[-1])
                print(f"  {nodes:7,} {jobs:9,} {e['fed']:9,} {e['cpu']:7.1f} "
                      f"{e['fed'] / max(e['cpu'], 1e-9):8,.0f} {rss:7.0f}"
                      + ("" if e["done"] else "  (budget)"))  # fmt: skip


def child_feed(conf: str, workload: str, budget: str) -> None:
    """The general engine on one growth cell, stopped after `budget` CPU seconds."""
    from tide.sim.runner import WorkloadOptions, configure, load_inputs, run_policy

    inputs = load_inputs(workload, None, conf, WorkloadOptions())
    cfg = configure(inputs.config, "easy", None, None)
    fed, limit, t0 = 0, float(budget), time.process_time()
    source = inputs.jobs

    class Stop(BaseException):
        pass

    def feed():  # type: ignore[no-untyped-def]
        nonlocal fed
        for job in source():
            if fed % 256 == 0 and time.process_time() - t0 > limit:
                raise Stop
            fed += 1
            yield job

    inputs.jobs = feed
    done = True
    try:
        run_policy(inputs, "slurm", cfg)
    except Stop:
        done = False
    print(json.dumps({"fed": fed, "cpu": time.process_time() - t0, "done": done}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="?", choices=["fairshare", "swf", "growth"], default="fairshare")
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds for slow baselines")
    ap.add_argument("--nodes", type=int, default=80000, help="swf: nodes")
    ap.add_argument("--jobs", type=int, default=300000, help="swf: jobs")
    ap.add_argument("--nodes-list", default="100,1000,10000", help="growth: node counts")
    ap.add_argument("--jobs-list", default="10000,100000,1000000", help="growth: job counts")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind, *rest = a.child
        {"full": child_full, "feed": child_feed}[kind](*rest)
        return
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    {"fairshare": fairshare, "swf": swf, "growth": growth}[a.what](a)


if __name__ == "__main__":
    main()
