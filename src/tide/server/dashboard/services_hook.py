"""The services page's data: whatever GET /v1/services answers the caller.

Inference services live in their own router (docs/services.md when present).
The dashboard does not import it: it asks the app's own /v1/services in
process, with the caller's credentials, so the page shows exactly what the
API lets that caller see, and it works with any version of that router.
Without such a route the page says that services are not enabled.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import Request

PATH = "/v1/services"


def has_route(app: Any) -> bool:
    return any(getattr(r, "path", None) == PATH for r in app.router.routes)


async def listing(request: Request) -> dict[str, Any]:
    """{"enabled": bool, "items": [dict], "columns": [str], "error": str}."""
    app = request.app
    if not has_route(app):
        return {"enabled": False, "items": [], "columns": [], "error": ""}
    headers = {}
    if "authorization" in request.headers:
        headers["authorization"] = request.headers["authorization"]
    else:
        token = app.state.ui_sessions.token(request.cookies.get("tide_session"))
        headers["authorization"] = f"Bearer {token}"
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tide") as client:
        r = await client.get(PATH, headers=headers)
    if r.status_code != 200:
        return {"enabled": True, "items": [], "columns": [], "error": r.text[:300]}
    body = r.json()
    items = body if isinstance(body, list) else next(
        (v for v in body.values() if isinstance(v, list)), []
    ) if isinstance(body, dict) else []  # fmt: skip
    items = [i for i in items if isinstance(i, dict)]
    columns: list[str] = []
    for item in items:
        for k, v in item.items():
            if k not in columns and isinstance(v, str | int | float | bool | type(None)):
                columns.append(k)
    return {"enabled": True, "items": items, "columns": columns[:12], "error": ""}
