"""FastAPI dependencies: the controller and the caller's Principal."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from tide.server.auth import Principal
from tide.server.errors import forbidden


def ctl_of(request: Request) -> Any:
    return request.app.state.ctl


async def who(request: Request) -> Principal:
    """Async so a request costs no thread hop: tokens are checked from a cache
    (a miss reads one indexed row). A job's token (TIDE_JOB_TOKEN) reports
    that job's progress and nothing else: it reaches only .../notify, where
    the job must still be running (so it is dead once the job ends)."""
    p: Principal = request.app.state.ctl.auth.principal(request.headers.get("authorization"))
    if p.role == "job" and not request.url.path.endswith("/notify"):
        raise forbidden(
            "a job token can only report its own job's progress (POST /v1/jobs/ID/notify)",
            "use your own token",
        )
    return p


async def operator(request: Request) -> Principal:
    p = await who(request)
    if not p.operator:
        raise forbidden(
            f"user {p.user!r} is not an operator", "ask an admin for AdminLevel=Operator"
        )
    return p


async def admin(request: Request) -> Principal:
    p = await who(request)
    if not p.at_least("admin"):
        raise forbidden(
            f"user {p.user!r} is not an administrator",
            "ask an admin (tide admin user set USER --admin-level Administrator)",
        )
    return p
