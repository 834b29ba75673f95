"""Shared bits of the CLI commands that talk to the server: client, errors, --json."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import typer

from tide.client import Client, ClientError, connect

T = TypeVar("T")

JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def fail(message: str, fix: str = "", code: int = 1) -> None:
    sys.stderr.write(f"tide: error: {message}\n")
    if fix:
        sys.stderr.write(f"  fix: {fix}\n")
    raise typer.Exit(code)


@contextmanager
def api() -> Iterator[Client]:
    """A connected client; server errors become one clear line and exit 1."""
    client = connect()
    try:
        yield client
    except ClientError as e:
        where = f" ({e.field})" if e.field and e.field not in e.error else ""
        fail(e.error + where, e.fix)
    finally:
        client.close()


def call(fn: Callable[[Client], T]) -> T:
    with api() as c:
        return fn(c)
    raise AssertionError("unreachable")  # pragma: no cover


def csv_list(values: list[str] | None) -> list[str]:
    return [v for x in values or [] for v in x.split(",") if v]


def opt(d: dict[str, Any], key: str, default: Any = "") -> Any:
    v = d.get(key)
    return default if v is None else v
