"""Run the server: `tide server ...` or `python -m tide.server ...`."""

from __future__ import annotations

import logging

from tide.server.settings import Settings


def serve(settings: Settings, log_level: str = "info") -> None:
    import uvicorn

    from tide.server.app import create_app

    logging.basicConfig(
        level=getattr(logging, log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    from tide.server.fastpath import FastSubmit

    app = create_app(settings)
    uvicorn.run(
        FastSubmit(app),
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        access_log=False,  # a line per request would cost more than the request
        timeout_graceful_shutdown=5,
    )
