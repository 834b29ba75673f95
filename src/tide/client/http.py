"""A small synchronous client: JSON in, JSON out, errors as ClientError."""

from __future__ import annotations

from typing import Any

import httpx

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
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, **kw: Any) -> Any:
        r = self._send(method, path, **kw)
        return r.json() if r.content else None

    def get_text(self, path: str, **params: Any) -> str:
        clean = {k: v for k, v in params.items() if v is not None and v != [] and v != ""}
        return self._send("GET", path, params=clean).text

    def _send(self, method: str, path: str, **kw: Any) -> httpx.Response:
        try:
            r = self._http.request(method, path, **kw)
        except httpx.ConnectError as e:
            raise ClientError(
                0,
                f"cannot reach the tide server at {self.url} ({e})",
                "TIDE_URL",
                "start it with `tide server` or point TIDE_URL at it",
            ) from e
        except httpx.HTTPError as e:
            raise ClientError(0, f"request to {self.url}{path} failed: {e}") from e
        if r.status_code >= 400:
            try:
                body = r.json()
            except ValueError:
                body = {"error": r.text or r.reason_phrase}
            if not isinstance(body, dict):
                body = {"error": str(body)}
            raise ClientError(
                r.status_code,
                str(body.get("error") or body.get("detail") or r.reason_phrase),
                str(body.get("field", "")),
                str(body.get("fix", "")),
            )
        return r

    def get(self, path: str, **params: Any) -> Any:
        clean = {k: v for k, v in params.items() if v is not None and v != [] and v != ""}
        return self.request("GET", path, params=clean)

    def post(self, path: str, body: Any = None, **params: Any) -> Any:
        return self.request("POST", path, json=body if body is not None else {}, params=params)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, json=body)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, json=body)

    def delete(self, path: str, **params: Any) -> Any:
        clean = {k: v for k, v in params.items() if v is not None and v != ""}
        return self.request("DELETE", path, params=clean)


def connect(url: str | None = None, token: str | None = None) -> Client:
    """A client for TIDE_URL with the discovered token (see tide.client.discovery)."""
    if token is None:
        token, _ = find_token()
    return Client(url or server_url(), token)
