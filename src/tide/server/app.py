"""The FastAPI app: `create_app(settings)` wires the controller to the routes.

The controller starts in the app's lifespan (store migrated, loop and writer
threads running) and stops with it, so `uvicorn` and tests get the same
server. OpenAPI is at /openapi.json; every route is under /v1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

import tide
from tide.server import errors
from tide.server.controller import Controller
from tide.server.dashboard import router as dashboard
from tide.server.routers import admin, jobs, meta, nodes, reports, reservations, services
from tide.server.settings import Settings


def create_app(settings: Settings, controller: Controller | None = None, **ctl_kw: Any) -> FastAPI:
    ctl = controller or Controller(settings, **ctl_kw)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ctl.start()
        try:
            yield
        finally:
            ctl.stop()

    app = FastAPI(
        title="tide",
        version=tide.__version__,
        description="GPU-cluster workload manager: REST API of the controller. "
        "Authenticate with 'Authorization: Bearer TOKEN'.",
        lifespan=lifespan,
    )
    app.state.ctl = ctl
    errors.install(app)
    for r in (
        meta.metrics_router,
        meta.router,
        jobs.router,
        nodes.router,
        admin.router,
        reports.router,
        reservations.router,
        services.router,
        services.pools_router,
        dashboard.router,
    ):
        app.include_router(r)
    return app
