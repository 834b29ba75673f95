"""/v1/nodes and /v1/partitions: sinfo, scontrol show node, drain/resume."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from tide.server.auth import Principal
from tide.server.deps import ctl_of, operator, who
from tide.server.errors import not_found, responses
from tide.server.schemas import ReasonBody
from tide.server.services import nodes as svc

router = APIRouter(prefix="/v1", tags=["nodes"], responses=responses())
Who = Annotated[Principal, Depends(who)]
Op = Annotated[Principal, Depends(operator)]


@router.get("/nodes", summary="All nodes with state, allocation and switch")
def list_nodes(request: Request, p: Who) -> dict[str, Any]:
    return {"nodes": svc.listing(ctl_of(request))}


@router.get("/nodes/{name}", summary="One node")
def get_node(name: str, request: Request, p: Who) -> dict[str, Any]:
    for n in svc.listing(ctl_of(request)):
        if n["name"] == name:
            return n
    raise not_found("node", name, "list nodes with `tide nodes -N`")


@router.post("/nodes/{names}/drain", summary="Drain nodes (hostlist) with a reason")
def drain(names: str, body: ReasonBody, request: Request, p: Op) -> dict[str, Any]:
    return {"nodes": svc.set_state(ctl_of(request), p, names, "DRAIN", body.reason)}


@router.post("/nodes/{names}/resume", summary="Resume drained/down nodes")
def resume(names: str, request: Request, p: Op) -> dict[str, Any]:
    return {"nodes": svc.set_state(ctl_of(request), p, names, "IDLE", "")}


@router.post("/nodes/{names}/down", summary="Mark nodes down with a reason")
def down(names: str, body: ReasonBody, request: Request, p: Op) -> dict[str, Any]:
    return {"nodes": svc.set_state(ctl_of(request), p, names, "DOWN", body.reason)}


@router.post("/nodes/{names}/fail", summary="Simulate a node failure (its agent is killed)")
def fail(names: str, body: ReasonBody, request: Request, p: Op) -> dict[str, Any]:
    return {"nodes": svc.set_state(ctl_of(request), p, names, "FAIL", body.reason)}


@router.get("/partitions", summary="Partitions")
def list_partitions(request: Request, p: Who) -> dict[str, Any]:
    return {"partitions": svc.partitions(ctl_of(request))}
