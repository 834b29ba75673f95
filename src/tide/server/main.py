"""Run the server: `tide server ...` or `python -m tide.server ...`."""

from __future__ import annotations

import logging

from tide.server.cluster_source import ClusterSource
from tide.server.settings import Settings


def serve(
    settings: Settings,
    log_level: str = "info",
    standby: bool = False,
    source: ClusterSource | None = None,
) -> None:
    """Take the store (tide.server.store_lock: refused while another controller
    holds it, or with standby=True waited for), then serve until stopped.
    `source`: the cluster already read (tide server checks it before starting)."""
    import uvicorn

    from tide.server.app import create_app
    from tide.server.store_lock import StoreLock

    logging.basicConfig(
        level=getattr(logging, log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    from tide.server.fastpath import FastSubmit

    log = logging.getLogger("tide.server")
    if standby:
        _warm()
    lock = StoreLock(settings.data_dir, settings.database(), settings.host, settings.port)
    lock.acquire(standby=standby, log=log.warning)  # before any agent or job is touched
    if standby:
        log.warning("standby: the store is ours; taking over (re-adopting running jobs)")
    try:
        app = create_app(settings, source=source)
        uvicorn.run(
            FastSubmit(app),
            host=settings.host,
            port=settings.port,
            log_level=log_level,
            access_log=False,  # a line per request would cost more than the request
            timeout_graceful_shutdown=5,
            timeout_keep_alive=settings.keep_alive,  # Settings.keep_alive says why
        )
    finally:
        lock.release()


def _warm() -> None:
    """A standby imports what starting takes while it waits, so that taking
    over costs only the start itself."""
    import alembic.command  # noqa: F401

    import tide.exec.local
    import tide.server.loop
    import tide.server.services.submit  # noqa: F401
