"""Fixtures for the controller's tests: stores on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serverproc import STORES, pg_schema, pg_url, store_args

_PG = pg_url()  # None where PostgreSQL is absent (new tests: serverproc.pg_url, store_args)


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str | None]]:
    """(url, schema): a fresh SQLite file, or a fresh schema in PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tide.db'}", None
        return
    with pg_schema() as (url, schema):
        yield url, schema


@pytest.fixture(scope="module")
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real server on tests/server/data/tiny.yaml (2 x 8-GPU nodes + 1 CPU node),
    with user tokens for alice (physics) and bob (bio) and an operator, oscar.
    On SQLite; a test runs on both stores with
    `@pytest.mark.parametrize("tiny", STORES, indirect=True)` (serverproc.STORES)."""
    from serverproc import DATA, ServerProc

    store = getattr(request, "param", "sqlite")
    d = tmp_path_factory.mktemp(f"tide-{store}")
    with store_args(store) as db:
        args = ["--cluster", str(DATA / "tiny.yaml"), "--kill-wait", "2", "--bf-interval", "1",
                "--price", "a100=2.0", *db]  # fmt: skip
        srv = ServerProc(d / "data", args).start()
        try:
            _check_store(srv, store)
            _add_users(srv)
            srv.store = store  # type: ignore[attr-defined]
            srv.work = d / "work"  # type: ignore[attr-defined]
            srv.work.mkdir()  # type: ignore[attr-defined]
            yield srv
        finally:
            srv.stop()


def _check_store(srv: Any, store: str) -> None:
    """The server says it runs on `store` (a PostgreSQL case must not pass on SQLite)."""
    with srv.client() as admin:
        url = admin.get("/v1/cluster").json()["store"]
    assert url.startswith(store), f"the {store} server runs on {url}"


def _add_users(srv: Any) -> None:
    """An operator, oscar, and a token each for alice, bob and oscar (srv.tokens)."""
    with srv.client() as admin:
        admin.post(
            "/v1/users",
            json={"name": "oscar", "admin_level": "Operator", "accounts": ["physics"]},
        ).raise_for_status()
        srv.tokens = {}
        for user in ("alice", "bob", "oscar"):
            r = admin.post("/v1/tokens", json={"user": user, "name": "test"})
            r.raise_for_status()
            srv.tokens[user] = r.json()["token"]
