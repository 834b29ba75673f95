"""/v1/reservations: advance reservations (operators create and delete)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from tide.server.auth import Principal
from tide.server.deps import ctl_of, operator, who
from tide.server.errors import responses
from tide.server.schemas import ReservationBody
from tide.server.services import reservations as svc

router = APIRouter(prefix="/v1/reservations", tags=["reservations"], responses=responses())


@router.get("", summary="Current and future reservations")
def listing(request: Request, p: Annotated[Principal, Depends(who)]) -> dict[str, Any]:
    return {"reservations": svc.listing(ctl_of(request))}


@router.post("", status_code=201, summary="Create a reservation")
def create(
    body: ReservationBody, request: Request, p: Annotated[Principal, Depends(operator)]
) -> dict[str, Any]:
    return svc.create(ctl_of(request), body)


@router.delete("/{name}", summary="Delete a reservation")
def delete(
    name: str, request: Request, p: Annotated[Principal, Depends(operator)]
) -> dict[str, Any]:
    svc.delete(ctl_of(request), name)
    return {"deleted": name}
