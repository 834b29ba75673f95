"""A direct ASGI path for `POST /v1/jobs`, the one route that must be fast.

FastAPI's per-request machinery (dependency solving, middleware stack,
response models) costs more CPU than checking and queueing a job. This
wrapper answers submissions itself with exactly the same steps as the
FastAPI route (tide.server.routers.jobs.submit, which stays for the OpenAPI
schema): token -> SubmitBody validation -> services.submit.prepare -> group
commit -> 201 {"job_id", "warnings"[, "array_job_id", "job_ids"]}, and the
same JSON errors. Every other request goes to the app untouched, unless
its URL holds a NUL character (400: no name, id or filter holds one).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError

from tide.server.errors import ApiError, internal_error, validation_body

log = logging.getLogger("tide.server")
Scope = dict[str, Any]
MAX_BODY = 16 * 1024 * 1024  # bytes: scripts are small; a runaway client is not


class FastSubmit:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and _has_nul(scope):
            await _answer(send, 400, _dumps(_NUL_ERROR))
            return
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"].rstrip("/") == "/v1/jobs"
        ):
            status, body = await self._submit(scope, receive)
            await _answer(send, status, body)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await _answered_always(self.app, scope, receive, send)

    async def _submit(self, scope: Scope, receive: Any) -> tuple[int, bytes]:
        ctl = scope["app"].state.ctl if "app" in scope else self.app.state.ctl
        try:
            auth = None
            for k, v in scope["headers"]:
                if k == b"authorization":
                    auth = v.decode("latin-1")
                    break
            who = ctl.auth.principal(auth)
            raw = await _read(receive)
            # decoding, parsing and checks off the event loop (a costly request cannot
            # stall the API), batched with other submissions (tide.server.intake)
            prepared = await ctl.intake.submit(who, raw)
        except ApiError as e:
            return e.status, _dumps(e.body())
        except ValidationError as e:
            return 422, _dumps(validation_body(e.errors()))
        except Exception as e:
            err = internal_error(e, "a submission")
            return err.status, _dumps(err.body())
        first = prepared.rows[0]
        out: dict[str, Any] = {"job_id": first["id"], "warnings": prepared.warnings}
        if "array_job_id" in first:
            out["array_job_id"] = first["array_job_id"]
            out["job_ids"] = [
                f"{first['array_job_id']}_{r['array_task_id']}" for r in prepared.rows
            ]
        return 201, _dumps(out)


async def _answered_always(app: Any, scope: Scope, receive: Any, send: Any) -> None:
    """Run the app; an exception it raises is answered as JSON (errors.internal_error:
    507 for a full disk, 503 for a lost database, else 500) and goes no further.
    Starlette answers an unhandled exception and then raises it again, and the
    server then drops the keep-alive connection: the client's next request on it
    failed with a reset."""
    started = False

    async def tracked(message: Any) -> None:
        nonlocal started
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, receive, tracked)
    except Exception as e:
        if started:  # the app's handler answered it (and logged it) already
            return
        err = internal_error(e, f"{scope.get('method')} {scope.get('path')}")
        await _answer(send, err.status, _dumps(err.body()))


_NUL_ERROR = {
    "error": "the URL holds a NUL character (%00)",
    "field": "url",
    "fix": "remove it: no name, id or filter contains one",
}


def _has_nul(scope: Scope) -> bool:
    """A NUL in the path or query: no store can take it (PostgreSQL refuses it)."""
    raw = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogateescape")
    query = scope.get("query_string", b"")
    return b"\x00" in raw or b"%00" in raw or b"%00" in query or b"\x00" in query


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _read(receive: Any) -> bytes:
    chunks = []
    size = 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ApiError(400, "the client went away", "body", "")
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, "the request body is too large", "body", "send a smaller script")
        chunks.append(chunk)
        if not msg.get("more_body", False):
            return b"".join(chunks)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()
