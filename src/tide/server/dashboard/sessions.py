"""Browser sessions of the dashboard: an API token in, an opaque cookie out.

A person pastes their API token into the login form once. The server checks
it like any request (tide.server.auth), keeps it in memory under a random
session id, and sets that id as an HttpOnly, SameSite=Strict cookie limited
to /ui: page scripts cannot read it, other sites cannot send it, and the
token itself never goes back to the browser. Every page re-checks the token,
so revoking it (or lowering the user's role) applies within the auth cache's
30 s. Sessions end after IDLE seconds unused, after MAX_AGE in any case, at
logout, and when the server restarts (they are not stored).

The only state-changing requests are POST /ui/login and /ui/logout. Both
carry a CSRF token: for login, a random value set in a cookie when the form
was served and echoed in the form (another site can neither read the cookie
nor set it); for logout, an HMAC of the session id.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass

COOKIE = "tide_session"
LOGIN_CSRF_COOKIE = "tide_login_csrf"
IDLE = 8 * 3600.0
MAX_AGE = 24 * 3600.0
MAX_SESSIONS = 10_000


@dataclass(slots=True)
class Session:
    token: str
    created: float
    used: float


class SessionStore:
    """In-memory sessions, bounded (the oldest go first when full)."""

    def __init__(self, secret: bytes, clock: object = time.time) -> None:
        self._secret = secret
        self._clock = clock
        self._by_id: dict[str, Session] = {}
        self._lock = threading.Lock()

    def _now(self) -> float:
        return float(self._clock())  # type: ignore[operator]

    def create(self, token: str) -> str:
        sid = secrets.token_urlsafe(32)
        now = self._now()
        with self._lock:
            if len(self._by_id) >= MAX_SESSIONS:
                oldest = min(self._by_id, key=lambda k: self._by_id[k].used)
                del self._by_id[oldest]
            self._by_id[sid] = Session(token, now, now)
        return sid

    def token(self, sid: str | None) -> str | None:
        """The API token behind a live session id, or None (expired sessions go)."""
        if not sid:
            return None
        now = self._now()
        with self._lock:
            s = self._by_id.get(sid)
            if s is None:
                return None
            if now - s.used > IDLE or now - s.created > MAX_AGE:
                del self._by_id[sid]
                return None
            s.used = now
            return s.token

    def drop(self, sid: str | None) -> None:
        with self._lock:
            self._by_id.pop(sid or "", None)

    def csrf(self, sid: str) -> str:
        """The logout form's token for this session."""
        return hmac.new(self._secret, f"csrf:{sid}".encode(), hashlib.sha256).hexdigest()[:32]

    def csrf_ok(self, sid: str | None, value: str) -> bool:
        return bool(sid) and hmac.compare_digest(self.csrf(sid or ""), value)


def new_login_csrf() -> str:
    return secrets.token_urlsafe(24)
