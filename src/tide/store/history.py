"""The controller's job history, read back for the twin (tide sim export).

Plain records, so that the reader of the twin's workload never touches
SQLAlchemy: each job's request as stored, its times and every run (attempt).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from tide.model import JobRequest
from tide.store.codec import request_from_json
from tide.store.db import StoreError, make_engine
from tide.store.models import AttemptRow, JobRow


@dataclass(slots=True)
class Attempt:
    start: float
    end: float | None
    state: str
    nodelist: str


@dataclass(slots=True)
class HistoryJob:
    id: int
    name: str
    user: str
    account: str
    qos: str
    state: str
    request: JobRequest
    submit: float
    eligible: float | None
    start: float | None  # the first start
    end: float | None
    nodelist: str  # the last run's nodes
    exit_code: int | None
    array: tuple[int, int] | None
    attempts: list[Attempt] = field(default_factory=list)


def read_history(url: str) -> list[HistoryJob]:
    """Every job of the store at `url` (tide.store.db.default_url for a data
    folder), oldest submission first, with its runs."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            runs: dict[int, list[Attempt]] = {}
            for a in conn.execute(select(AttemptRow).order_by(AttemptRow.job_id,
                                                              AttemptRow.attempt)):  # fmt: skip
                runs.setdefault(a.job_id, []).append(
                    Attempt(a.start_time, a.end_time, a.state, a.nodelist)
                )
            out = []
            for r in conn.execute(select(JobRow).order_by(JobRow.submit_time, JobRow.id)):
                arr = None
                if r.array_job_id is not None and r.array_task_id is not None:
                    arr = (r.array_job_id, r.array_task_id)
                out.append(HistoryJob(
                    id=r.id, name=r.name, user=r.user, account=r.account, qos=r.qos,
                    state=r.state, request=request_from_json(r.request), submit=r.submit_time,
                    eligible=r.eligible_time, start=r.start_time, end=r.end_time,
                    nodelist=r.nodelist, exit_code=r.exit_code, array=arr,
                    attempts=runs.get(r.id, []),
                ))  # fmt: skip
            return out
    except SQLAlchemyError as e:
        first = str(e).splitlines()[0]
        raise StoreError(f"cannot read the job history at {url}: {first}") from None
    finally:
        engine.dispose()
