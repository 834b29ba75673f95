"""Accounts, users, associations, QOS, limits, tokens and prices (admins).

Every change is written, then the controller reloads its AccountTree, so
the next scheduling pass and the next submission see it.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from tide.model import Account, Qos, UserAssoc
from tide.server.auth import Principal, role_of
from tide.server.errors import bad_request, conflict, not_found
from tide.server.ports import Ctl
from tide.server.schemas import AccountBody, AssocBody, QosBody, TokenBody, UserBody
from tide.store import accounting, codec
from tide.store import accounts as acctrepo
from tide.store import jobs as jobrepo
from tide.store import tokens as tokrepo

LEVELS = {
    "none": "None",
    "operator": "Operator",
    "administrator": "Administrator",
    "admin": "Administrator",
}


def _limits(data: dict[str, Any], field: str) -> Any:
    try:
        return codec.limits_from_dict(data)
    except (TypeError, ValueError) as e:
        raise bad_request(
            f"{field}: {e}", field, 'e.g. {"grp_tres": {"gres/gpu": 16}, "max_jobs": 10}'
        ) from e


def account_view(a: Account) -> dict[str, Any]:
    d = asdict(a)
    d["limits"] = codec.limits_to_dict(a.limits)
    return d


def list_accounts(ctl: Ctl) -> list[dict[str, Any]]:
    return [account_view(a) for a in ctl.tree.accounts.values()]


def put_account(ctl: Ctl, body: AccountBody, create: bool) -> dict[str, Any]:
    tree = ctl.tree
    if create and body.name in tree.accounts:
        raise conflict(
            f"account {body.name!r} exists", "name", "use PATCH /v1/accounts/NAME to change it"
        )
    if body.name == "root" and body.parent not in ("", "root"):
        raise bad_request("root has no parent", "parent", "leave parent empty")
    parent = None if body.name == "root" else (body.parent or "root")
    if parent is not None and parent not in tree.accounts:
        raise bad_request(
            f"parent account {parent!r} does not exist", "parent", "create the parent first"
        )
    if parent is not None and body.name in tree.lineage(parent):
        raise bad_request(
            f"{body.name!r} cannot be below itself",
            "parent",
            "pick a parent that is not one of its descendants",
        )
    _check_qos(ctl, body.qos + ([body.default_qos] if body.default_qos else []))
    acct = Account(
        name=body.name,
        parent=parent,
        fairshare=body.fairshare,
        limits=_limits(body.limits, "limits"),
        description=body.description,
        organization=body.organization,
        qos=tuple(body.qos),
        default_qos=body.default_qos,
    )
    with ctl.sessions.begin() as s:
        acctrepo.put_account(s, acct)
    ctl.reload_tree()
    return account_view(acct)


def delete_account(ctl: Ctl, name: str) -> None:
    tree = ctl.tree
    if name == "root":
        raise bad_request("root cannot be deleted", "name", "delete its children instead")
    if name not in tree.accounts:
        raise not_found("account", name, "list them with `tide admin account list`")
    if tree.children(name):
        raise conflict(f"account {name!r} has sub-accounts", "name", "delete or move them first")
    with ctl.sessions() as s:
        active = jobrepo.first_in_account(s, name, ("PENDING", "RUNNING", "COMPLETING"))
    if active is not None:
        raise conflict(
            f"account {name!r} has active jobs (e.g. {active})",
            "name",
            "wait for them to end or cancel them",
        )
    with ctl.sessions.begin() as s:
        acctrepo.delete_account(s, name)
    ctl.reload_tree()


def list_users(ctl: Ctl) -> list[dict[str, Any]]:
    with ctl.sessions() as s:
        users = acctrepo.list_users(s)
    tree = ctl.tree
    return [
        {
            "name": u.name,
            "admin_level": u.admin_level,
            "role": role_of(u.admin_level),
            "default_account": u.default_account,
            "associations": [_assoc_view(a) for a in tree.users if a.user == u.name],
        }
        for u in users
    ]


def _assoc_view(a: UserAssoc) -> dict[str, Any]:
    d = asdict(a)
    d["limits"] = codec.limits_to_dict(a.limits)
    return d


def put_user(ctl: Ctl, body: UserBody) -> dict[str, Any]:
    level = LEVELS.get(body.admin_level.lower())
    if level is None:
        raise bad_request(
            f"admin_level {body.admin_level!r} is not a level",
            "admin_level",
            "use None, Operator or Administrator",
        )
    for acct in body.accounts + ([body.default_account] if body.default_account else []):
        if acct not in ctl.tree.accounts:
            raise bad_request(
                f"account {acct!r} does not exist",
                "accounts",
                "create it first: tide admin account add NAME",
            )
    with ctl.sessions.begin() as s:
        if level != "Administrator":
            _keep_an_admin(s, f"demoting {body.name!r}", user=body.name)
        for acct in body.accounts:
            if ctl.tree.assoc(body.name, acct) is None:
                acctrepo.put_assoc(s, UserAssoc(body.name, acct))
        s.flush()
        acctrepo.put_user(s, body.name, level, body.default_account or None)
    ctl.reload_tree()
    return next(u for u in list_users(ctl) if u["name"] == body.name)


def delete_user(ctl: Ctl, who: Principal, name: str) -> None:
    if name == who.user:
        raise bad_request("you cannot delete yourself", "name", "ask another admin")
    with ctl.sessions.begin() as s:
        if acctrepo.get_user(s, name) is None:
            raise not_found("user", name, "list them with `tide admin user list`")
        _keep_an_admin(s, f"deleting {name!r}", user=name)
        acctrepo.delete_user(s, name)
        for t in tokrepo.list_tokens(s, name):
            tokrepo.revoke(s, t.id)
    ctl.reload_tree()


def put_assoc(ctl: Ctl, body: AssocBody) -> dict[str, Any]:
    if body.account not in ctl.tree.accounts:
        raise bad_request(
            f"account {body.account!r} does not exist",
            "account",
            "create it first: tide admin account add NAME",
        )
    _check_qos(ctl, body.qos + ([body.default_qos] if body.default_qos else []))
    assoc = UserAssoc(
        user=body.user,
        account=body.account,
        fairshare=body.fairshare,
        limits=_limits(body.limits, "limits"),
        qos=tuple(body.qos),
        default_qos=body.default_qos,
        default_account=body.default_account,
    )
    with ctl.sessions.begin() as s:
        acctrepo.put_assoc(s, assoc)
        if body.default_account:
            acctrepo.put_user(s, body.user, None, body.account)
    ctl.reload_tree()
    # None only when another request deleted it since: this request stored `assoc`
    return _assoc_view(ctl.tree.assoc(body.user, body.account) or assoc)


def delete_assoc(ctl: Ctl, user: str, account: str) -> None:
    with ctl.sessions.begin() as s:
        if not acctrepo.delete_assoc(s, user, account):
            raise not_found(
                "association", f"{user}/{account}", "list them with `tide admin user list`"
            )
        row = acctrepo.get_user(s, user)
        if row is not None and row.default_account == account:
            row.default_account = ""
    ctl.reload_tree()


def _check_qos(ctl: Ctl, names: list[str]) -> None:
    for q in names:
        if q not in ctl.tree.qos:
            raise bad_request(
                f"QOS {q!r} does not exist", "qos", f"use one of: {', '.join(sorted(ctl.tree.qos))}"
            )


def list_qos(ctl: Ctl) -> list[dict[str, Any]]:
    out = []
    for q in ctl.tree.qos.values():
        d = asdict(q)
        d["limits"] = codec.limits_to_dict(q.limits)
        out.append(d)
    return out


def put_qos(ctl: Ctl, body: QosBody) -> dict[str, Any]:
    for p in body.preempt:
        if p not in ctl.tree.qos and p != body.name:
            raise bad_request(f"preempt: QOS {p!r} does not exist", "preempt", "create it first")
    q = Qos(
        name=body.name,
        priority=body.priority,
        limits=_limits(body.limits, "limits"),
        preempt=tuple(body.preempt),
        preempt_mode=body.preempt_mode,
        grace_time=body.grace_time,
        preempt_exempt_time=body.preempt_exempt_time,
        usage_factor=body.usage_factor,
        flags=tuple(body.flags),
    )
    with ctl.sessions.begin() as s:
        acctrepo.put_qos(s, q)
    ctl.reload_tree()
    return next(x for x in list_qos(ctl) if x["name"] == body.name)


def delete_qos(ctl: Ctl, name: str) -> None:
    if name == "normal":
        raise bad_request("QOS 'normal' is the default and cannot be deleted", "name", "")
    if name not in ctl.tree.qos:
        raise not_found("QOS", name, "list them with `tide admin qos list`")
    with ctl.sessions.begin() as s:
        acctrepo.delete_qos(s, name)
    ctl.reload_tree()


def create_token(ctl: Ctl, body: TokenBody) -> dict[str, Any]:
    now = time.time()
    expires = now + body.expires_in if body.expires_in else None
    with ctl.sessions.begin() as s:
        if acctrepo.get_user(s, body.user) is None:
            raise not_found(
                "user",
                body.user,
                f"create the user first: tide admin user add {body.user} --account ACCOUNT",
            )
        secret, row = tokrepo.create(s, body.user, now, body.name, expires)
        token_id = row.id
    return {
        "id": token_id,
        "user": body.user,
        "name": body.name,
        "token": secret,
        "expires": expires,
        "note": "shown once; only its SHA-256 digest is stored",
    }


def list_tokens(ctl: Ctl) -> list[dict[str, Any]]:
    with ctl.sessions() as s:
        return [
            {
                "id": t.id,
                "user": t.user,
                "name": t.name,
                "created": t.created,
                "expires": t.expires,
                "revoked": t.revoked,
            }
            for t in tokrepo.list_tokens(s)
        ]


def revoke_token(ctl: Ctl, token_id: int) -> None:
    with ctl.sessions.begin() as s:
        _keep_an_admin(s, f"revoking token {token_id}", token_id=token_id)
        if not tokrepo.revoke(s, token_id):
            raise not_found("token", token_id, "list them with `tide admin token list`")
    ctl.auth.invalidate()


def _keep_an_admin(s: Any, action: str, user: str = "", token_id: int | None = None) -> None:
    """Refuse a change that would leave no Administrator with a working token
    (nobody could then administer the cluster, or undo the change)."""
    now = time.time()
    admins = {
        name for name, level in acctrepo.admin_levels(s).items()
        if level.lower() in ("administrator", "admin") and name != user
    }  # fmt: skip
    for t in tokrepo.list_tokens(s):
        usable = not t.revoked and (t.expires is None or t.expires > now)
        if usable and t.user in admins and t.id != token_id:
            return
    raise conflict(
        f"{action} would leave no administrator with a working token",
        "",
        "create another administrator and a token for them first",
    )


def set_price(ctl: Ctl, gpu_type: str, price: float) -> dict[str, float]:
    if price < 0:
        raise bad_request("a price cannot be negative", "per_gpu_hour", "give 0 or more")
    with ctl.sessions.begin() as s:
        accounting.set_price(s, gpu_type, price)
        prices = accounting.prices(s)
    with ctl.lock:
        ctl.prices = prices
    return prices
