"""Fair-share factors with Slurm's Fair Tree algorithm (the default since 19.05).

Follows https://slurm.schedmd.com/fair_tree.html:

* Every association gets a Level Fairshare among its siblings, LF = S / U, with
  S = its raw shares / the raw shares of itself and its siblings and
  U = its raw usage / its parent's raw usage. LF is infinite when U = 0 < S and
  0 when S = 0.
* The tree is sorted by LF (highest first) at every level and visited depth
  first; users are ranked in the order they are found, starting at the number of
  user associations. A user's fair-share factor is rank / number_of_users, so
  the first user found gets 1.0.
* Ties: sibling users with the same LF share a rank; a user tied with a sibling
  account shares the rank of that account's highest ranked user (users sort
  before accounts on equal LF); sibling accounts with the same LF have their
  children merged and sorted together before descending. After a tie, ranking
  resumes at what the rank would have been without it (1224-style ranking).

Usage is keyed by user association, "account/user"; an account's usage is the
sum of the users below it (account keys in the usage dict are ignored, so
callers may keep them for display). Users not in the tree (unknown account, or
an account whose parent chain does not reach root) get no factor here; the
priority code treats a missing factor as 0.

Fairshare=parent (model.account.FAIRSHARE_PARENT, -1): as in sacctmgr, the
association has no shares of its own. For fair-share its children are treated
as children of its nearest ancestor that has shares; its usage still counts in
its ancestors' usage. A user with Fairshare=parent gets LF = infinity, so it
ranks first within its account. Other negative shares count as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from tide.model.account import FAIRSHARE_PARENT, Account, AccountTree


@dataclass(slots=True, frozen=True)
class ShareRow:
    """One line of `sshare -l`: an account (user == "") or a user association."""

    account: str
    user: str
    depth: int  # 0 for root; sshare indents the Account column by this
    raw_shares: int  # FAIRSHARE_PARENT prints as "parent"
    norm_shares: float
    raw_usage: float
    eff_usage: float
    level_fs: float | None  # None for root and Fairshare=parent accounts
    fairshare: float | None  # None for accounts


@dataclass(slots=True, eq=False)
class _Node:
    account: str
    user: str  # "" for an account
    shares: int
    depth: int
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)  # real tree, sshare order
    fs_children: list[_Node] = field(default_factory=list)  # Fair Tree siblings below
    fs_parent: _Node | None = None  # nearest ancestor that is not Fairshare=parent
    usage: float = 0.0
    norm_shares: float = 0.0
    eff_usage: float = 0.0
    level_fs: float | None = None
    factor: float | None = None
    is_user: bool = field(init=False)
    uses_parent: bool = field(init=False)  # Fairshare=parent (never for root)

    def __post_init__(self) -> None:
        self.is_user = self.user != ""
        self.uses_parent = self.shares == FAIRSHARE_PARENT and self.parent is not None

    @property
    def key(self) -> str:
        return f"{self.account}/{self.user}" if self.user else self.account


def assoc_key(account: str, user: str) -> str:
    """The usage / factor key of a user association."""
    return f"{account}/{user}"


def fair_tree_factors(accounts: AccountTree, usage: Mapping[str, float]) -> dict[str, float]:
    """ "account/user" -> Fair Tree fair-share factor in (0, 1], for every user
    association in the tree. Users outside the tree are absent (factor 0)."""
    nodes = _build(accounts, usage)
    return {n.key: n.factor for n in nodes if n.is_user and n.factor is not None}


def sshare_rows(accounts: AccountTree, usage: Mapping[str, float]) -> list[ShareRow]:
    """The association tree as `sshare -l` lists it: root first, then under each
    account its users (by name) before its sub-accounts (by name), depth first."""
    rows = []
    for n in _build(accounts, usage):
        rows.append(
            ShareRow(
                account=n.account,
                user=n.user,
                depth=n.depth,
                raw_shares=n.shares,
                norm_shares=n.norm_shares,
                raw_usage=n.usage,
                eff_usage=n.eff_usage,
                level_fs=n.level_fs,
                fairshare=n.factor if n.is_user else None,
            )
        )
    return rows


# --- building the tree --------------------------------------------------------


def _build(accounts: AccountTree, usage: Mapping[str, float]) -> list[_Node]:
    """The real tree from root, in pre-order (root first), with usage, S, U, LF
    and factors filled in."""
    root_acct = accounts.accounts.get("root") or Account("root", parent=None)
    root = _Node("root", "", root_acct.fairshare, 0)
    kids: dict[str, list[str]] = {}
    for a in accounts.accounts.values():
        if a.parent is not None and a.name != "root":
            kids.setdefault(a.parent, []).append(a.name)
    users: dict[str, dict[str, int]] = {}
    for u in accounts.users:  # first row wins for a duplicated association
        users.setdefault(u.account, {}).setdefault(u.user, u.fairshare)

    stack = [root]
    seen = {"root"}
    while stack:  # iterative, with `seen`, so a parent cycle cannot loop
        node = stack.pop()
        for name, shares in sorted(users.get(node.account, {}).items()):
            node.children.append(_Node(node.account, name, shares, node.depth + 1, node))
        for name in sorted(kids.get(node.account, [])):
            if name in seen:
                continue
            seen.add(name)
            child = _Node(name, "", accounts.accounts[name].fairshare, node.depth + 1, node)
            node.children.append(child)
            stack.append(child)

    nodes = _walk(root)
    _sum_usage(nodes, usage)
    _link_fs(nodes)
    _level_fs(nodes)
    n_users = sum(1 for n in nodes if n.is_user)
    if n_users:
        _rank(root.fs_children, n_users, [n_users, n_users], False)
    root.norm_shares, root.eff_usage = 1.0, 1.0
    return nodes


def _walk(node: _Node) -> list[_Node]:
    """Pre-order over the real tree (sshare order)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out


def _sum_usage(nodes: list[_Node], usage: Mapping[str, float]) -> None:
    for n in reversed(nodes):  # children before parents
        if n.is_user:
            n.usage = max(0.0, float(usage.get(n.key, 0.0)))
        else:
            n.usage = sum(c.usage for c in n.children)


def _link_fs(nodes: list[_Node]) -> None:
    """Hang every association under its nearest ancestor with shares; accounts
    with Fairshare=parent keep no Fair Tree children of their own."""
    for n in nodes[1:]:
        p = n.parent
        assert p is not None
        fp = p.fs_parent if p.uses_parent else p
        assert fp is not None  # root never uses its parent, so one is always found
        n.fs_parent = fp
        if not (n.uses_parent and not n.is_user):
            fp.fs_children.append(n)


def _level_fs(nodes: list[_Node]) -> None:
    for fp in nodes:
        level = sum(max(0, c.shares) for c in fp.fs_children if not c.uses_parent)
        for n in fp.fs_children:
            _set_level_fs(n, fp, level)
    for n in nodes:  # "parent" accounts sit in no fs_children list
        if n.uses_parent and not n.is_user and n.fs_parent is not None:
            _set_level_fs(n, n.fs_parent, 0)


def _set_level_fs(n: _Node, fp: _Node, level: int) -> None:
    n.eff_usage = n.usage / fp.usage if fp.usage > 0 else 0.0
    if n.uses_parent:
        # Slurm shows the shares of the association whose shares it uses.
        n.norm_shares = fp.norm_shares if fp.parent is not None else 1.0
        n.level_fs = math.inf if n.is_user else None
        return
    n.norm_shares = max(0, n.shares) / level if level > 0 else 0.0
    if n.norm_shares == 0.0:
        n.level_fs = 0.0
    elif n.eff_usage == 0.0:
        n.level_fs = math.inf
    else:
        n.level_fs = n.norm_shares / n.eff_usage


# --- the Fair Tree ranking ----------------------------------------------------


def _rank(siblings: list[_Node], n_users: int, state: list[int], account_tied: bool) -> None:
    """Visit `siblings` by LF, highest first (users before accounts on equal LF),
    ranking users as found. state = [rank, rank_if_no_ties]; `account_tied`: the
    account(s) whose children these are tied with the previous sibling, so the
    first one found here shares the previous rank."""
    order = sorted(siblings, key=lambda s: (-_lf(s), s.is_user is False))
    prev: float | None = None
    i = 0
    while i < len(order):
        node = order[i]
        lf = _lf(node)
        tied = account_tied if i == 0 else lf == prev
        if node.is_user:
            if not tied:
                state[0] = state[1]
            node.factor = state[0] / n_users
            state[1] -= 1
            i += 1
        else:
            j = i + 1  # sibling accounts with the same LF are merged
            while j < len(order) and not order[j].is_user and _lf(order[j]) == lf:
                j += 1
            merged = [c for acct in order[i:j] for c in acct.fs_children]
            _rank(merged, n_users, state, tied)
            i = j
        prev = lf


def _lf(n: _Node) -> float:
    return n.level_fs if n.level_fs is not None else 0.0
