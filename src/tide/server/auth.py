"""Bearer tokens -> a Principal with a role, as Slurm's AdminLevel gives it.

Roles: "user" (AdminLevel None), "operator" (Operator: nodes and any job),
"admin" (Administrator: accounts, limits, tokens too). A job-scoped token
(role "job") is given to each running job so `tide notify` can report
progress for that job and nothing else; it is an HMAC of the job id with
the server's secret, so it needs no table.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from dataclasses import dataclass

from tide.server.errors import ApiError
from tide.store import accounts as acctrepo
from tide.store import tokens as tokrepo

ROLE_OF_LEVEL = {"administrator": "admin", "admin": "admin", "operator": "operator"}
RANK = {"job": 0, "user": 1, "operator": 2, "admin": 3}
JOB_PREFIX = "tidejob_"


@dataclass(slots=True, frozen=True)
class Principal:
    user: str
    role: str  # job, user, operator, admin
    job_id: int | None = None  # for role "job"
    run: int = 0  # for role "job": the run (restart count) the token was given to

    def at_least(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]

    @property
    def operator(self) -> bool:
        return self.at_least("operator")


def role_of(admin_level: str) -> str:
    return ROLE_OF_LEVEL.get(admin_level.lower(), "user")


def job_token(secret: bytes, job_id: int, run: int = 0) -> str:
    """The token of one run of a job: a requeued job's next run (restart count
    `run`) gets another, so an earlier run's token dies with that run."""
    what, name = (f"job:{job_id}", str(job_id)) if run == 0 else (
        f"job:{job_id}:{run}", f"{job_id}r{run}")  # fmt: skip
    mac = hmac.new(secret, what.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{JOB_PREFIX}{name}_{mac}"


class Authenticator:
    """Checks tokens with a short cache so a busy client costs no query per request."""

    TTL = 30.0

    def __init__(self, sessions, secret: bytes) -> None:  # type: ignore[no-untyped-def]
        self._sessions = sessions
        self._secret = secret
        self._cache: dict[str, tuple[Principal, float]] = {}
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    def principal(self, header: str | None) -> Principal:
        if not header or not header.lower().startswith("bearer "):
            raise ApiError(
                401,
                "missing bearer token",
                "Authorization",
                "send 'Authorization: Bearer TOKEN'; the CLI reads TIDE_TOKEN or the server's "
                "token file (DATA_DIR/admin.token)",
            )
        secret = header[7:].strip()
        if secret.startswith(JOB_PREFIX):
            return self._job_principal(secret)
        now = time.time()
        with self._lock:
            hit = self._cache.get(secret)
        if hit and hit[1] > now:
            return hit[0]
        with self._sessions() as s:
            row = tokrepo.lookup(s, secret, now)
            if row is None:
                raise ApiError(
                    401,
                    "invalid, expired or revoked token",
                    "Authorization",
                    "ask an admin for a token: tide admin token create USER",
                )
            user = acctrepo.get_user(s, row.user)
            role = role_of(user.admin_level) if user else "user"
            p = Principal(row.user, role)
            expires = min(now + self.TTL, row.expires or now + self.TTL)
        with self._lock:
            self._cache[secret] = (p, expires)
        return p

    def _job_principal(self, secret: str) -> Principal:
        name = secret[len(JOB_PREFIX) :].split("_", 1)[0]
        ident, _, run_text = name.partition("r")
        try:
            job_id, run = int(ident), int(run_text or 0)
        except ValueError:
            job_id, run = -1, -1
        valid = job_id >= 0 and run >= 0 and len(name) < 32
        if not valid or not hmac.compare_digest(job_token(self._secret, job_id, run), secret):
            raise ApiError(
                401, "invalid job token", "Authorization", "use TIDE_JOB_TOKEN of the job"
            )
        return Principal(f"job:{job_id}", "job", job_id, run)
