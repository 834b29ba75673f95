"""API errors: every error is JSON {"error", "field", "fix"}.

`error` says what is wrong (with the bad value), `field` names the request
field or option it came from, `fix` says what to do instead. Services raise
ApiError; the app turns it (and FastAPI's own validation errors) into that
shape, so the CLI can print one clear line and never a traceback.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


class ApiError(Exception):
    def __init__(self, status: int, error: str, field: str = "", fix: str = "") -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.field = field
        self.fix = fix

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "field": self.field, "fix": self.fix}


def bad_request(error: str, field: str = "", fix: str = "") -> ApiError:
    return ApiError(400, error, field, fix)


def not_found(what: str, value: object, fix: str = "") -> ApiError:
    return ApiError(404, f"{what} {value} not found", what.replace(" ", "_"), fix)


def forbidden(error: str, fix: str = "") -> ApiError:
    return ApiError(403, error, "", fix)


def conflict(error: str, field: str = "", fix: str = "") -> ApiError:
    return ApiError(409, error, field, fix)


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_req: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_req: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(validation_body(list(exc.errors())), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        fix = "see /openapi.json for the routes" if exc.status_code in (404, 405) else ""
        return JSONResponse(
            {"error": str(exc.detail), "field": "", "fix": fix}, status_code=exc.status_code
        )


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
