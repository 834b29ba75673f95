"""A small synchronous client: JSON in, JSON out, errors as ClientError.

Built on the standard library's http.client (one keep-alive connection), not
httpx: the CLI starts often, and `tide queue` must answer in well under a
second, so every import counts.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any
from urllib.parse import urlencode, urlsplit

from tide.client.discovery import find_token, server_url


class ClientError(Exception):
    """An error the server (or the network) reported, with the server's fields."""

    def __init__(self, status: int, error: str, field: str = "", fix: str = "") -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.field = field
        self.fix = fix

    def __str__(self) -> str:
        return self.error + (f"\n  fix: {self.fix}" if self.fix else "")


class Client:
    def __init__(self, url: str, token: str, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ClientError(
                0,
                f"TIDE_URL={url!r} is not an http(s) URL",
                "TIDE_URL",
                "e.g. http://127.0.0.1:6817",
            )
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self._timeout)
        return self._conn

    def _send(
        self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None
    ) -> tuple[int, bytes, str]:
        target = self._prefix + path
        if params:
            target += "?" + urlencode(params, doseq=True)
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):  # a kept-alive connection the server closed: retry once
            conn = self._connection()
            try:
                conn.request(method, target, body=data, headers=headers)
                r = conn.getresponse()
                return r.status, r.read(), r.reason
            except (ConnectionRefusedError, socket.gaierror, TimeoutError) as e:
                self.close()
                raise ClientError(
                    0,
                    f"cannot reach the tide server at {self.url} ({e})",
                    "TIDE_URL",
                    "start it with `tide server` or point TIDE_URL at it",
                ) from e
            except (http.client.HTTPException, OSError) as e:
                self.close()
                if attempt:
                    raise ClientError(0, f"request to {self.url}{path} failed: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def _checked(self, method: str, path: str, **kw: Any) -> bytes:
        status, raw, reason = self._send(method, path, **kw)
        if status >= 400:
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"error": raw.decode(errors="replace") or reason}
            if not isinstance(body, dict):
                body = {"error": str(body)}
            raise ClientError(
                status,
                str(body.get("error") or body.get("detail") or reason),
                str(body.get("field", "")),
                str(body.get("fix", "")),
            )
        return raw

    def request(self, method: str, path: str, **kw: Any) -> Any:
        raw = self._checked(method, path, **kw)
        return json.loads(raw) if raw else None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=_clean(params))

    def get_text(self, path: str, **params: Any) -> str:
        return self._checked("GET", path, params=_clean(params)).decode()

    def post(self, path: str, body: Any = None, **params: Any) -> Any:
        return self.request("POST", path, params=_clean(params), body=body or {})

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body=body)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, body=body)

    def delete(self, path: str, **params: Any) -> Any:
        return self.request("DELETE", path, params=_clean(params))


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in params.items():
        if v is None or v == [] or v == "":
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else v
    return out


def connect(url: str | None = None, token: str | None = None) -> Client:
    """A client for TIDE_URL with the discovered token (see tide.client.discovery)."""
    if token is None:
        token, _ = find_token()
    return Client(url or server_url(), token)
