"""Fixtures for the controller's tests: stores on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_URL = os.environ.get("TIDE_TEST_PG", "postgresql://{user}@127.0.0.1:5432/test")


def _pg_url() -> str | None:
    """The first user that can log in to 127.0.0.1:5432/test, or None."""
    try:
        import psycopg
    except ImportError:
        return None
    for user in ("postgres", "root"):
        url = PG_URL.format(user=user)
        try:
            psycopg.connect(
                url.replace("postgresql://", "postgresql://"), connect_timeout=2
            ).close()
            return url
        except Exception:
            continue
    return None


_PG = _pg_url()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str | None]]:
    """(url, schema): a fresh SQLite file, or a fresh schema in PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tide.db'}", None
        return
    if _PG is None:
        pytest.skip(
            "PostgreSQL not reachable at 127.0.0.1:5432 (database 'test', user postgres or root,"
            " trust auth); set TIDE_TEST_PG=postgresql://USER@HOST:PORT/DB to point elsewhere"
        )
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(_PG, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _PG, schema
    finally:
        with psycopg.connect(_PG, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real server on tests/server/data/tiny.yaml (2 x 8-GPU nodes + 1 CPU node),
    with user tokens for alice (physics) and bob (bio) and an operator, oscar."""
    from serverproc import DATA, ServerProc

    d = tmp_path_factory.mktemp("tide")
    srv = ServerProc(
        d / "data",
        [
            "--cluster",
            str(DATA / "tiny.yaml"),
            "--kill-wait",
            "2",
            "--bf-interval",
            "1",
            "--price",
            "a100=2.0",
        ],
    ).start()
    try:
        with srv.client() as admin:
            admin.post(
                "/v1/users",
                json={"name": "oscar", "admin_level": "Operator", "accounts": ["physics"]},
            ).raise_for_status()
            srv.tokens = {}  # type: ignore[attr-defined]
            for user in ("alice", "bob", "oscar"):
                r = admin.post("/v1/tokens", json={"user": user, "name": "test"})
                r.raise_for_status()
                srv.tokens[user] = r.json()["token"]  # type: ignore[attr-defined]
        srv.work = d / "work"  # type: ignore[attr-defined]
        srv.work.mkdir()  # type: ignore[attr-defined]
        yield srv
    finally:
        srv.stop()
