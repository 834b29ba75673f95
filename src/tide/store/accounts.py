"""Accounts, users, associations and QOS (what sacctmgr manages).

The scheduler reads them as one `AccountTree`; admins change them row by row.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from tide.model import Account, AccountTree, Qos, UserAssoc
from tide.store.codec import csv, limits_from_json, limits_json, uncsv
from tide.store.models import AccountRow, AssocRow, MetaRow, QosRow, UserRow


def load_tree(session: Session, cluster: str = "tide") -> AccountTree:
    tree = AccountTree(cluster=cluster, accounts={}, users=[], qos={})
    for a in session.scalars(select(AccountRow)):
        tree.accounts[a.name] = Account(
            name=a.name,
            parent=a.parent,
            fairshare=a.fairshare,
            priority=a.priority,
            limits=limits_from_json(a.limits),
            description=a.description,
            organization=a.organization,
            qos=uncsv(a.qos),
            default_qos=a.default_qos,
        )
    levels = {u.name: u for u in session.scalars(select(UserRow))}
    for s in session.scalars(select(AssocRow).order_by(AssocRow.id)):
        user = levels.get(s.user)
        tree.users.append(
            UserAssoc(
                user=s.user,
                account=s.account,
                fairshare=s.fairshare,
                priority=s.priority,
                limits=limits_from_json(s.limits),
                qos=uncsv(s.qos),
                default_qos=s.default_qos,
                admin_level=user.admin_level if user else "None",
                default_account=bool(user and user.default_account == s.account),
            )
        )
    for q in session.scalars(select(QosRow)):
        tree.qos[q.name] = qos_from_row(q)
    tree.accounts.setdefault("root", Account("root", parent=None))
    tree.qos.setdefault("normal", Qos("normal"))
    return tree


def qos_from_row(q: QosRow) -> Qos:
    return Qos(
        name=q.name,
        priority=q.priority,
        limits=limits_from_json(q.limits),
        preempt=uncsv(q.preempt),
        preempt_mode=q.preempt_mode,
        grace_time=q.grace_time,
        preempt_exempt_time=q.preempt_exempt_time,
        usage_factor=q.usage_factor,
        flags=uncsv(q.flags),
    )


def is_seeded(session: Session) -> bool:
    return session.get(MetaRow, "accounts_seeded") is not None


def seed_tree(session: Session, tree: AccountTree) -> None:
    """First start: copy the cluster file's accounts into the store (once)."""
    for a in tree.accounts.values():
        put_account(session, a)
    for u in tree.users:
        put_user(session, u.user, u.admin_level, u.account if u.default_account else None)
        put_assoc(session, u)
    for q in tree.qos.values():
        put_qos(session, q)
    if "root" not in tree.accounts:
        put_account(session, Account("root", parent=None))
    if "normal" not in tree.qos:
        put_qos(session, Qos("normal"))
    session.merge(MetaRow(key="accounts_seeded", value="1"))


def put_account(session: Session, a: Account) -> None:
    session.merge(
        AccountRow(
            name=a.name,
            parent=a.parent,
            fairshare=a.fairshare,
            priority=a.priority,
            limits=limits_json(a.limits),
            description=a.description,
            organization=a.organization,
            qos=csv(a.qos),
            default_qos=a.default_qos,
        )
    )


def delete_account(session: Session, name: str) -> None:
    session.execute(delete(AssocRow).where(AssocRow.account == name))
    session.execute(delete(AccountRow).where(AccountRow.name == name))


def get_user(session: Session, name: str) -> UserRow | None:
    return session.get(UserRow, name)


def list_users(session: Session) -> list[UserRow]:
    """Every user, by name."""
    return list(session.scalars(select(UserRow).order_by(UserRow.name)))


def admin_levels(session: Session) -> dict[str, str]:
    """user -> AdminLevel (None, Operator, Administrator)."""
    rows = session.execute(select(UserRow.name, UserRow.admin_level))
    return {name: level for name, level in rows}


def put_user(
    session: Session, name: str, admin_level: str | None = None, default_account: str | None = None
) -> UserRow:
    row = session.get(UserRow, name)
    if row is None:
        row = UserRow(name=name, admin_level=admin_level or "None", default_account="")
        session.add(row)
    if admin_level is not None:
        row.admin_level = admin_level
    if default_account is not None:
        row.default_account = default_account
    if not row.default_account:
        first = session.scalar(select(AssocRow.account).where(AssocRow.user == name).limit(1))
        row.default_account = default_account or first or ""
    return row


def delete_user(session: Session, name: str) -> None:
    session.execute(delete(AssocRow).where(AssocRow.user == name))
    session.execute(delete(UserRow).where(UserRow.name == name))


def put_assoc(session: Session, u: UserAssoc) -> None:
    row = session.scalar(
        select(AssocRow).where(AssocRow.user == u.user, AssocRow.account == u.account)
    )
    if row is None:
        row = AssocRow(user=u.user, account=u.account)
        session.add(row)
    row.fairshare = u.fairshare
    row.priority = u.priority
    row.limits = limits_json(u.limits)
    row.qos = csv(u.qos)
    row.default_qos = u.default_qos
    user = session.get(UserRow, u.user)
    if user is None:
        session.add(UserRow(name=u.user, admin_level=u.admin_level, default_account=u.account))
    elif not user.default_account or u.default_account:
        user.default_account = u.account


def delete_assoc(session: Session, user: str, account: str) -> int:
    res = session.execute(
        delete(AssocRow).where(AssocRow.user == user, AssocRow.account == account)
    )
    return int(res.rowcount)  # type: ignore[attr-defined]


def put_qos(session: Session, q: Qos) -> None:
    session.merge(
        QosRow(
            name=q.name,
            priority=q.priority,
            limits=limits_json(q.limits),
            preempt=csv(q.preempt),
            preempt_mode=q.preempt_mode,
            grace_time=q.grace_time,
            preempt_exempt_time=q.preempt_exempt_time,
            usage_factor=q.usage_factor,
            flags=csv(q.flags),
        )
    )


def delete_qos(session: Session, name: str) -> None:
    session.execute(delete(QosRow).where(QosRow.name == name))
