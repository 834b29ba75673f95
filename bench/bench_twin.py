"""The twin's speed next to pyss (predictsim, SC'15), measured in one run.

For SDSC-SP2 (strong filter, 53,999 jobs), EASY and conservative backfill,
FCFS, user estimates, each of these is one process, timed from outside (wall,
CPU and peak RSS from wait4):

- pyss: its Python 3 port on the filtered log, as ../shared/peers/pyss does it
  (run_pyss.py; reads the SWF, simulates, writes its output SWF);
- tide twin: read the SWF, simulate, metrics, jobs.csv and metrics.json (what
  pyss does, plus the metrics);
- tide sim run: the whole command, with report.html and the Rich table.

tide's start times are checked against pyss's output in the same run (EASY
must match job for job). Then the general engine (seed004, month1000) in jobs
per second of simulation.

    .venv/bin/python bench/bench_twin.py                 # everything, median of 3
    .venv/bin/python bench/bench_twin.py --reps 1 --no-general
    # the general engine only, the first 3,000 jobs of each preset, against another
    # checkout of tide in the same run (CPU per job and the ratio):
    .venv/bin/python bench/bench_twin.py --no-swf --general-budget 0 --general-jobs 3000 \
        --baseline-src ../main

Both tide's and pyss's sources are compiled to bytecode before the runs (as an
installed package is; PYTHONDONTWRITEBYTECODE would otherwise make every run
compile them again).

pyss needs its Python 3 port under /tmp/pyss-repro/py3/src (build it with
../shared/peers/pyss/run_all.sh from the predictsim mirror; see that README);
without it the pyss rows are skipped with a message. Environment overrides:
PYSS_SRC, PYSS_LOG, PYSS_PYTHON, PYSS_HOME, TIDE_TRACES.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tide.sim.workload.base import SimJob

ROOT = Path(__file__).resolve().parents[1]
JOBS_SDSC = 53999


@dataclass
class Timing:
    wall: float  # seconds, median over reps
    cpu: float  # user + sys seconds, median
    rss_mb: float  # peak resident set, max over reps
    extra: dict[str, float]  # in-process stage times the child reports


def _first(*cands: str | Path | None) -> Path | None:
    for c in cands:
        if c and Path(c).exists():
            return Path(c)
    return None


def _traces() -> Path | None:
    return _first(os.environ.get("TIDE_TRACES"), ROOT.parent / "shared" / "traces",
                  "/work/shared/traces")  # fmt: skip


def _run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """(wall s, user + sys s, peak RSS MB, stdout) of one process (wait4: its own rusage)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
        out.seek(0)
        text = out.read().decode(errors="replace")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, text


def _measure(cmd: list[str], reps: int, env: dict[str, str] | None = None) -> Timing:
    runs = [_run(cmd, env) for _ in range(reps)]
    lines = runs[-1][3].strip().splitlines()
    extra = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return Timing(
        wall=statistics.median(r[0] for r in runs),
        cpu=statistics.median(r[1] for r in runs),
        rss_mb=max(r[2] for r in runs),
        extra=extra,
    )


# -- the children -----------------------------------------------------------------------


def child_twin(swf: str, backfill: str, out: str) -> None:
    """tide's twin in this process: what `tide sim run` does but the report."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `tide sim` sets it
    t0 = time.perf_counter()
    from tide.sim import count_fast
    from tide.sim.runner import WorkloadOptions, configure, load_inputs, run_policy
    from tide.sim.runner import write_policy_outputs as write

    t1 = time.perf_counter()
    inputs = load_inputs(swf, None, None, WorkloadOptions())
    run = run_policy(inputs, "slurm", configure(inputs.config, backfill, "fcfs", 0))
    t2 = time.perf_counter()
    write(Path(out), run)
    t3 = time.perf_counter()
    stages = {"import": t1 - t0, "read+simulate+metrics": t2 - t1, "write": t3 - t2}
    stages |= {"c": float(count_fast.available()), "count": float(run.driver == "count")}
    print(json.dumps(stages))


class _Budget(Exception):
    pass


def child_general(scenario: str, policy: str, budget: str, most: str = "0") -> None:
    """The general engine on a generated scenario: jobs fed per second of wall time
    and of CPU time (user + sys of this process: the figure that holds on a loaded
    machine). With a budget (seconds, 0 = none) the run stops there and the rate is
    that of the jobs fed so far (the engine reads the workload as simulated time
    goes); with `most` > 0 it stops once that many jobs were fed (the same work for
    every tree it runs on)."""
    from tide.sim.runner import WorkloadOptions, load_inputs, run_policy

    inputs = load_inputs(None, scenario, None, WorkloadOptions())
    jobs = list(inputs.jobs())  # generate once, time the simulation only
    limit, cap = float(budget), int(most)
    fed, last_t = 0, 0.0
    t0, c0 = time.perf_counter(), time.process_time()

    def feed() -> Iterator[SimJob]:
        nonlocal fed
        for job in jobs:
            if limit and fed % 256 == 0 and time.perf_counter() - t0 > limit:
                raise _Budget
            if cap and fed >= cap:
                raise _Budget
            fed += 1
            yield job

    def progress(t: float, done: int, submitted: int) -> None:
        nonlocal last_t
        last_t = t

    inputs.jobs = feed
    done = True
    try:
        run = run_policy(inputs, policy, inputs.config, progress=progress)
        completed, gpus = run.metrics["jobs_completed"], run.capacity_gpus
    except _Budget:
        done, completed, gpus = False, -1, -1
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    facts = {"jobs": len(jobs), "fed": fed, "seconds": dt, "nodes": len(inputs.cluster.nodes)}
    facts["cpu"] = cpu
    facts |= {"gpus": gpus, "completed": completed, "done": float(done), "virtual_t": last_t}
    print(json.dumps(facts))


# -- checks ------------------------------------------------------------------------------


def _starts_pyss(path: Path) -> dict[int, float]:
    out = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            p = line.split()
            if p and not p[0].startswith(";"):
                out[int(p[0])] = float(p[1]) + float(p[2])
    return out


def _starts_tide(path: Path) -> dict[int, float]:
    import csv

    with path.open() as f:
        return {int(r["job_id"]): float(r["start"]) for r in csv.DictReader(f) if r["start"]}


# -- main -------------------------------------------------------------------------------


def _pyss() -> tuple[list[str], Path] | str:
    """(command prefix, filtered log) or why pyss is skipped."""
    home = _first(os.environ.get("PYSS_HOME"), ROOT.parent / "shared" / "peers" / "pyss",
                  "/work/shared/peers/pyss")  # fmt: skip
    src = _first(os.environ.get("PYSS_SRC"), "/tmp/pyss-repro/py3/src")
    log = _first(os.environ.get("PYSS_LOG"), "/tmp/pyss-repro/runs/SDSC-SP2/swf/log.swf",
                 "/tmp/pyss-ref/sdsc.swf")  # fmt: skip
    py = _first(os.environ.get("PYSS_PYTHON"), "/root/.pyenv/versions/3.11.7/bin/python3.11",
                shutil.which("python3.11"))  # fmt: skip
    why = []
    if home is None:
        why.append("../shared/peers/pyss (run_pyss.py, configs) not found; set PYSS_HOME")
    if src is None:
        mirror = Path("/work/.mirror/dinesh121991+predictsim")
        hint = "" if mirror.exists() else " (and the predictsim mirror is absent: fetch "
        hint += "" if mirror.exists() else "github:dinesh121991/predictsim first)"
        why.append("the pyss Python 3 port is not built (no /tmp/pyss-repro/py3/src): run "
                   f"bash ../shared/peers/pyss/run_all.sh{hint}, or set PYSS_SRC")  # fmt: skip
    if log is None:
        why.append("the strong-filtered SDSC-SP2 log for pyss is absent; set PYSS_LOG")
    if py is None:
        why.append("no python3.11 for pyss; set PYSS_PYTHON")
    if why:
        return "; ".join(why)
    assert home and src and log and py
    return [str(py), str(home / "run_pyss.py"), str(src), str(log)], home / "configs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="runs per figure (median)")
    ap.add_argument("--no-pyss", action="store_true")
    ap.add_argument("--no-cli", action="store_true", help="skip the full `tide sim run` rows")
    ap.add_argument("--no-general", action="store_true", help="skip seed004 and month1000")
    ap.add_argument("--general-budget", type=float, default=300.0,
                    help="seconds per general-engine run (0 = to the end)")  # fmt: skip
    ap.add_argument(
        "--general-jobs",
        type=int,
        default=0,
        help="stop each general-engine run once this many jobs were fed "
        "(0 = at the budget or the end): the same work in every tree",
    )
    ap.add_argument(
        "--scenarios", default="seed004,month1000", help="general-engine presets to run"
    )
    ap.add_argument(
        "--baseline-src",
        type=Path,
        help="another tide checkout (e.g. /work/main): its src/ runs the same "
        "general-engine runs in this run, for a CPU-time ratio",
    )
    ap.add_argument("--no-swf", action="store_true", help="skip the SDSC-SP2 rows")
    ap.add_argument("--modes", default="easy,conservative")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind, *rest = a.child
        (child_twin if kind == "twin" else child_general)(*rest)
        return

    if a.no_swf:
        _general(a)
        return
    traces = _traces()
    swf = traces / "sdsc-sp2" / "SDSC-SP2-1998-4.2-cln.swf.gz" if traces else None
    if swf is None or not swf.exists():
        raise SystemExit("SDSC-SP2 log not found: set TIDE_TRACES to the shared traces folder")
    py = sys.executable
    tide_cli = str(Path(py).parent / "tide")
    pyss = None if a.no_pyss else _pyss()
    if isinstance(pyss, str):
        print(f"pyss: skipped: {pyss}")
        pyss = None
    _bytecode(py, ROOT / "src" / "tide")
    if pyss is not None:
        _bytecode(pyss[0][0], Path(pyss[0][2]))
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start; "
          f"reps {a.reps}, wall = median")  # fmt: skip
    rows: list[tuple[str, str, Timing]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode in a.modes.split(","):
            cfg = "easy_user" if mode == "easy" else "conservative_user"
            ref = None
            if pyss is not None:
                cmd, configs = pyss
                ref = Path(tmp) / f"pyss-{mode}.swf.gz"
                run = [cmd[0], cmd[1], cmd[2], cmd[3], str(configs / f"{cfg}.py"), str(ref)]
                rows.append((mode, "pyss (py3.11)", _measure(run, a.reps)))
                _report(rows[-1])
            out = Path(tmp) / f"tide-{mode}"
            twin = [py, __file__, "--child", "twin", str(swf), mode, str(out)]
            rows.append((mode, "tide twin", _measure(twin, a.reps)))
            _report(rows[-1])
            if ref is not None:
                ours, theirs = _starts_tide(out / "jobs.csv"), _starts_pyss(ref)
                same = sum(ours.get(k) == v for k, v in theirs.items())
                print(f"  {mode}: start times equal to pyss's: {same:,} of {len(theirs):,}")
            if not a.no_cli:
                cli = [tide_cli, "sim", "run", "--workload", str(swf), "--backfill", mode,
                       "--order", "fcfs", "--bf-interval", "0", "--out", f"{out}-cli"]  # fmt: skip
                rows.append((mode, "tide sim run (all outputs)", _measure(cli, a.reps)))
                _report(rows[-1])
    _summary(rows)
    if not a.no_general:
        print()
        _general(a)


def _general(a: argparse.Namespace) -> None:
    """The general engine on presets: jobs fed per wall and per CPU second; with
    --baseline-src the same runs on that tree, and the CPU ratio."""
    trees: list[tuple[str, dict[str, str] | None]] = [("this tree", None)]
    _bytecode(sys.executable, ROOT / "src" / "tide")
    if a.baseline_src is not None:
        env = dict(os.environ, PYTHONPATH=str(a.baseline_src.resolve() / "src"))
        trees.insert(0, (f"baseline {a.baseline_src}", env))
        _bytecode(sys.executable, a.baseline_src.resolve() / "src" / "tide")
    for scenario in a.scenarios.split(","):
        cpu: dict[str, float] = {}
        for who, env in trees:
            cmd = [sys.executable, __file__, "--child", "general", scenario, "slurm",
                   str(a.general_budget), str(a.general_jobs)]  # fmt: skip
            t = _measure(cmd, a.reps, env)
            e = t.extra
            cpu[who] = e["cpu"] / max(1, e["fed"])
            what = (
                f"all {e['jobs']:,.0f} jobs"
                if e["done"]
                else f"{e['fed']:,.0f} of "
                f"{e['jobs']:,.0f} jobs (cut; virtual time {e['virtual_t'] / 3600:.1f} h)"
            )
            head = f"general engine, {scenario} ({e['nodes']:.0f} nodes, slurm), {who}"
            fed = e["fed"]
            rates = f"{fed / e['seconds']:,.0f} jobs/s wall, {fed / e['cpu']:,.0f} jobs/CPU-s"
            print(f"{head}: {what} in {e['seconds']:.1f} s wall, {e['cpu']:.1f} s CPU = "
                  f"{rates}, peak RSS {t.rss_mb:.0f} MB")  # fmt: skip
        if len(cpu) == 2:
            base, ours = cpu.values()
            print(f"  {scenario}: CPU per job, baseline / this tree = x{base / ours:.2f}")


def _bytecode(python: str, tree: Path) -> None:
    """Compile the tree's modules to bytecode first, for tide and pyss alike: an
    installed package has it, and with PYTHONDONTWRITEBYTECODE set (as in some
    sandboxes) every run would otherwise compile its sources again."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python, "-m", "compileall", "-q", str(tree)], env=env, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def _report(row: tuple[str, str, Timing]) -> None:
    mode, who, t = row
    stages = ", ".join(f"{k} {v:.3f}s" for k, v in t.extra.items() if k not in ("c", "count"))
    print(f"  {mode:12s} {who:28s} wall {t.wall:6.2f}s  cpu {t.cpu:6.2f}s  "
          f"{JOBS_SDSC / t.wall:9,.0f} jobs/s  RSS {t.rss_mb:5.0f} MB"
          + (f"  [{stages}]" if stages else ""))  # fmt: skip
    if t.extra.get("c") == 0.0:
        print("    (C kernel not built or TIDE_NO_C set: the pure-Python count driver ran)")


def _summary(rows: list[tuple[str, str, Timing]]) -> None:
    print("\nratios (pyss / tide; the issue asks for >= 5x):")
    for mode in dict.fromkeys(r[0] for r in rows):
        base = next((t for m, w, t in rows if m == mode and w.startswith("pyss")), None)
        if base is None:
            print(f"  {mode}: no pyss run to compare with")
            continue
        for m, who, t in rows:
            if m == mode and not who.startswith("pyss"):
                print(f"  {mode:12s} {who:28s} wall x{base.wall / t.wall:5.1f}  "
                      f"cpu x{base.cpu / t.cpu:5.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
