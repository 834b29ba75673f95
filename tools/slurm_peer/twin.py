"""The twin's side: Slurm's records -> tide JSONL -> `tide sim run --policy slurm`.

The JSONL carries what tide cannot know in advance and Slurm measured: each job's submit
offset (from the first submission) and its actual run time (end - start as Slurm recorded
it), with the very sbatch options the job was submitted with.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from slurm_peer.slurmlog import LogJob


@dataclass(slots=True)
class SlurmRecord:
    """One job as the real Slurm ran it (epoch seconds, 1 s resolution unless from the log)."""

    job_id: int
    name: str
    gpus: int
    submit: float
    start: float
    end: float
    nodelist: str
    leaves: int
    sched: str  # SchedMain/SchedBackfill flag from sacct ("main", "backfill", ...)
    sbatch: str


def read_slurm(jobs_csv: Path, manifest: Path) -> list[SlurmRecord]:
    """parse_jobs.py's CSV joined with the manifest (for the sbatch options)."""
    opts = {r["job_id"]: r.get("sbatch", "") for r in csv.DictReader(manifest.open())}
    out = []
    for r in csv.DictReader(jobs_csv.open()):
        if r["job_id"] not in opts or not r["start"] or not r["end"]:
            continue
        out.append(
            SlurmRecord(
                job_id=int(r["job_id"]), name=r["name"], gpus=int(r["gpus"] or 0),
                submit=float(r["submit"]), start=float(r["start"]), end=float(r["end"]),
                nodelist=r["nodelist"], leaves=int(r["leaves"] or 0), sched=r["sched"],
                sbatch=opts[r["job_id"]],
            )
        )  # fmt: skip
    return sorted(out, key=lambda j: j.job_id)


def with_log_times(records: list[SlurmRecord], log: dict[int, LogJob]) -> list[SlurmRecord]:
    """The same records with slurmctld's millisecond times where the log has them."""
    out = []
    for r in records:
        lj = log.get(r.job_id)
        if lj and lj.submit is not None and lj.start is not None and lj.end is not None:
            r = replace(r, submit=lj.submit, start=lj.start, end=lj.end)
        out.append(r)
    return out


def origin(records: list[SlurmRecord]) -> float:
    """Time zero of the comparison: the first submission."""
    return min(r.submit for r in records)


def write_jsonl(records: list[SlurmRecord], path: Path, user: str = "root") -> int:
    """Submit offsets and actual durations, in submit order (ties by job id)."""
    t0 = origin(records)
    lines = []
    for r in sorted(records, key=lambda j: (j.submit, j.job_id)):
        obj = {
            "id": r.job_id,
            "submit": _num(r.submit - t0),
            "duration": _num(max(0.0, r.end - r.start)),
            "name": r.name,
            "user": user,
            "sbatch": r.sbatch,
        }
        lines.append(json.dumps(obj))
    header = (f"# source: real Slurm 22.05 peer, {len(lines)} jobs, t=0 at epoch {t0:.3f}\n"
              f"# epoch: {t0:.3f}\n")
    path.write_text(header + "\n".join(lines) + "\n")
    return len(lines)


def _num(x: float) -> int | float:
    r = round(x, 3)
    return int(r) if float(r).is_integer() else r


def tide_exe() -> list[str]:
    """`tide` next to this Python (the repo's venv), else the one on PATH."""
    here = Path(sys.executable).with_name("tide")
    if here.exists():
        return [str(here)]
    found = shutil.which("tide")
    if found:
        return [found]
    raise FileNotFoundError("no `tide` executable; run with the repo's .venv/bin/python")


def run_twin(conf: Path, workload: Path, out: Path, extra: list[str] | None = None) -> Path:
    """`tide sim run --policy slurm`; returns the twin's jobs.csv."""
    args = [*tide_exe(), "sim", "run", "--policy", "slurm", "--slurm-conf", str(conf),
            "--workload", str(workload), "--out", str(out), *(extra or [])]  # fmt: skip
    res = subprocess.run(args, capture_output=True, text=True, check=False)
    (out.parent / f"{out.name}.log").write_text(res.stdout + res.stderr)
    if res.returncode != 0:
        raise RuntimeError(f"tide sim run failed ({res.returncode}): {res.stderr.strip()[-800:]}")
    return out / "jobs.csv"


@dataclass(slots=True)
class TwinRecord:
    job_id: int
    start: float | None
    end: float | None
    nodelist: str
    leaves: int


def read_twin(jobs_csv: Path) -> dict[int, TwinRecord]:
    out = {}
    for r in csv.DictReader(jobs_csv.open()):
        start = float(r["start"]) if r["start"] else None
        end = float(r["end"]) if r["end"] else None
        jid = int(r["job_id"])
        out[jid] = TwinRecord(jid, start, end, r["nodelist"], int(r["leaf_switches"] or 0))
    return out


def as_twin(other: list[SlurmRecord], by_name_of: list[SlurmRecord]) -> dict[int, TwinRecord]:
    """Another Slurm run of the same workload in the twin's shape (times from its own first
    submission), keyed by the job ids of `by_name_of` (jobs matched by name)."""
    t0 = origin(other)
    ids = {r.name: r.job_id for r in by_name_of}
    return {
        ids[r.name]: TwinRecord(ids[r.name], r.start - t0, r.end - t0, r.nodelist, r.leaves)
        for r in other
        if r.name in ids
    }


def priorities_at_submit(conf: Path, workload: Path) -> dict[int, float]:
    """tide's multifactor priority of each job alone at its submit time, with no usage yet
    (what Slurm logs as InitPrio before any fair-share usage is charged)."""
    from tide.config.loader import load_cluster
    from tide.model import Job
    from tide.sched.fairshare import fair_tree_factors
    from tide.sched.priority import compute_priorities
    from tide.sim.workload import read_jsonl

    loaded = load_cluster(conf)
    fs = fair_tree_factors(loaded.accounts, {})
    out = {}
    for sim in read_jsonl(workload):
        req = sim.request
        job = Job(id=sim.id, request=req, user=sim.user,
                  account=sim.account or req.account or "root", submit=sim.submit,
                  eligible=sim.submit)  # fmt: skip
        res = compute_priorities([job], loaded.cluster, loaded.config, loaded.accounts, fs,
                                 sim.submit)  # fmt: skip
        out[sim.id] = float(res.total[0])
    return out
