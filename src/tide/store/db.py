"""Engines, sessions and migrations for the controller's store.

SQLite (the default) lives in the data dir with WAL and synchronous=NORMAL:
readers never block the writer, and a commit costs no fsync until a
checkpoint, which is what makes thousands of submissions per second
possible. PostgreSQL is used when the URL says so (`postgresql://...`).
The schema is created and upgraded by Alembic at startup, never by
`create_all`, so an existing store is migrated in place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).with_name("migrations")
HEAD = "0006"


SessionFactory = sessionmaker[Session]  # what the controller opens sessions with


def database_unavailable(exc: BaseException) -> bool:
    """Whether `exc` says the database cannot be reached (down, connection cut),
    so the edge can answer 503 without knowing the database library."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    lost = isinstance(exc, DBAPIError) and exc.connection_invalidated
    return isinstance(exc, OperationalError | InterfaceError) or lost


def database_error_types() -> tuple[type[BaseException], ...]:
    """The exceptions the database library raises (for an edge's one-line errors)."""
    from sqlalchemy.exc import SQLAlchemyError

    return (SQLAlchemyError,)


class StoreError(RuntimeError):
    """The store cannot be opened or migrated; the message says what to fix."""


def default_url(data_dir: Path) -> str:
    return f"sqlite:///{Path(data_dir).resolve() / 'tide.db'}"


def normalise_url(url: str) -> str:
    """`postgresql://` means psycopg 3 here (the driver we ship)."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str, schema: str | None = None, **kw: Any) -> Engine:
    """An engine for `url`; `schema` pins PostgreSQL's search_path (tests use it)."""
    url = normalise_url(url)
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **kw)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if backend == "postgresql":
        args: dict[str, Any] = {"connect_timeout": 5}
        if schema:
            args["options"] = f"-csearch_path={schema}"
        return create_engine(url, connect_args=args, pool_pre_ping=True, **kw)
    raise StoreError(f"unsupported database URL {url!r}: use sqlite:///PATH or postgresql://...")


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints, no fsync per commit
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA cache_size=-65536")  # 64 MiB page cache
    cur.close()


def alembic_config(engine: Engine) -> Any:
    """A programmatic Alembic Config bound to `engine` (no alembic.ini needed)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    url = engine.url.render_as_string(hide_password=False)
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))  # ConfigParser escaping
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` (Alembic `upgrade`), creating it if empty."""
    from alembic import command

    try:
        command.upgrade(alembic_config(engine), revision)
    except Exception as e:  # the driver's message is the useful part
        raise StoreError(f"cannot migrate the store at {engine.url!r}: {e}") from e


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def open_store(url: str, schema: str | None = None) -> tuple[Engine, sessionmaker[Session]]:
    """Engine + session factory for a migrated store."""
    engine = make_engine(url, schema=schema)
    upgrade(engine)
    return engine, sessionmaker(engine, expire_on_commit=False)
