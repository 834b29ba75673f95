"""Record the scenario corpus on the real Slurm 22.05 peer, and replay it in the twin.

  .venv/bin/python tools/slurm_peer/corpus.py record [NAME ...] --runs 2   # root, ~2 min a run
  .venv/bin/python tools/slurm_peer/corpus.py compare [NAME ...]           # twin only, seconds

`record` starts a fresh peer for every run (start.sh, own folder and ports), applies the
scenario's slurm.conf lines (`scontrol reconfigure`) and sacctmgr commands, submits the jobs
at their offsets, waits for the queue to drain and keeps, under tests/data/slurm_corpus/NAME/:
conf/ (slurm.conf, gres.conf, topology.conf, sacctmgr dump; from run 1) and runK/ with
manifest.json (what was submitted, with Slurm's ids), sacct.txt (`sacct -D -X -P`: every
incarnation of every job) and meta.json (the epoch of the first submission and of
slurmctld's start, which fixes the phase of PriorityCalcPeriod).

`compare` turns each run into a tide JSONL (ids = Slurm's, submit offsets and run times as
recorded, the very sbatch options, failures as the job's final state), runs
`tide sim run --policy slurm` on conf/ and reports, per run, the share of jobs started within
2 s of Slurm and the share also on the same nodes (tests/sim/test_slurm_corpus.py asserts it).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from slurm_peer.peer import SCRIPTS, Peer
from slurm_peer.scenarios import SCENARIOS, Scenario

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "slurm_corpus"
SACCT_FIELDS = ("JobIDRaw,JobID,JobName,Account,Partition,QOS,AllocTRES,NNodes,Submit,"
                "Eligible,Start,End,NodeList,State,ExitCode,Flags")  # fmt: skip
TOLERANCE = 2.0  # seconds: "started at the same time as Slurm"
RELEASE_DELAY = True
# seconds a job killed by preemption keeps its batch host and its other nodes COMPLETING
# (slurmd ends the batch step, then reports; not in the log at info level): bounded by
# the recorded runs, node001 3.0-3.8 s after job 1's kill, node005 3.3-4.3 s after job
# 2's, node006-008 0.1-0.7 s (docs/slurm-peer.md, "Preemption")
KILL_COMPLETING = (3.35, 0.4)


# --- recording (needs root and the peer) ------------------------------------------------


def _edit_conf(path: Path, sc: Scenario) -> None:
    lines = path.read_text().splitlines()
    keys = {k.lower(): v for k, v in sc.conf.items()}
    out = []
    for ln in lines:
        k = ln.split("=", 1)[0].strip().lower()
        if k in keys:
            v = keys.pop(k)
            if v:
                out.append(f"{ln.split('=', 1)[0]}={v}")
            continue
        first = ln.split(" ", 1)[0]
        if any(x.split(" ", 1)[0] == first for x in sc.conf_lines):
            continue
        out.append(ln)
    out += [f"{k}={v}" for k, v in sc.conf.items() if k.lower() in keys and v]
    out += list(sc.conf_lines)
    path.write_text("\n".join(out) + "\n")


def _setup(peer: Peer, sc: Scenario) -> None:
    if sc.conf or sc.conf_lines:
        _edit_conf(peer.folder / "etc" / "slurm.conf", sc)
        peer._run(["scontrol", "reconfigure"])
        time.sleep(2.0)
    for cmd in sc.sacctmgr:
        peer._run(["sacctmgr", "-i", *shlex.split(cmd)])
    if sc.sacctmgr:
        time.sleep(2.0)  # slurmctld learns association/QOS changes from slurmdbd


def _submit(peer: Peer, sc: Scenario) -> tuple[float, list[dict[str, object]]]:
    out_dir = peer.folder / "out"
    t0 = float(int(time.time()) + 2) + 0.05
    rows: list[dict[str, object]] = []
    ids: dict[str, str] = {}
    for i, job in enumerate(sc.jobs):
        delay = t0 + job.at - time.time()
        if delay > 0:
            time.sleep(delay)
        opts = job.opts
        for k, v in ids.items():
            opts = opts.replace("{" + k + "}", v)
        name = job.name or f"{sc.name[:3]}{i:02d}"
        args = ["sbatch", "--parsable", "-J", name, "-o", str(out_dir / "%j.out"),
                *shlex.split(opts), "--wrap", job.wrap()]  # fmt: skip
        jid = peer._run(args).strip().split(";")[0]
        ids[f"j{i}"] = jid
        rows.append(dict(index=i, job_id=int(jid), name=name, at=job.at, sbatch=opts,
                         exit=job.exit, submit_wall=round(time.time(), 3)))  # fmt: skip
    return t0, rows


def _ctld_start(log: Path) -> float | None:
    for ln in log.read_text(errors="replace").splitlines():
        if "slurmctld version" in ln and "started" in ln:
            stamp = ln[1 : ln.index("]")]
            return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()
    return None


def _start(peer: Peer, timeout: float = 300.0) -> None:
    """start.sh, then wait until every slurmd has registered: on a loaded machine start.sh's
    own wait (60 s) can end with a node or two still coming up."""
    peer._run(["bash", str(SCRIPTS / "start.sh")], check=False)
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        idle = peer._run(["sinfo", "-h", "-p", "gpu", "-t", "idle", "-o", "%D"], check=False)
        if sum(int(x) for x in idle.split() if x.isdigit()) == peer.nodes:
            return
        time.sleep(1.0)
    raise RuntimeError(f"the peer's {peer.nodes} nodes were not all idle after {timeout:.0f} s")


def record(sc: Scenario, run_dir: Path, peer: Peer, conf_dir: Path | None) -> None:
    try:
        _start(peer)
        _setup(peer, sc)
        t0, rows = _submit(peer, sc)
        try:
            peer.wait_drained(timeout=sc.timeout, poll=1.0)
        except TimeoutError:
            peer._run(["scancel", "--user=root"], check=False)
            time.sleep(3.0)
        sacct = peer._run(["sacct", "-D", "-X", "-P", "-n", "-a", "-S", "2000-01-01", "-E",
                           "now", f"--format={SACCT_FIELDS}"])  # fmt: skip
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "sacct.txt").write_text(SACCT_FIELDS.replace(",", "|") + "\n" + sacct)
        (run_dir / "manifest.json").write_text(json.dumps(rows, indent=1) + "\n")
        log = peer.folder / "log" / "slurmctld.log"
        meta = {"t0": t0, "ctld_start": _ctld_start(log), "scenario": sc.name}
        (run_dir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        keep = ("sched", "backfill", "Allocate", "preempt", "submit_batch", "requeue",
                "_job_complete", "version")  # fmt: skip
        (run_dir / "slurmctld.log").write_text("".join(
            ln for ln in log.read_text(errors="replace").splitlines(keepends=True)
            if any(k in ln for k in keep)))  # fmt: skip
        if conf_dir is not None:
            save_conf(peer, conf_dir)
    finally:
        peer.stop()


def save_conf(peer: Peer, conf_dir: Path) -> None:
    """slurm.conf, gres.conf, topology.conf, the account dump and the QOS table (22.05's
    dump has no QOS lines; tide reads `sacctmgr -P show qos` from qos.txt)."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    for name in ("slurm.conf", "gres.conf", "topology.conf"):
        (conf_dir / name).write_text((peer.folder / "etc" / name).read_text())
    peer._run(["sacctmgr", "-i", "dump", "peer", f"file={conf_dir / 'sacctmgr.dump'}"])
    (conf_dir / "qos.txt").write_text(peer._run(["sacctmgr", "-P", "show", "qos"]))


def record_conf(sc: Scenario, peer: Peer, conf_dir: Path) -> None:
    """The scenario's configuration alone (no jobs): start, set up, save, stop."""
    try:
        _start(peer)
        _setup(peer, sc)
        save_conf(peer, conf_dir)
    finally:
        peer.stop()


# --- the recorded runs ---------------------------------------------------------------------


@dataclass(slots=True)
class Incarnation:
    """One row of `sacct -D -X`: a job, or one earlier run of a requeued job."""

    raw_id: int
    job_id: str  # 12, 12_3 (array task)
    name: str
    submit: float | None
    eligible: float | None
    start: float | None
    end: float | None
    nodelist: str
    state: str
    exit_code: str


def _ts(s: str) -> float | None:
    if not s or s in ("Unknown", "None", "N/A"):
        return None
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()


def read_sacct(path: Path) -> list[Incarnation]:
    lines = path.read_text().splitlines()
    head = lines[0].split("|")
    out = []
    for ln in lines[1:]:
        f = dict(zip(head, ln.split("|"), strict=False))
        if not f.get("JobIDRaw"):
            continue
        nl = f["NodeList"]
        out.append(Incarnation(
            raw_id=int(f["JobIDRaw"]), job_id=f["JobID"], name=f["JobName"],
            submit=_ts(f["Submit"]), eligible=_ts(f["Eligible"]), start=_ts(f["Start"]),
            end=_ts(f["End"]), nodelist="" if nl in ("None assigned", "") else nl,
            state=f["State"].split()[0], exit_code=f["ExitCode"],
        ))  # fmt: skip
    return out


def final_runs(incs: list[Incarnation]) -> dict[int, Incarnation]:
    """Each job's last incarnation (the one that ran to its end), by raw id."""
    out: dict[int, Incarnation] = {}
    for inc in incs:
        prev = out.get(inc.raw_id)
        if prev is None or (inc.start or 0) >= (prev.start or 0):
            out[inc.raw_id] = inc
    return out


def first_starts(incs: list[Incarnation]) -> dict[int, Incarnation]:
    """Each job's first incarnation that started (what the comparison looks at)."""
    out: dict[int, Incarnation] = {}
    for inc in sorted(incs, key=lambda x: (x.start is None, x.start or 0)):
        if inc.start is not None and inc.raw_id not in out:
            out[inc.raw_id] = inc
    return out


@dataclass(slots=True)
class Run:
    name: str  # scenario
    folder: Path
    t0: float
    ctld_start: float | None
    manifest: list[dict[str, object]]
    incs: list[Incarnation]
    log: LogTimes

    @property
    def origin(self) -> float:
        """Time zero: the whole second of the first submission."""
        return self.t0 - 0.05

    def start(self, raw: int, inc: Incarnation | None) -> float | None:
        """A job's first start, from the log (ms) where it has it."""
        got = self.log.starts.get(raw)
        if got:
            return min(got)
        return None if inc is None else inc.start

    def run_time(self, raw: int, inc: Incarnation) -> float:
        """The last run's length: log times (ms) where the log has both ends."""
        starts, ends = self.log.starts.get(raw), self.log.ends.get(raw)
        if starts and ends and ends[-1] >= starts[-1]:
            return ends[-1] - starts[-1]
        return (inc.end - inc.start) if inc.start is not None and inc.end else 0.0

    def work_time(self, raw: int, inc: Incarnation) -> float:
        """How long the job would have run: its last run's length, but for a job that
        preemption killed (PREEMPTED, not requeued) its script's sleep plus the run's
        median launch overhead; its recorded length ends at the kill, and replayed as
        such the job would end on its own before the twin's preemptor arrives."""
        sleep = self._sleep(raw)
        if inc.state != "PREEMPTED" or sleep is None:
            return self.run_time(raw, inc)
        over = []
        for r, i in final_runs(self.incs).items():
            s = self._sleep(r)
            if i.state == "COMPLETED" and s is not None:
                over.append(self.run_time(r, i) - s)
        return sleep + (sorted(over)[len(over) // 2] if over else 0.0)

    def _sleep(self, raw: int) -> int | None:
        """The scenario's sleep for a job (None: an expression, or not a scenario job)."""
        index = {int(str(m["job_id"])): int(str(m["index"])) for m in self.manifest}.get(raw)
        sc = SCENARIOS.get(self.name)
        if index is None or sc is None or not isinstance(sc.jobs[index].sleep, int):
            return None
        return int(sc.jobs[index].sleep)

    def release_delay(self) -> float:
        """How long after a job's end the main scheduler used its nodes (the median over
        main-scheduler starts within 1.5 s of an end): nodes complete (epilog, the end
        message) before Slurm schedules them again."""
        ends = sorted(t for ts in self.log.ends.values() for t in ts)
        gaps = []
        for s in self.log.main:
            before = [e for e in ends if e <= s]
            if before and s - before[-1] < 1.5:
                gaps.append(s - before[-1])
        return sorted(gaps)[len(gaps) // 2] if gaps else 0.0

    def bf_phase(self) -> float | None:
        """When, within each second after time zero, the backfill thread ran."""
        if not self.log.backfill:
            return None
        fr = sorted((t - self.origin) % 1.0 for t in self.log.backfill)
        return fr[len(fr) // 2]


def load_run(folder: Path) -> Run:
    meta = json.loads((folder / "meta.json").read_text())
    return Run(meta["scenario"], folder, float(meta["t0"]), meta.get("ctld_start"),
               json.loads((folder / "manifest.json").read_text()),
               read_sacct(folder / "sacct.txt"), read_log(folder / "slurmctld.log"))  # fmt: skip


_LOG_START = re.compile(r"^\[(\S+)\] (?:sched/backfill: _start_job: Started|sched: Allocate) "
                        r"JobId=(\S+) ")  # fmt: skip
_LOG_END = re.compile(r"^\[(\S+)\] _job_complete: JobId=(\S+) done")
_LOG_SUBMIT = re.compile(r"^\[(\S+)\] _slurm_rpc_submit_batch_job: JobId=(\d+) ")


def _raw(log_id: str) -> int:
    """'1_0(2)' -> 2 (an array task's own id), '8' -> 8."""
    return int(log_id.split("(")[1].rstrip(")")) if "(" in log_id else int(log_id)


@dataclass(slots=True)
class LogTimes:
    """slurmctld's millisecond times: every start and end of each raw id, and when the
    backfill thread ran (its phase within the second)."""

    starts: dict[int, list[float]]
    ends: dict[int, list[float]]
    backfill: list[float]
    main: list[float] = field(default_factory=list)  # starts by the main scheduler
    submits: dict[int, float] = field(default_factory=dict)  # as slurmctld took them in


def read_log(path: Path) -> LogTimes:
    out = LogTimes({}, {}, [])
    for ln in path.read_text(errors="replace").splitlines():
        if m := _LOG_START.match(ln):
            t = datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
            out.starts.setdefault(_raw(m[2]), []).append(t)
            (out.backfill if "sched/backfill" in ln else out.main).append(t)
        elif m := _LOG_SUBMIT.match(ln):
            out.submits[int(m[2])] = datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
        elif m := _LOG_END.match(ln):
            t = datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
            out.ends.setdefault(_raw(m[2]), []).append(t)
    return out


def _array_of(job_id: str) -> tuple[int, int] | None:
    if "_" not in job_id:
        return None
    a, t = job_id.split("_", 1)
    return (int(a), int(t)) if t.isdigit() else None


def twin_ids(run: Run) -> dict[int, int]:
    """Slurm's raw id -> the twin's id. Jobs keep theirs; the tasks of an array share its
    ids in task order: Slurm keeps a pending array as one record under the array's id and
    starts its tasks lowest first, giving each a new id as it splits off (the last task
    keeps the array's), so by raw id the twin would start task 7 first."""
    out: dict[int, int] = {}
    tasks: dict[int, list[tuple[int, int]]] = {}
    for raw, inc in final_runs(run.incs).items():
        arr = _array_of(inc.job_id)
        if arr is None:
            out[raw] = raw
        else:
            tasks.setdefault(arr[0], []).append((arr[1], raw))
    for items in tasks.values():
        for (_, raw), twin in zip(sorted(items), sorted(r for _, r in items), strict=True):
            out[raw] = twin
    return out


def write_jsonl(run: Run, path: Path) -> int:
    """The run as a tide JSONL: one line per job (per array task), ids as twin_ids."""
    by_id = {int(str(m["job_id"])): m for m in run.manifest}
    last = final_runs(run.incs)
    ids = twin_ids(run)
    lines = []
    origin = run.origin
    delay = run.release_delay() if RELEASE_DELAY else 0.0
    for raw, inc in sorted(last.items()):
        arr = _array_of(inc.job_id)
        m = by_id.get(arr[0] if arr else raw)
        if m is None:
            continue
        # when slurmctld took the submission in (its log), else when sbatch returned
        took = run.log.submits.get(int(str(m["job_id"])), float(str(m["submit_wall"])))
        submit = round(max(0.0, took - origin), 3)
        obj: dict[str, object] = {
            "id": ids[raw], "submit": submit,
            "duration": round(run.work_time(raw, inc) + delay, 3),
            "name": inc.name, "user": "root", "sbatch": str(m["sbatch"]),
        }  # fmt: skip
        if arr:
            obj["array_job_id"], obj["array_task_id"] = arr
        if inc.state == "FAILED":
            obj["state"] = "FAILED"
        lines.append((submit, ids[raw], json.dumps(obj)))
    head = [f"# source: real Slurm 22.05 peer, scenario {run.name}, {run.folder.name}",
            f"# epoch: {origin:.3f}"]  # fmt: skip
    if run.ctld_start is not None:  # slurmctld's start: its priority and background threads
        head.append(f"# priority_phase: {run.ctld_start - origin:.3f}")
        head.append(f"# background_phase: {run.ctld_start - origin:.3f}")
    if (phase := run.bf_phase()) is not None:
        head.append(f"# bf_phase: {phase:.3f}")
    head.append(f"# kill_completing: {KILL_COMPLETING[0]},{KILL_COMPLETING[1]}")
    path.write_text("\n".join(head + [x[2] for x in sorted(lines)]) + "\n")
    return len(lines)


# --- the twin and the comparison ---------------------------------------------------------


def run_twin(conf: Path, workload: Path, out: Path) -> dict[int, tuple[float | None, str]]:
    """`tide sim run --policy slurm`; job id -> (first start, nodes)."""
    import csv

    exe = Path(sys.executable).with_name("tide")
    args = [str(exe), "sim", "run", "--policy", "slurm", "--slurm-conf", str(conf),
            "--workload", str(workload), "--out", str(out)]  # fmt: skip
    res = subprocess.run(args, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"tide sim run failed: {res.stderr.strip()[-1500:]}")
    got = {}
    for r in csv.DictReader((out / "jobs.csv").open()):
        got[int(r["job_id"])] = (float(r["start"]) if r["start"] else None, r["nodelist"])
    return got


@dataclass(slots=True)
class JobCmp:
    job_id: str
    slurm_start: float | None
    tide_start: float | None
    slurm_nodes: str
    tide_nodes: str
    key: tuple[int, int] = (0, -1)  # (index in the scenario, array task or -1)
    other: list[tuple[float | None, str]] = field(default_factory=list)  # other runs

    @property
    def matches_any_run(self) -> bool:
        """Within 2 s of this run's start on its nodes, or of another run's (Slurm's
        own jitter: the same job started by the main or the backfill pass)."""
        if self.same_nodes:
            return True
        t = self.tide_start
        return any(
            s is not None and t is not None and abs(t - s) <= TOLERANCE and n == self.tide_nodes
            for s, n in self.other
        )

    @property
    def close(self) -> bool:
        if self.slurm_start is None or self.tide_start is None:
            return self.slurm_start is None and self.tide_start is None
        return abs(self.tide_start - self.slurm_start) <= TOLERANCE

    @property
    def same_nodes(self) -> bool:
        return self.close and self.slurm_nodes == self.tide_nodes


def compare_run(run: Run, conf: Path, scratch: Path) -> list[JobCmp]:
    scratch.mkdir(parents=True, exist_ok=True)
    wl = scratch / f"{run.name}-{run.folder.name}.jsonl"
    write_jsonl(run, wl)
    twin = run_twin(conf, wl, scratch / f"{run.name}-{run.folder.name}")
    origin = run.origin
    firsts = first_starts(run.incs)
    out = []
    ids = twin_ids(run)
    for raw, inc in sorted(final_runs(run.incs).items()):
        if ids[raw] not in twin:
            continue
        first = firsts.get(raw)
        started = run.start(raw, first)
        s_start = None if started is None else started - origin
        t_start, t_nodes = twin[ids[raw]]
        out.append(JobCmp(inc.job_id, s_start, t_start, first.nodelist if first else "", t_nodes,
                          job_key(run, raw, inc)))  # fmt: skip
    return out


def job_key(run: Run, raw: int, inc: Incarnation) -> tuple[int, int]:
    """A job's place in the scenario (its index, its array task), the same in every run."""
    arr = _array_of(inc.job_id)
    index = {int(str(m["job_id"])): int(str(m["index"])) for m in run.manifest}
    return (index.get(arr[0] if arr else raw, -1), arr[1] if arr else -1)


def starts_by_key(run: Run) -> dict[tuple[int, int], tuple[float | None, str]]:
    """Each job's first start (seconds from the run's time zero) and nodes, by job_key."""
    firsts = first_starts(run.incs)
    out = {}
    for raw, inc in final_runs(run.incs).items():
        first = firsts.get(raw)
        started = run.start(raw, first)
        out[job_key(run, raw, inc)] = (None if started is None else started - run.origin,
                                       first.nodelist if first else "")  # fmt: skip
    return out


def compare_scenario(name: str, scratch: Path) -> dict[str, list[JobCmp]]:
    """Every run of a scenario replayed by the twin, each job also set against the other
    runs' starts."""
    runs = {f.name: load_run(f) for f in runs_of(name)}
    keyed = {k: starts_by_key(r) for k, r in runs.items()}
    out = {}
    for k, run in runs.items():
        rows = compare_run(run, CORPUS / name / "conf", scratch)
        for row in rows:
            row.other = [keyed[o][row.key] for o in runs if o != k and row.key in keyed[o]]
        out[k] = rows
    return out


def figures(rows: list[JobCmp]) -> dict[str, float]:
    n = len(rows) or 1
    return {"jobs": len(rows), "within_2s": sum(r.close for r in rows) / n,
            "same_nodes": sum(r.same_nodes for r in rows) / n,
            "any_run": sum(r.matches_any_run for r in rows) / n}  # fmt: skip


def runs_of(name: str) -> list[Path]:
    return sorted(p for p in (CORPUS / name).glob("run*") if (p / "meta.json").exists())


def _table(rows: list[JobCmp]) -> str:
    out = [f"{'job':10} {'S.start':>7} {'T.start':>7} {'d':>5}  S.nodes / T.nodes"]
    for r in sorted(rows, key=lambda r: (r.slurm_start is None, r.slurm_start or 0)):
        d = (
            "-"
            if r.slurm_start is None or r.tide_start is None
            else f"{r.tide_start - r.slurm_start:+.0f}"
        )
        mark = "" if r.same_nodes else ("  (as another run)" if r.matches_any_run else "  <--")
        out.append(f"{r.job_id:10} {_f(r.slurm_start):>7} {_f(r.tide_start):>7} {d:>5}  "
                   f"{r.slurm_nodes} / {r.tide_nodes}{mark}")  # fmt: skip
    return "\n".join(out)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("record", "conf", "compare"))
    ap.add_argument("names", nargs="*", help=f"scenarios (default all: {', '.join(SCENARIOS)})")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--first-run", type=int, default=1)
    ap.add_argument("--peer-dir", type=Path, default=Path("/tmp/slurm-corpus-peer"))
    ap.add_argument("--port-shift", type=int, default=20000)
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/slurm-corpus-twin"))
    ap.add_argument("-v", "--verbose", action="store_true", help="job-by-job tables")
    a = ap.parse_args(argv)
    names = a.names or list(SCENARIOS)
    for name in names:
        sc = SCENARIOS[name]
        if a.action == "conf":
            peer = Peer(folder=a.peer_dir, port_shift=a.port_shift)
            record_conf(sc, peer, CORPUS / name / "conf")
            continue
        if a.action == "record":
            for k in range(a.first_run, a.first_run + a.runs):
                peer = Peer(folder=a.peer_dir, port_shift=a.port_shift)
                t = time.monotonic()
                conf = CORPUS / name / "conf" if k == 1 else None
                record(sc, CORPUS / name / f"run{k}", peer, conf)
                print(f"{name} run{k}: {time.monotonic() - t:.0f} s", flush=True)
            continue
        for run_name, rows in compare_scenario(name, a.scratch).items():
            f = figures(rows)
            print(f"{name:13} {run_name}: {f['jobs']:3d} jobs, within 2 s {f['within_2s']:4.0%}, "
                  f"same nodes {f['same_nodes']:4.0%}, as in one of the runs {f['any_run']:4.0%}",
                  flush=True)  # fmt: skip
            if a.verbose:
                print(_table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
