"""/v1/jobs: submit, list, show, cancel, hold, release, requeue, update, notify."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response

from tide.server import views
from tide.server.auth import Principal
from tide.server.deps import ctl_of, who
from tide.server.errors import ApiError, responses
from tide.server.schemas import MAX_EPOCH, BatchBody, NotifyBody, SubmitBody, UpdateBody
from tide.server.services import efficiency as eff
from tide.server.services import jobs as svc
from tide.server.services import submit as submitting
from tide.server.services import suspend as suspending
from tide.store.jobs import ACTIVE, JobFilter

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=responses())
Who = Annotated[Principal, Depends(who)]


@router.post("", status_code=201, summary="Submit a job (sbatch script + options, or JSON)")
async def submit(body: SubmitBody, request: Request, p: Who) -> dict[str, Any]:
    # checked off the event loop, in a batch with others (tide.server.intake)
    prepared = await ctl_of(request).intake.submit(p, body)
    ids = prepared.job_ids
    first = prepared.rows[0]
    out: dict[str, Any] = {"job_id": ids[0], "warnings": prepared.warnings}
    if "array_job_id" in first:
        out["array_job_id"] = first["array_job_id"]
        out["job_ids"] = [f"{first['array_job_id']}_{r['array_task_id']}" for r in prepared.rows]
    return out


@router.post("/test", summary="When and where a job would start (sbatch --test-only)")
def test_only(body: SubmitBody, request: Request, p: Who) -> dict[str, Any]:
    return submitting.test_only(ctl_of(request), p, body)


@router.post("/batch", status_code=201, summary="Submit many jobs in one request")
async def submit_batch(body: BatchBody, request: Request, p: Who) -> dict[str, Any]:
    """Each item is a submission as for POST /v1/jobs; the answer lists, in order,
    {"job_id": ...} or {"error", "field", "fix"} (a bad item stores nothing)."""
    ctl = ctl_of(request)

    def prepare_all() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        results: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        for item in body.jobs:
            try:
                prepared = submitting.prepare(ctl, p, item)
            except ApiError as e:
                results.append(e.body())
                continue
            rows += prepared.rows
            results.append({"job_id": prepared.job_ids[0], "warnings": prepared.warnings})
        return results, rows

    # thousands of checks: in a worker thread, so the event loop keeps answering
    results, rows = await asyncio.to_thread(prepare_all)
    if rows:
        await asyncio.wrap_future(ctl.writer.submit(rows))
    return {"results": results, "submitted": sum("job_id" in r for r in results)}


def _csv(values: list[str] | None) -> tuple[str, ...]:
    return tuple(v for x in values or () for v in x.split(",") if v)


@router.get(
    "",
    summary="List jobs (squeue / sacct filters)",
    responses={
        200: {
            "description": "jobs as objects or columns (JSON), or squeue text",
            "content": {
                "application/json": {"schema": {"type": "object"}},
                "text/plain": {"schema": {"type": "string"}},
            },
        }
    },
)
def list_jobs(
    request: Request,
    p: Who,
    state: Annotated[list[str], Query(description="states, e.g. PENDING,RUNNING")] = [],  # noqa: B006 (FastAPI copies it per request)
    user: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it per request)
    account: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it per request)
    partition: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it per request)
    name: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it per request)
    job: Annotated[list[str], Query(description="job ids; an array id means all tasks")] = [],  # noqa: B006
    all: Annotated[bool, Query(description="finished jobs too (sacct)")] = False,
    start: Annotated[
        float | None, Query(ge=0, le=MAX_EPOCH, description="ended at/after (epoch)")
    ] = None,
    end: Annotated[
        float | None, Query(ge=0, le=MAX_EPOCH, description="submitted at/before (epoch)")
    ] = None,
    limit: Annotated[int | None, Query(ge=1, le=10_000_000)] = None,
    format: Annotated[
        Literal["objects", "columns", "squeue", "squeue-start"],
        Query(description="'objects', 'columns' (compact), 'squeue' or 'squeue-start' (text)"),
    ] = "objects",
    efficiency: Annotated[
        bool, Query(description="objects: add each job's training efficiency (or null)")
    ] = False,
) -> Response:
    if format in ("squeue", "squeue-start"):
        text = svc.queue_text(
            ctl_of(request),
            p,
            _csv(job),
            _csv(state),
            _csv(user),
            _csv(account),
            _csv(partition),
            _csv(name),
            start=format == "squeue-start",
        )
        return Response(text, media_type="text/plain; charset=utf-8")
    states = tuple(s.upper() for s in _csv(state))
    if not states and not all and start is None:
        states = ACTIVE
    ids = [svc.parse_id(j)[0] for j in _csv(job)]
    f = JobFilter(
        ids=tuple(ids),
        array_ids=tuple(ids),
        states=states,
        users=_csv(user),
        accounts=_csv(account),
        partitions=_csv(partition),
        names=_csv(name),
        start_after=start,
        end_before=end,
        limit=limit,
    )
    cols, rows = svc.listing(ctl_of(request), p, f)
    body: dict[str, Any]
    if format == "columns":
        body = {"columns": cols, "rows": rows}
    else:
        jobs = [views.queue_item(tuple(r)) for r in rows]
        if efficiency:
            figures = eff.for_ids(ctl_of(request), [j["id"] for j in jobs])
            for j in jobs:
                j["efficiency"] = figures.get(j["id"])
        body = {"jobs": jobs}
    # json.dumps directly: a 100,000-job queue must not go through response models
    return Response(json.dumps(body, separators=(",", ":")), media_type="application/json")


@router.get("/{job_id}", summary="Show a job (scontrol show job), with history and phases")
def show(job_id: str, request: Request, p: Who) -> dict[str, Any]:
    jobs = svc.show(ctl_of(request), p, job_id)
    return {"jobs": jobs}


@router.delete("/{job_id}", summary="Cancel a job (scancel), or signal it with ?signal=")
def cancel(
    job_id: str, request: Request, p: Who, signal: str | None = None, reason: str = ""
) -> dict[str, Any]:
    return {"jobs": svc.cancel(ctl_of(request), p, job_id, signal, reason)}


@router.post("/{job_id}/cancel", summary="Cancel a job (same as DELETE)")
def cancel_post(
    job_id: str, request: Request, p: Who, signal: str | None = None, reason: str = ""
) -> dict[str, Any]:
    return {"jobs": svc.cancel(ctl_of(request), p, job_id, signal, reason)}


@router.post("/{job_id}/hold", summary="Hold a pending job")
def hold(job_id: str, request: Request, p: Who) -> dict[str, Any]:
    return {"jobs": svc.hold(ctl_of(request), p, job_id)}


@router.post("/{job_id}/release", summary="Release a held job")
def release(job_id: str, request: Request, p: Who) -> dict[str, Any]:
    return {"jobs": svc.release(ctl_of(request), p, job_id)}


@router.post("/{job_id}/requeue", summary="Requeue a running or finished job")
def requeue(job_id: str, request: Request, p: Who) -> dict[str, Any]:
    return {"jobs": svc.requeue(ctl_of(request), p, job_id)}


@router.post("/{job_id}/suspend", summary="Stop a running job (operators; scontrol suspend)")
def suspend(job_id: str, request: Request, p: Who) -> dict[str, Any]:
    return {"jobs": suspending.suspend(ctl_of(request), p, job_id)}


@router.post("/{job_id}/resume", summary="Go on with a suspended job (operators)")
def resume(job_id: str, request: Request, p: Who) -> dict[str, Any]:
    return {"jobs": suspending.resume(ctl_of(request), p, job_id)}


@router.patch("/{job_id}", summary="Update a job (time limit, priority, nice, name, ...)")
def update(job_id: str, body: UpdateBody, request: Request, p: Who) -> dict[str, Any]:
    return {"jobs": svc.update(ctl_of(request), p, job_id, body)}


@router.post("/{job_id}/notify", summary="Report a phase from inside a job (step N, tasks up)")
def notify(job_id: str, body: NotifyBody, request: Request, p: Who) -> dict[str, Any]:
    return svc.notify(ctl_of(request), p, job_id, body)
