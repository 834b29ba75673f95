"""Alembic environment for tide's store.

Usable programmatically: tide.store.db.alembic_config puts the Engine in
`config.attributes["engine"]`; the `alembic` CLI works too with
`-x url=...` or sqlalchemy.url set.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine, create_engine

from tide.store.models import Base

config = context.config
target_metadata = Base.metadata


def _engine() -> Engine:
    engine = config.attributes.get("engine")
    if engine is not None:
        return engine
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    from tide.store.db import normalise_url

    return create_engine(normalise_url(url or ""))


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    with _engine().connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        conn.commit()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
