"""/v1/accounts, /v1/users, /v1/associations, /v1/qos, /v1/tokens, /v1/prices (admin)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request

from tide.server.auth import Principal
from tide.server.deps import admin, ctl_of, who
from tide.server.errors import responses
from tide.server.schemas import (
    AccountBody,
    AssocBody,
    PriceBody,
    QosBody,
    TokenBody,
    UserBody,
)
from tide.server.services import admin as svc

router = APIRouter(prefix="/v1", tags=["admin"], responses=responses())
Who = Annotated[Principal, Depends(who)]
Admin = Annotated[Principal, Depends(admin)]


@router.get("/accounts", summary="Accounts with shares and limits")
def accounts(request: Request, p: Who) -> dict[str, Any]:
    return {"accounts": svc.list_accounts(ctl_of(request))}


@router.post("/accounts", status_code=201, summary="Create an account")
def add_account(body: AccountBody, request: Request, p: Admin) -> dict[str, Any]:
    return svc.put_account(ctl_of(request), body, create=True)


@router.put("/accounts/{name}", summary="Create or replace an account")
def set_account(name: str, body: AccountBody, request: Request, p: Admin) -> dict[str, Any]:
    body.name = name
    return svc.put_account(ctl_of(request), body, create=False)


@router.delete("/accounts/{name}", summary="Delete an account (no sub-accounts, no active jobs)")
def del_account(name: str, request: Request, p: Admin) -> dict[str, Any]:
    svc.delete_account(ctl_of(request), name)
    return {"deleted": name}


@router.get("/users", summary="Users with admin level and associations")
def users(request: Request, p: Who) -> dict[str, Any]:
    return {"users": svc.list_users(ctl_of(request))}


@router.post("/users", summary="Create or change a user (admin level, accounts)")
def put_user(body: UserBody, request: Request, p: Admin) -> dict[str, Any]:
    return svc.put_user(ctl_of(request), body)


@router.delete("/users/{name}", summary="Delete a user, its associations and tokens")
def del_user(name: str, request: Request, p: Admin) -> dict[str, Any]:
    svc.delete_user(ctl_of(request), p, name)
    return {"deleted": name}


@router.post("/associations", summary="Create or change a user's association with an account")
def put_assoc(body: AssocBody, request: Request, p: Admin) -> dict[str, Any]:
    return svc.put_assoc(ctl_of(request), body)


@router.delete("/associations/{user}/{account}", summary="Remove an association")
def del_assoc(user: str, account: str, request: Request, p: Admin) -> dict[str, Any]:
    svc.delete_assoc(ctl_of(request), user, account)
    return {"deleted": f"{user}/{account}"}


@router.get("/qos", summary="QOS list")
def qos(request: Request, p: Who) -> dict[str, Any]:
    return {"qos": svc.list_qos(ctl_of(request))}


@router.post("/qos", summary="Create or change a QOS")
def put_qos(body: QosBody, request: Request, p: Admin) -> dict[str, Any]:
    return svc.put_qos(ctl_of(request), body)


@router.delete("/qos/{name}", summary="Delete a QOS")
def del_qos(name: str, request: Request, p: Admin) -> dict[str, Any]:
    svc.delete_qos(ctl_of(request), name)
    return {"deleted": name}


@router.get("/tokens", summary="Tokens (never their secrets)")
def tokens(request: Request, p: Admin) -> dict[str, Any]:
    return {"tokens": svc.list_tokens(ctl_of(request))}


@router.post("/tokens", status_code=201, summary="Create a token for a user (shown once)")
def add_token(body: TokenBody, request: Request, p: Admin) -> dict[str, Any]:
    return svc.create_token(ctl_of(request), body)


@router.delete("/tokens/{token_id}", summary="Revoke a token")
def del_token(
    token_id: Annotated[int, Path(ge=1, le=2**31 - 1)], request: Request, p: Admin
) -> dict[str, Any]:
    svc.revoke_token(ctl_of(request), token_id)
    return {"revoked": token_id}


@router.get("/prices", summary="Price per GPU-hour by GPU type")
def prices(request: Request, p: Who) -> dict[str, Any]:
    ctl = ctl_of(request)
    with ctl.lock:
        return {"prices": dict(ctl.prices)}


@router.put("/prices", summary="Set the price of a GPU-hour for a GPU type")
def set_price(body: PriceBody, request: Request, p: Admin) -> dict[str, Any]:
    return {"prices": svc.set_price(ctl_of(request), body.gpu_type, body.per_gpu_hour)}
