"""/v1/share (and its history), /v1/priority, /v1/usage/report: sshare, sprio, sreport."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from tide.server.auth import Principal
from tide.server.deps import ctl_of, who
from tide.server.errors import responses
from tide.server.schemas import MAX_EPOCH
from tide.server.services import reports as svc

router = APIRouter(prefix="/v1", tags=["reports"], responses=responses())
Who = Annotated[Principal, Depends(who)]
Start = Annotated[float | None, Query(ge=0, le=MAX_EPOCH, description="epoch; default a day ago")]
End = Annotated[float | None, Query(ge=0, le=MAX_EPOCH, description="epoch; default now")]


@router.get("/share", summary="Fair-share tree (sshare -l) and quotas per account and cohort")
def share(request: Request, p: Who) -> dict[str, Any]:
    ctl = ctl_of(request)
    return {"rows": svc.share(ctl), "quotas": svc.quota_share(ctl)}


@router.get("/share/history", summary="Fair-share per association over time (sshare samples)")
def share_history(request: Request, p: Who, start: Start = None, end: End = None
                  ) -> dict[str, Any]:  # fmt: skip
    from tide.server.services import share_history as hist

    now = time.time()
    return hist.history(
        ctl_of(request),
        start if start is not None else now - 86400,
        end if end is not None else now,
    )


@router.get("/priority", summary="Priority factors of pending jobs (sprio)")
def priority(
    request: Request,
    p: Who,
    job: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it per request)
    user: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it per request)
) -> dict[str, Any]:
    return {"jobs": svc.priorities(ctl_of(request), p, job or [], user or [])}


@router.get("/usage/report", summary="GPU-hours and cost by account/user over a period")
def usage_report(
    request: Request,
    p: Who,
    start: Start = None,
    end: End = None,
    by: Annotated[str, Query(description="user or account")] = "user",
) -> dict[str, Any]:
    now = time.time()
    return svc.usage_report(
        ctl_of(request),
        p,
        start if start is not None else now - 86400,
        end if end is not None else now,
        by,
    )


@router.get("/efficiency", summary="Training efficiency per account (tokens/s, step time, MFU)")
def efficiency(
    request: Request,
    p: Who,
    since: Annotated[
        float | None,
        Query(ge=0, le=MAX_EPOCH, description="epoch: jobs that reported since; default all"),
    ] = None,
    account: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it per request)
) -> dict[str, Any]:
    from tide.server.services import efficiency as eff

    accounts = tuple(a for x in account or () for a in x.split(",") if a)
    return {"accounts": eff.by_account(ctl_of(request), p, since, accounts)}
