"""Advance reservations (scontrol create/delete reservation), operators."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from tide.hostlist import HostlistError, expand
from tide.model import Reservation
from tide.server.errors import bad_request, not_found
from tide.server.ports import Ctl
from tide.server.schemas import ReservationBody
from tide.store import reservations as resvrepo

FLAGS = {"MAINT", "IGNORE_JOBS", "FLEX", "DAILY", "WEEKLY", "OVERLAP"}


def listing(ctl: Ctl) -> list[dict[str, Any]]:
    with ctl.lock:
        return [asdict(r) for r in ctl.reservations]


def create(ctl: Ctl, body: ReservationBody) -> dict[str, Any]:
    now = time.time()
    start = body.start if body.start is not None else now
    if body.end is not None:
        end = body.end
    elif body.duration is not None:
        end = start + body.duration
    else:
        raise bad_request(
            "a reservation needs an end or a duration",
            "duration",
            "give duration (seconds) or end (epoch)",
        )
    if end <= start:
        raise bad_request("the reservation ends before it starts", "end", "give end > start")
    try:
        nodes = [n for x in body.nodes for n in expand(x)]
    except HostlistError as e:
        raise bad_request(str(e), "nodes", "e.g. gpu[01-04]") from e
    known = {n.name for n in ctl.cluster.nodes}
    for n in nodes:
        if n not in known:
            raise bad_request(f"node {n!r} does not exist", "nodes", "see `tide nodes -N`")
    if not nodes and body.gpus <= 0:
        raise bad_request(
            "a reservation needs nodes or a GPU count", "nodes", "give nodes=[...] or gpus=N"
        )
    flags = tuple(f.upper() for f in body.flags)
    bad = [f for f in flags if f not in FLAGS]
    if bad:
        raise bad_request(f"unknown flag {bad[0]!r}", "flags", f"use: {', '.join(sorted(FLAGS))}")
    if not body.accounts and not body.users and "MAINT" not in flags:
        raise bad_request(
            "a reservation needs users or accounts (or the MAINT flag)",
            "users",
            "give users=[...] or accounts=[...]",
        )
    if body.partition and ctl.cluster.partition(body.partition) is None:
        raise bad_request(f"partition {body.partition!r} does not exist", "partition", "")
    r = Reservation(
        body.name,
        start,
        end,
        tuple(nodes),
        body.gpus,
        tuple(body.accounts),
        tuple(body.users),
        flags,
        body.partition,
    )
    with ctl.sessions.begin() as s:
        resvrepo.put(s, r)
    ctl.reload_reservations()
    if ctl.loop is not None:
        ctl.loop.wake()
    return asdict(r)


def delete(ctl: Ctl, name: str) -> None:
    with ctl.sessions.begin() as s:
        if not resvrepo.remove(s, name):
            raise not_found("reservation", name, "list them with `tide admin reservation list`")
    ctl.reload_reservations()
    if ctl.loop is not None:
        ctl.loop.wake()
