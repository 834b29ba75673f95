"""/v1/ping, /v1/whoami, /v1/cluster: health and what this server runs."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import PlainTextResponse

import tide
from tide.config.slurm_view import slurm_keys
from tide.server.auth import Principal
from tide.server.deps import ctl_of, who
from tide.server.errors import responses
from tide.server.ports import Ctl

router = APIRouter(prefix="/v1", tags=["meta"], responses=responses(401, 500, 503))
metrics_router = APIRouter(tags=["meta"], responses=responses(500))


@router.get("/ping", summary="Liveness (no token needed)")
def ping() -> dict[str, Any]:
    return {"ok": True, "version": tide.__version__, "time": time.time()}


@metrics_router.get(
    "/metrics",
    summary="Prometheus metrics (aggregates, no token)",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics(request: Request) -> Response:
    from tide.server.metrics import render

    return Response(render(ctl_of(request)), media_type="text/plain; version=0.0.4")


@router.get("/whoami", summary="The caller's user and role")
def whoami(p: Annotated[Principal, Depends(who)]) -> dict[str, Any]:
    return {"user": p.user, "role": p.role}


@router.get("/cluster", summary="Cluster, scheduler settings and loop statistics")
def cluster(request: Request, p: Annotated[Principal, Depends(who)]) -> dict[str, Any]:
    ctl = ctl_of(request)
    st = ctl.loop.stats if ctl.loop is not None else None
    cfg = ctl.config
    return {
        "name": ctl.cluster.name,
        "origin": ctl.origin,
        "nodes": len(ctl.cluster.nodes),
        "gpus": ctl.cluster.total_gpus,
        "partitions": [x.name for x in ctl.cluster.partitions],
        "topology": str(ctl.cluster.topology.kind),
        "scheduler": {
            "policy": _policy_name(ctl),  # the object the loop runs (tide.server.schedule)
            "victim_order": cfg.victim_order or "policy default",
            "backfill": str(cfg.backfill),
            "order": str(cfg.order),
            "bf_interval": cfg.bf_interval,
            "bf_window": cfg.bf_window,
            "decay_half_life": cfg.decay_half_life,
        },
        "config": slurm_keys(ctl.cluster.name, cfg),  # scontrol show config
        "store": ctl.engine.url.render_as_string(hide_password=True),
        "executor": type(ctl.executor).__name__ if ctl.executor is not None else None,
        # who jobs run as (docs/security.md): per-user, or single-user as server_user
        "job_users": {"mode": ctl.job_users.mode, "server_user": ctl.job_users.server_user},
        "started": ctl.started,
        "warnings": ctl.warnings,
        "loop": {
            "cycles": st.cycles,
            "backfill_cycles": st.backfill_cycles,
            "started_jobs": st.started,
            "last_load_s": st.last_load,
            "last_process_s": st.last_process,
            "last_apply_s": st.last_apply,
            "last_pending": st.last_pending,
            "last_running": st.last_running,
            "last_at": st.last_at,
            "errors": st.errors,
            "last_error": st.last_error,
            "held_faulty_jobs": st.held_faulty,
            "cpu_s": st.cpu,
        }
        if st
        else None,
        "writer": {"commits": ctl.writer.commits, "jobs": ctl.writer.jobs} if ctl.writer else None,
    }


def _policy_name(ctl: Ctl) -> str:
    driver = getattr(ctl.loop, "driver", None)
    return driver.name if driver is not None else ctl.config.policy
