"""API tokens: random secrets handed out once, stored as SHA-256 digests.

A token is 32 random bytes (256 bits), so a plain SHA-256 digest is enough
to make a stolen table useless (no salt or slow hash needed: there is
nothing to brute-force), and lets a request be checked with one indexed
lookup.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from tide.store.models import TokenRow

PREFIX = "tide_"


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create(
    session: Session, user: str, now: float, name: str = "", expires: float | None = None
) -> tuple[str, TokenRow]:
    """A new token for `user`; the secret is returned once and never stored."""
    secret = new_secret()
    row = TokenRow(digest=digest(secret), user=user, name=name, created=now, expires=expires)
    session.add(row)
    session.flush()
    return secret, row


def lookup(session: Session, secret: str, now: float) -> TokenRow | None:
    row = session.scalar(select(TokenRow).where(TokenRow.digest == digest(secret)))
    if row is None or row.revoked or (row.expires is not None and row.expires <= now):
        return None
    return row


def list_tokens(session: Session, user: str | None = None) -> list[TokenRow]:
    stmt = select(TokenRow).order_by(TokenRow.id)
    if user:
        stmt = stmt.where(TokenRow.user == user)
    return list(session.scalars(stmt))


def revoke(session: Session, token_id: int) -> bool:
    res = session.execute(update(TokenRow).where(TokenRow.id == token_id).values(revoked=True))
    return bool(res.rowcount)  # type: ignore[attr-defined]
