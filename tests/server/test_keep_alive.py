"""An idle keep-alive connection outlives a client's own keep-alive expiry
(tide.server.settings.Settings.keep_alive). At uvicorn's default (5 s, httpx's
expiry too) the server closed it as the client reused it: under load the tests'
clients lost requests ("Server disconnected without sending a response")."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow

HTTPX_EXPIRY = 5.0  # httpx.Limits().keepalive_expiry


def _ping(sock: socket.socket) -> bytes:
    """One GET /v1/ping on the open connection; the raw answer (b"" if closed)."""
    sock.sendall(b"GET /v1/ping HTTP/1.1\r\nHost: tide\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return b""
        if not chunk:
            return got
        got += chunk
    return got


def test_an_idle_connection_is_kept_past_a_clients_expiry(tiny: Any) -> None:
    with socket.create_connection(("127.0.0.1", tiny.port), timeout=30) as sock:
        assert _ping(sock).startswith(b"HTTP/1.1 200")
        time.sleep(HTTPX_EXPIRY + 1.0)  # a client would have given it up by now
        again = _ping(sock)
    assert again.startswith(b"HTTP/1.1 200"), f"the server dropped the connection: {again!r}"
