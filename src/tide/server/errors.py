"""API errors: every error is JSON {"error", "field", "fix"}.

`error` says what is wrong (with the bad value), `field` names the request
field or option it came from, `fix` says what to do instead. Services raise
ApiError; the app turns it (and FastAPI's own validation errors) into that
shape, so the CLI can print one clear line and never a traceback.
"""

from __future__ import annotations

import errno
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("tide.server")


class ApiError(Exception):
    def __init__(self, status: int, error: str, field: str = "", fix: str = "") -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.field = field
        self.fix = fix

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "field": self.field, "fix": self.fix}


ERROR_SCHEMA = {
    "type": "object",
    "properties": {k: {"type": "string"} for k in ("error", "field", "fix")},
    "required": ["error", "field", "fix"],
}
_MEANING = {
    400: "bad request: a value is wrong (the error names the field and the fix)",
    401: "no token, or an invalid, expired or revoked one",
    403: "the caller's role or ownership does not allow it",
    404: "no such job, node, account, ...",
    409: "the object is in a state that does not allow it",
    413: "the request body is too large",
    422: "the body or a parameter does not match the schema",
    500: "internal error (logged)",
    503: "the database is unavailable; nothing was stored",
    507: "the server's disk is full; nothing was stored",
}
COMMON = (400, 401, 403, 404, 409, 422, 500, 503, 507)


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route can answer."""
    return {
        code: {
            "description": _MEANING[code],
            "content": {"application/json": {"schema": ERROR_SCHEMA}},
        }
        for code in codes or COMMON
    }


def bad_request(error: str, field: str = "", fix: str = "") -> ApiError:
    return ApiError(400, error, field, fix)


def not_found(what: str, value: object, fix: str = "") -> ApiError:
    return ApiError(404, f"{what} {value} not found", what.replace(" ", "_"), fix)


def forbidden(error: str, fix: str = "") -> ApiError:
    return ApiError(403, error, "", fix)


def conflict(error: str, field: str = "", fix: str = "") -> ApiError:
    return ApiError(409, error, field, fix)


def store_error(exc: BaseException) -> ApiError | None:
    """A full disk is 507 and an unavailable database 503: JSON that says
    nothing was stored (the transaction rolled back), never a bare 500."""
    from tide.store.db import database_unavailable

    text = str(exc).lower()
    full = "disk is full" in text or "no space left" in text or "disk full" in text
    if full or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)):
        return ApiError(
            507,
            "the server's disk is full: nothing was stored",
            "",
            "retry once an admin has freed space on the server's data disk",
        )
    if database_unavailable(exc):
        return ApiError(
            503,
            "the database is unavailable: nothing was stored",
            "",
            "retry in a moment; if it lasts, tell an admin (tide server's log names the cause)",
        )
    return None


def internal_error(exc: BaseException, what: str) -> ApiError:
    """Any other exception: logged with its traceback, answered as JSON 500."""
    found = store_error(exc)
    if found is not None:
        log.warning("%s: %s", what, found.error, exc_info=exc)
        return found
    log.error("%s failed", what, exc_info=exc)
    return ApiError(500, f"internal error while handling {what}", "", "see the server's log")


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_req: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_req: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(validation_body(list(exc.errors())), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(req: Request, exc: StarletteHTTPException) -> JSONResponse:
        fix = "see /openapi.json for the routes" if exc.status_code in (404, 405) else ""
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            allowed = allowed_methods(app, req.scope)
            headers["Allow"] = ", ".join(allowed)
            fix = f"use {' or '.join(allowed)} on this path"
        return JSONResponse(
            {"error": str(exc.detail), "field": "", "fix": fix},
            status_code=exc.status_code,
            headers=headers,
        )

    @app.exception_handler(Exception)
    async def _any(req: Request, exc: Exception) -> JSONResponse:
        e = internal_error(exc, f"{req.method} {req.url.path}")
        return JSONResponse(e.body(), status_code=e.status)


def allowed_methods(app: FastAPI, scope: Any) -> list[str]:
    """Every method some route serves on this path (a 405's Allow header;
    Starlette's names only the methods of the first route that matched)."""
    from starlette.routing import Match

    matched = [r for r in _leaf_routes(app.router.routes) if r.matches(scope)[0] is not Match.NONE]
    # a fixed path (/v1/jobs/batch) is its own resource, not a value of /v1/jobs/{job_id}
    fixed = [r for r in matched if not getattr(r, "param_convertors", None)]
    methods: set[str] = set()
    for route in fixed or matched:
        methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods - {"HEAD"}) if methods - {"HEAD"} else sorted(methods)


def _leaf_routes(routes: Any) -> Any:
    """Routes with their methods (FastAPI may wrap an included router's)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _leaf_routes(inner.routes)
        else:
            yield route


def validation_body(errs: list[Any]) -> dict[str, Any]:
    """pydantic's first error as {"error", "field", "fix"}."""
    first = errs[0] if errs else {}
    loc = [str(x) for x in first.get("loc", ()) if x not in ("body", "query", "path")]
    field = ".".join(loc)
    msg = first.get("msg", "invalid request")
    got = first.get("input")
    error = f"{field or 'request'}: {msg}" + (f" (got {got!r})" if _short(got) else "")
    fix = (
        f"send a valid value for '{field}' (see /openapi.json)"
        if field
        else "send a JSON body matching the schema in /openapi.json"
    )
    return {"error": error, "field": field, "fix": fix}


def _short(value: object) -> bool:
    return value is not None and not isinstance(value, dict | list) and len(repr(value)) < 80
