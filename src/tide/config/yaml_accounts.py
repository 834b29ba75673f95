"""YAML accounts / users / qos -> AccountTree."""

from __future__ import annotations

from tide.config.yaml_nodes import Fail
from tide.config.yaml_schema import AccountSpec, ClusterSpec, LimitsSpec, QosSpec, UserSpec
from tide.model import Account, AccountTree, Limits, Qos, UserAssoc
from tide.model.account import FAIRSHARE_PARENT

ADMIN_LEVELS = ("None", "Operator", "Administrator")


def build_accounts(spec: ClusterSpec, fail: Fail) -> AccountTree:
    tree = AccountTree(cluster=spec.accounts_cluster or spec.name)
    for name, a in spec.accounts.items():
        tree.accounts[name] = _account(name, a, fail)
    _check_parents(tree, fail)
    for i, u in enumerate(spec.users):
        tree.users.append(_user(i, u, tree, fail))
    if spec.qos:
        tree.qos = {} if "normal" in spec.qos else {"normal": Qos("normal")}
        for name, q in spec.qos.items():
            tree.qos[name] = _qos(name, q)
    return tree


def limits(spec: LimitsSpec) -> Limits:
    return Limits(
        grp_tres=dict(spec.grp_tres), grp_jobs=spec.grp_jobs,
        grp_submit_jobs=spec.grp_submit_jobs, max_jobs=spec.max_jobs,
        max_submit_jobs=spec.max_submit_jobs, max_tres_per_job=dict(spec.max_tres_per_job),
        max_tres_per_user=dict(spec.max_tres_per_user),
        max_tres_per_node=dict(spec.max_tres_per_node), max_wall=spec.max_wall,
        max_jobs_per_user=spec.max_jobs_per_user,
        max_submit_jobs_per_user=spec.max_submit_jobs_per_user,
    )


def _fairshare(value: int | str, path: list[str | int], fail: Fail) -> int:
    if isinstance(value, int):
        return value
    if value == "parent":
        return FAIRSHARE_PARENT
    raise fail(path, f"fairshare {value!r} is not a number", "write shares (40) or 'parent'")


def _account(name: str, a: AccountSpec, fail: Fail) -> Account:
    path: list[str | int] = ["accounts", name]
    parent = a.parent if (name != "root" or "parent" in a.model_fields_set) else None
    if name == "root" and parent is not None:
        raise fail([*path, "parent"], "root has no parent", "remove parent from root")
    return Account(name, parent=parent, fairshare=_fairshare(a.fairshare, [*path, "fairshare"],
                                                             fail),
                   limits=limits(a.limits), description=a.description,
                   organization=a.organization, qos=tuple(a.qos), default_qos=a.default_qos,
                   priority=a.priority)


def _check_parents(tree: AccountTree, fail: Fail) -> None:
    for acct in tree.accounts.values():
        if acct.parent is not None and acct.parent not in tree.accounts:
            raise fail(["accounts", acct.name, "parent"],
                       f"account {acct.name}: parent {acct.parent!r} is not defined",
                       f"add {acct.parent} under accounts or fix the parent")
        if acct.name != "root" and "root" not in tree.lineage(acct.name):
            raise fail(["accounts", acct.name, "parent"],
                       f"account {acct.name} is in a parent loop", "make the chain end at root")


def _user(i: int, u: UserSpec, tree: AccountTree, fail: Fail) -> UserAssoc:
    path: list[str | int] = ["users", i]
    if u.account not in tree.accounts:
        raise fail([*path, "account"], f"user {u.user}: account {u.account!r} is not defined",
                   "add it under accounts")
    if tree.assoc(u.user, u.account) is not None:
        raise fail(path, f"user {u.user} is listed twice for account {u.account}",
                   "keep one entry per user and account")
    if u.admin_level not in ADMIN_LEVELS:
        raise fail([*path, "admin_level"], f"admin_level {u.admin_level!r} is not valid",
                   "write None, Operator or Administrator")
    return UserAssoc(u.user, u.account, fairshare=_fairshare(u.fairshare, [*path, "fairshare"],
                                                             fail),
                     limits=limits(u.limits), qos=tuple(u.qos), default_qos=u.default_qos,
                     priority=u.priority, admin_level=u.admin_level,
                     default_account=u.default_account)


def _qos(name: str, q: QosSpec) -> Qos:
    return Qos(name, priority=q.priority, limits=limits(q.limits), preempt=tuple(q.preempt),
               preempt_mode=q.preempt_mode, preempt_exempt_time=q.preempt_exempt_time,
               grace_time=q.grace_time, usage_factor=q.usage_factor, flags=tuple(q.flags))
