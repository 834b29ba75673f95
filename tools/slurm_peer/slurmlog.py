"""Per-job events from slurmctld's log, with the millisecond time stamps that sacct lacks.

Lines read (SlurmctldDebug=info, the default iso8601_ms time format):
  _slurm_rpc_submit_batch_job: JobId=N InitPrio=P ...      -> submit time, initial priority
  sched: Allocate JobId=N NodeList=... ...                  -> started by the main scheduler
  sched/backfill: _start_job: Started JobId=N in P on ...   -> started by the backfill pass
  _job_complete: JobId=N done                               -> end
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\] (.*)$")
_SUBMIT = re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\d+) InitPrio=(\d+)")
_MAIN = re.compile(r"sched: Allocate JobId=(\d+) NodeList=(\S+)")
_BACKFILL = re.compile(r"sched/backfill: _start_job: Started JobId=(\d+) in \S+ on (\S+)")
_DONE = re.compile(r"_job_complete: JobId=(\d+) done")


@dataclass(slots=True)
class LogJob:
    job_id: int
    submit: float | None = None  # epoch seconds, ms resolution
    init_prio: int | None = None
    start: float | None = None
    started_by: str = ""  # "main" or "backfill"
    nodes: str = ""
    end: float | None = None


def _epoch(stamp: str) -> float:
    # the log is in the daemon's local time, as time.mktime reads it
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp() if "." in stamp else (
        datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").timestamp())  # fmt: skip


def read_log(path: Path) -> dict[int, LogJob]:
    jobs: dict[int, LogJob] = {}

    def job(text: str) -> LogJob:
        jid = int(text)
        return jobs.setdefault(jid, LogJob(jid))

    for line in path.read_text(errors="replace").splitlines():
        m = _STAMP.match(line)
        if not m:
            continue
        t, msg = _epoch(m.group(1)), m.group(2)
        if s := _SUBMIT.search(msg):
            j = job(s.group(1))
            j.submit, j.init_prio = t, int(s.group(2))
        elif s := _MAIN.search(msg):
            j = job(s.group(1))
            j.start, j.started_by, j.nodes = t, "main", s.group(2)
        elif s := _BACKFILL.search(msg):
            j = job(s.group(1))
            j.start, j.started_by, j.nodes = t, "backfill", s.group(2)
        elif s := _DONE.search(msg):
            job(s.group(1)).end = t
    return jobs


def backfill_ticks(path: Path) -> list[float]:
    """Times of backfill passes that started something (a lower bound on the pass times:
    passes that start nothing log nothing at info level)."""
    out = sorted({j.start for j in read_log(path).values()
                  if j.started_by == "backfill" and j.start is not None})  # fmt: skip
    return out
