"""/v1/services: inference services (docs/services.md)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field

from tide.server.auth import Principal
from tide.server.deps import ctl_of, who
from tide.server.errors import responses
from tide.server.services import serving as svc

router = APIRouter(prefix="/v1/services", tags=["services"], responses=responses())
Who = Annotated[Principal, Depends(who)]


class ApplyBody(BaseModel):
    service: dict[str, Any] = Field(..., description="the service document (YAML as JSON)")
    cwd: str = Field("", description="where replicas run when the spec gives no workdir")


class ScaleBody(BaseModel):
    replicas: int | None = Field(None, ge=0, le=1000, description="a fixed count")
    min_replicas: int | None = Field(None, ge=0, le=1000)
    max_replicas: int | None = Field(None, ge=1, le=1000)


class RolloutBody(BaseModel):
    restart: bool = Field(True, description="replace every replica (rolling)")


@router.post("", summary="Create or update a service (kubectl apply)")
async def apply(body: ApplyBody, request: Request, response: Response, p: Who) -> dict[str, Any]:
    out = await asyncio.to_thread(svc.apply, ctl_of(request), p, body.service, body.cwd)
    response.status_code = 201 if out["result"] == "created" else 200
    return out


@router.get("", summary="List services")
def listing(request: Request, p: Who) -> dict[str, Any]:
    return {"services": svc.listing(ctl_of(request), p)}


@router.get("/{name}", summary="A service: spec, replicas, traffic, events, GPU-hours")
def show(name: str, request: Request, p: Who) -> dict[str, Any]:
    return svc.show(ctl_of(request), p, name)


@router.post("/{name}/scale", summary="Fixed replicas, or new autoscaling bounds")
def scale(name: str, body: ScaleBody, request: Request, p: Who) -> dict[str, Any]:
    if body.replicas is None and body.min_replicas is None and body.max_replicas is None:
        from tide.server.errors import bad_request

        raise bad_request(
            "nothing to scale", "replicas", "give replicas, or min_replicas/max_replicas"
        )
    return svc.scale(ctl_of(request), p, name, body.replicas, body.min_replicas, body.max_replicas)


@router.post("/{name}/rollout", summary="Restart every replica, rolling")
def rollout(name: str, body: RolloutBody, request: Request, p: Who) -> dict[str, Any]:
    return svc.rollout(ctl_of(request), p, name, body.restart)


@router.get("/{name}/rollout", summary="Rollout status")
def rollout_status(name: str, request: Request, p: Who) -> dict[str, Any]:
    return svc.rollout(ctl_of(request), p, name, False)


@router.delete("/{name}", summary="Delete a service (replicas drain first)")
def delete(name: str, request: Request, p: Who) -> dict[str, Any]:
    return svc.delete(ctl_of(request), p, name)


@router.get("/{name}/logs", summary="The last lines of the replicas' output")
def logs(
    name: str,
    request: Request,
    p: Who,
    replica: Annotated[int | None, Query(description="a replica id; default: live ones")] = None,
    tail: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> dict[str, Any]:
    return svc.logs(ctl_of(request), p, name, replica, tail)


pools_router = APIRouter(prefix="/v1/pools", tags=["services"])


@pools_router.get("", summary="Pools: what each lends now (docs/services.md, Pools)")
def pools(request: Request, p: Who) -> dict[str, Any]:
    return {"pools": svc.pools(ctl_of(request))}
