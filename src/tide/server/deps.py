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
    (a miss reads one indexed row)."""
    return request.app.state.ctl.auth.principal(request.headers.get("authorization"))


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
