"""A small synchronous client: JSON in, JSON out, errors as ClientError.

HTTP/1.1 over one kept-alive socket, written here: `squeue` and `tide queue`
start often, and importing http.client (with email, ssl, urllib) cost more CPU
than all the rest of such a command (bench/bench_cli.py). TLS (https://) loads
ssl only when asked for.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from tide.client.discovery import find_token, server_url

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


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
        parsed = _split_url(self.url)
        if parsed is None:
            raise ClientError(
                0,
                f"TIDE_URL={url!r} is not an http(s) URL",
                "TIDE_URL",
                "e.g. http://127.0.0.1:6817",
            )
        self._https, self._host, self._port, self._prefix = parsed
        self._timeout = timeout
        self._sock: socket.socket | None = None
        self._file: Any = None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> None:
        if self._sock is not None:
            return
        sock = socket.create_connection((self._host, self._port), timeout=self._timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._https:
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self._host)
        self._sock, self._file = sock, sock.makefile("rb")

    def _send(
        self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None
    ) -> tuple[int, bytes, str]:
        target = self._prefix + path
        if params:
            target += "?" + _urlencode(params)
        head = [f"{method} {target} HTTP/1.1", f"Host: {self._host}:{self._port}"]
        head.append("Accept: application/json")
        if self.token:
            head.append(f"Authorization: Bearer {self.token}")
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            head.append("Content-Type: application/json")
        head.append(f"Content-Length: {len(data)}")
        request = ("\r\n".join(head) + "\r\n\r\n").encode() + data
        for attempt in (0, 1):  # a kept-alive connection the server closed: retry once
            try:
                self._connect()
                assert self._sock is not None
                self._sock.sendall(request)
                return self._response()
            except (ConnectionRefusedError, socket.gaierror, TimeoutError) as e:
                self.close()
                raise ClientError(
                    0,
                    f"cannot reach the tide server at {self.url} ({e})",
                    "TIDE_URL",
                    "start it with `tide server` or point TIDE_URL at it",
                ) from e
            except (OSError, ValueError) as e:
                self.close()
                if attempt:
                    raise ClientError(0, f"request to {self.url}{path} failed: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def _response(self) -> tuple[int, bytes, str]:
        """Status, body and reason of one HTTP/1.1 response (Content-Length, chunked,
        or read to the close)."""
        f = self._file
        status_line = f.readline(65537)
        if not status_line:
            raise ConnectionResetError("the server closed the connection")
        words = status_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        code, reason = words[1], (words[2] if len(words) > 2 else "")
        headers: dict[str, str] = {}
        while True:
            line = f.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            key, _, value = line.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = _chunked(f)
        elif "content-length" in headers:
            body = f.read(int(headers["content-length"]))
        else:
            body = f.read()
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return int(code), body, reason

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


def _split_url(url: str) -> tuple[bool, str, int, str] | None:
    """(https, host, port, path prefix) of an http(s) URL; None if it is not one."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None
    https = scheme.lower() == "https"
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rpartition("@")[2]
    if netloc.startswith("["):  # [::1]:6817
        host, _, port_text = netloc[1:].partition("]")
        port_text = port_text.lstrip(":")
    else:
        host, _, port_text = netloc.partition(":")
    if not host or (port_text and not port_text.isdigit()):
        return None
    port = int(port_text) if port_text else (443 if https else 80)
    return https, host, port, (slash + path).rstrip("/")


def _quote(text: str) -> str:
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in text.encode())


def _urlencode(params: dict[str, Any]) -> str:
    """urllib's urlencode(doseq=True), quoting as quote_plus does except spaces (%20)."""
    pairs = []
    for k, v in params.items():
        for item in v if isinstance(v, list | tuple) else [v]:
            pairs.append(f"{_quote(str(k))}={_quote(str(item))}")
    return "&".join(pairs)


def _chunked(f: Any) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int(f.readline(65537).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while f.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        parts.append(f.read(size))
        f.readline(65537)  # the CRLF after each chunk


def connect(url: str | None = None, token: str | None = None) -> Client:
    """A client for TIDE_URL with the discovered token (see tide.client.discovery)."""
    if token is None:
        token, _ = find_token()
    return Client(url or server_url(), token)
