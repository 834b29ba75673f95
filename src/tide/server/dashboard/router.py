"""/ui: the live dashboard's pages (server-rendered, read-only).

Authentication is the API's: a bearer token in the Authorization header, or
a browser session made from one at /ui/login (tide.server.dashboard.sessions).
Pages refresh themselves every few seconds (a small same-origin script;
without script they are still whole pages). Every page answers with a strict
Content-Security-Policy, no caching, and no framing.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

import tide
from tide.display import duration, percent, seconds_short, si, timestamp
from tide.server.auth import Principal
from tide.server.dashboard import charts, views
from tide.server.dashboard.sessions import COOKIE, LOGIN_CSRF_COOKIE, SessionStore, new_login_csrf
from tide.server.errors import ApiError

HERE = Path(__file__).parent
STATIC = HERE / "static"
STATIC_FILES = {p.name for p in STATIC.iterdir() if p.is_file()}
_ENV = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters.update(
    ts=lambda t: timestamp(t) if t else "",
    dur=lambda s: duration(s) if s is not None else "",
    si=si,
    pct=percent,
    secs=seconds_short,
)
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' "
    "'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
REFRESH_S = 5  # seconds between live refreshes, unless ?refresh=N
REFRESH_MAX_S = 300

router = APIRouter(prefix="/ui", include_in_schema=False)


class LoginNeeded(Exception):
    pass


def _sessions(request: Request) -> SessionStore:
    app = request.app
    store = getattr(app.state, "ui_sessions", None)
    if store is None:
        store = app.state.ui_sessions = SessionStore(secrets.token_bytes(32))
    return store


def _principal(request: Request) -> Principal:
    """The caller, from the Authorization header or the session cookie."""
    auth = request.app.state.ctl.auth
    header = request.headers.get("authorization")
    if header is None:
        token = _sessions(request).token(request.cookies.get(COOKIE))
        if token is None:
            raise LoginNeeded
        header = f"Bearer {token}"
    try:
        p = auth.principal(header)
    except ApiError as e:
        if e.status == 401:
            _sessions(request).drop(request.cookies.get(COOKIE))
            raise LoginNeeded from None
        raise
    if p.role == "job":
        raise ApiError(403, "a job token cannot open the dashboard", "", "log in with your token")
    return p


def _page(request: Request, template: str, p: Principal | None, status: int = 200,
          **ctx: Any) -> HTMLResponse:  # fmt: skip
    sid = request.cookies.get(COOKIE)
    live = ctx.pop("live", True) and request.query_params.get("live") != "0"
    html = _ENV.get_template(template).render(
        who=p,
        version=tide.__version__,
        refresh=_refresh_s(request) if live else 0,
        logout_csrf=_sessions(request).csrf(sid) if sid and p is not None else "",
        cluster_name=request.app.state.ctl.cluster.name,
        path=request.url.path,
        **ctx,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


async def _render(request: Request, template: str, build: Any, *args: Any, **ctx: Any
                  ) -> Response:  # fmt: skip
    """Authenticate, build the page's data in a worker thread (store reads),
    render; a missing login goes to the form, an API error to an error page."""
    try:
        p = _principal(request)
        data = await asyncio.to_thread(build, request.app.state.ctl, p, *args)
    except LoginNeeded:
        return _to_login(request)
    except ApiError as e:
        return _page(request, "error.html", None, e.status, error=e, live=False)
    return _page(request, template, p, data=data, charts=charts, **ctx)


@router.get("")
@router.get("/")
async def overview(request: Request) -> Response:
    return await _render(request, "cluster.html", views.cluster, title="Cluster")


@router.get("/queue")
async def queue(request: Request) -> Response:
    return await _render(request, "queue.html", views.queue, title="Queue")


@router.get("/jobs/{job_id}")
async def job(request: Request, job_id: str) -> Response:
    return await _render(request, "job.html", views.job, job_id, title=f"Job {job_id}")


@router.get("/accounts")
async def accounts(request: Request, hours: float = 24.0) -> Response:
    hours = min(max(hours, 1.0), 24.0 * 90)
    return await _render(request, "accounts.html", views.accounts, hours, title="Accounts")


@router.get("/services")
async def services(request: Request) -> Response:
    return await _render(request, "services.html", views.services, title="Services")


@router.get("/login")
async def login_form(request: Request, next: str = "/ui/") -> Response:
    return _login_page(request, _safe_next(next))


def _login_page(request: Request, nxt: str, error: str = "", status: int = 200) -> Response:
    """The login form with a fresh CSRF value, in the form and in a cookie."""
    csrf = new_login_csrf()
    resp = _page(request, "login.html", None, status, next=nxt, csrf=csrf, error=error,
                 title="Log in", live=False)  # fmt: skip
    resp.set_cookie(LOGIN_CSRF_COOKIE, csrf, max_age=900, httponly=True, samesite="strict",
                    path="/ui", secure=request.url.scheme == "https")  # fmt: skip
    return resp


@router.post("/login")
async def login(request: Request) -> Response:
    form = _form(await request.body())
    token, nxt = form.get("token", "").strip(), _safe_next(form.get("next", "/ui/"))
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    error = ""
    if not expected or not secrets.compare_digest(expected, form.get("csrf", "")):
        error = "the form expired; log in again"
    else:
        try:
            p = request.app.state.ctl.auth.principal(f"Bearer {token}")
            if p.role == "job":
                error = "a job token cannot open the dashboard; use your own token"
        except ApiError as e:
            error = f"{e.error}: {e.fix}" if e.fix else e.error
    if error:
        return _login_page(request, nxt, error, 401)
    sid = _sessions(request).create(token)
    resp = RedirectResponse(nxt, 303, headers=HEADERS)
    resp.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/ui",
                    secure=request.url.scheme == "https")  # fmt: skip
    resp.delete_cookie(LOGIN_CSRF_COOKIE, path="/ui")
    return resp


@router.post("/logout")
async def logout(request: Request) -> Response:
    form = _form(await request.body())
    sid = request.cookies.get(COOKIE)
    if _sessions(request).csrf_ok(sid, form.get("csrf", "")):
        _sessions(request).drop(sid)
    resp = RedirectResponse("/ui/login", 303, headers=HEADERS)
    resp.delete_cookie(COOKIE, path="/ui")
    return resp


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC_FILES:  # a fixed set: no path tricks
        return Response("not found", 404, headers=HEADERS)
    return FileResponse(STATIC / name, headers={**HEADERS, "Cache-Control": "max-age=300"})


def _to_login(request: Request) -> Response:
    """To the login form, coming back to this page (query included) after it."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/login?next={quote(here)}", 303, headers=HEADERS)


def _refresh_s(request: Request) -> int:
    """Seconds between live refreshes: ?refresh=N (1-300), else REFRESH_S."""
    text = request.query_params.get("refresh", "")
    if not (text.isascii() and text.isdigit() and len(text) <= 4):
        return REFRESH_S
    return min(REFRESH_MAX_S, max(1, int(text)))


def _form(body: bytes) -> dict[str, str]:
    """An urlencoded form (the only kind these pages post), last value wins."""
    if len(body) > 8192:
        return {}
    return {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def _safe_next(target: str) -> str:
    """Only a path inside the dashboard: never another site after login."""
    if target.startswith("/ui") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui/"
