"""FastAPI dependencies: the controller and the caller's Principal."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from tide.server.auth import Principal
from tide.server.errors import forbidden


def ctl_of(request: Request) -> Any:
    return request.app.state.ctl


def who(request: Request) -> Principal:
    return request.app.state.ctl.auth.principal(request.headers.get("authorization"))


def operator(request: Request) -> Principal:
    p = who(request)
    if not p.operator:
        raise forbidden(
            f"user {p.user!r} is not an operator", "ask an admin for AdminLevel=Operator"
        )
    return p


def admin(request: Request) -> Principal:
    p = who(request)
    if not p.at_least("admin"):
        raise forbidden(
            f"user {p.user!r} is not an administrator",
            "ask an admin (tide admin user set USER --admin-level Administrator)",
        )
    return p
