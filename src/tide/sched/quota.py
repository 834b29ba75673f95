"""Quota admission in the Kueue sense: nominal quota, cohorts, borrowing and
lending limits, fair sharing of what is borrowed (docs/preemption.md).

Per GPU type r, every node x of the quota tree (an account, or a cohort) has:
- SQ(x), its subtree quota: an account's nominal; a cohort's own nominal plus
  what each child may lend it, lend(y) = min(SQ(y), lendingLimit(y));
- G(x) = SQ(x) - lend(x), the part nobody else may borrow (0 without a
  lending limit);
- U(x), its usage: an account's GPUs in use; a cohort's, the sum over its
  children of their usage above their guaranteed part, max(0, U(y) - G(y)).
The state is admissible when every node stays within SQ(x) + borrowingLimit(x)
(no limit = unbounded) and every root within SQ(root): an account uses its
nominal quota first, then borrows unused quota its cohort may lend. This is
Kueue's ClusterQueue/Cohort arithmetic (concepts "Cluster Queue" and
"Cohort"), written from its documentation.

A job counts against the nearest account of its lineage that has a quota,
in its --gres GPU type, else the "" (any type) quota, else the cluster's only
GPU type; jobs of accounts without quota, jobs without GPUs and jobs of a
type no quota names are not quota-managed.

Fair sharing: an account's share is max over types of its borrowed GPUs
(usage above nominal) / the GPUs of its root cohort, divided by its weight
(AccountQuota.weight, else its Fairshare shares). In the main pass jobs that
would borrow wait; after it they borrow lowest share first (the share their
job would give them: tide.sched.passes.borrow_pass), which is how Kueue's
fair sharing orders admission.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tide.model import AccountTree, Job
from tide.model.account import FAIRSHARE_PARENT
from tide.model.quota import AccountQuota, QuotaTree
from tide.sched.types import Reason, Running

Node = tuple[str, str]  # ("a", account) or ("c", cohort)


@dataclass(slots=True)
class QuotaLedger:
    """Quota usage for one cycle; grows as the cycle starts jobs."""

    tree: QuotaTree
    accounts: AccountTree
    gpu_types: tuple[str, ...] = ()  # the cluster's GPU types
    used: dict[str, dict[str, int]] = field(default_factory=dict)  # account -> type -> GPUs
    borrowing_open: bool = True  # False while the main pass defers borrowers
    deferred: list[int] = field(default_factory=list)
    _owner: dict[str, str | None] = field(default_factory=dict)
    _kids: dict[Node, list[Node]] = field(default_factory=dict)
    _sq: dict[tuple[Node, str], int] = field(default_factory=dict)
    _names: set[str] = field(default_factory=set)  # GPU types the tree names

    def __post_init__(self) -> None:
        self._names = self.tree.resources()
        for name, q in self.tree.accounts.items():
            if q.cohort in self.tree.cohorts:
                self._kids.setdefault(("c", q.cohort), []).append(("a", name))
        for name, c in self.tree.cohorts.items():
            if c.parent in self.tree.cohorts and c.parent != name:
                self._kids.setdefault(("c", c.parent), []).append(("c", name))

    def copy(self) -> QuotaLedger:
        out = QuotaLedger(self.tree, self.accounts, self.gpu_types, borrowing_open=True)
        out.used = {a: dict(u) for a, u in self.used.items()}
        out._owner, out._kids, out._sq = self._owner, self._kids, self._sq
        return out

    # -- what a job counts against ---------------------------------------------

    def owner(self, account: str) -> str | None:
        """The nearest account of the lineage with a quota (None: not managed)."""
        if account not in self._owner:
            lineage = self.accounts.lineage(account) or [account]
            self._owner[account] = next((a for a in lineage if a in self.tree.accounts), None)
        return self._owner[account]

    def key(self, job: Job) -> tuple[str, str] | None:
        """(quota account, GPU type) the job counts against, or None."""
        owner = self.owner(job.account)
        if owner is None:
            return None
        names = self._names
        want = job.request.gpu_type
        if want in names:
            return owner, want
        if "" in names:
            return owner, ""
        types = {t for t in self.gpu_types if t}
        if not want and len(types) == 1 and (only := next(iter(types))) in names:
            return owner, only
        return None

    def add(self, job: Job, gpus: int, sign: int = 1) -> None:
        key = self.key(job) if gpus else None
        if key is not None:
            row = self.used.setdefault(key[0], {})
            row[key[1]] = row.get(key[1], 0) + sign * gpus

    # -- admission ---------------------------------------------------------------

    def check(self, job: Job, gpus: int) -> Reason | None:
        """None when the job's quota admits it now, else the reason it waits.
        While borrowing is closed, a job that would borrow is deferred."""
        key = self.key(job) if gpus else None
        if key is None:
            return None
        reason = self.admits(key[0], key[1], gpus)
        deferring = not self.borrowing_open and self.tree.fair_sharing
        if reason is None and deferring and self.borrows(key[0], key[1], gpus):
            self.deferred.append(job.id)
            return Reason.COHORT_QUOTA
        return reason

    def borrows(self, account: str, r: str, gpus: int) -> bool:
        q = self.tree.accounts[account]
        return self.used.get(account, {}).get(r, 0) + gpus > q.nominal.get(r, 0)

    def admits(self, account: str, r: str, gpus: int) -> Reason | None:
        q = self.tree.accounts[account]
        u = self.used.get(account, {}).get(r, 0) + gpus
        node: Node = ("a", account)
        if q.cohort not in self.tree.cohorts:
            return None if u <= q.nominal.get(r, 0) else Reason.COHORT_QUOTA
        limit = q.borrowing_limit.get(r)
        if limit is not None and u > q.nominal.get(r, 0) + limit:
            return Reason.QUOTA_BORROWING_LIMIT
        while True:
            parent = self._parent(node)
            if parent is None:
                return None if u <= self.sq(node, r) else Reason.COHORT_QUOTA
            if node[0] == "c":
                b = self.tree.cohorts[node[1]].borrowing_limit.get(r)
                if b is not None and u > self.sq(node, r) + b:
                    return Reason.COHORT_QUOTA
            mine = max(0, u - self.guaranteed(node, r))
            u = mine + sum(self.overflow(k, r) for k in self._kids.get(parent, []) if k != node)
            node = parent

    # -- the tree's arithmetic -----------------------------------------------------

    def _parent(self, node: Node) -> Node | None:
        if node[0] == "a":
            c = self.tree.accounts[node[1]].cohort
        else:
            c = self.tree.cohorts[node[1]].parent
        return ("c", c) if c in self.tree.cohorts and c != node[1] else None

    def _spec(self, node: Node) -> AccountQuota | object:
        return self.tree.accounts[node[1]] if node[0] == "a" else self.tree.cohorts[node[1]]

    def sq(self, node: Node, r: str) -> int:
        """Subtree quota (static: depends on the tree only)."""
        if (node, r) not in self._sq:
            spec = self._spec(node)
            total = spec.nominal.get(r, 0)  # type: ignore[attr-defined]
            if node[0] == "c":
                total += sum(self.lend(k, r) for k in self._kids.get(node, []))
            self._sq[(node, r)] = total
        return self._sq[(node, r)]

    def lend(self, node: Node, r: str) -> int:
        limit = self._spec(node).lending_limit.get(r)  # type: ignore[attr-defined]
        sq = self.sq(node, r)
        return sq if limit is None else min(sq, limit)

    def guaranteed(self, node: Node, r: str) -> int:
        return self.sq(node, r) - self.lend(node, r)

    def usage(self, node: Node, r: str) -> int:
        if node[0] == "a":
            return self.used.get(node[1], {}).get(r, 0)
        return sum(self.overflow(k, r) for k in self._kids.get(node, []))

    def overflow(self, node: Node, r: str) -> int:
        return max(0, self.usage(node, r) - self.guaranteed(node, r))

    def root(self, account: str, kind: str = "a") -> Node:
        """The root of the tree an account (or, kind "c", a cohort) is in."""
        node: Node = (kind, account)
        while (p := self._parent(node)) is not None:
            node = p
        return node

    # -- fair sharing ----------------------------------------------------------------

    def share(self, account: str, extra: dict[str, int] | None = None) -> float:
        """Weighted dominant share of borrowed GPUs (with `extra` GPUs added)."""
        q = self.tree.accounts[account]
        extra = extra or {}
        root = self.root(account)
        worst = 0.0
        for r in set(q.nominal) | set(extra) | set(self.used.get(account, {})):
            borrowed = self.used.get(account, {}).get(r, 0) + extra.get(r, 0) - q.nominal.get(r, 0)
            if borrowed <= 0:
                continue
            pool = self.sq(root, r)
            worst = max(worst, borrowed / pool if pool > 0 else math.inf)
        weight = self._weight(q)
        if worst == 0.0:
            return 0.0
        return worst / weight if weight > 0 else math.inf

    def _weight(self, q: AccountQuota) -> float:
        if q.weight is not None:
            return q.weight
        acct = self.accounts.accounts.get(q.account)
        shares = acct.fairshare if acct is not None else 1
        return 1.0 if shares == FAIRSHARE_PARENT else float(shares)


def ledger_for(tree: QuotaTree | None, accounts: AccountTree, gpu_types: Sequence[str]) -> (
    QuotaLedger | None
):  # fmt: skip
    if tree is None:
        return None
    return QuotaLedger(tree, accounts, tuple(sorted(set(gpu_types))))


def share_with(ledger: QuotaLedger, job: Job) -> float:
    """The weighted share the job's account would have with the job running."""
    key = ledger.key(job)
    if key is None:
        return 0.0
    gpus = job.request.total_gpus(job.request.node_range()[0])
    return ledger.share(key[0], {key[1]: gpus})


# -- the `tide share` view ------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ShareRow:
    """One account (or cohort) and GPU type: what `tide share` prints."""

    name: str
    kind: str  # "account" | "cohort"
    cohort: str  # its cohort (an account's) or parent (a cohort's); "" = none
    gpu_type: str  # "" = any type
    nominal: int
    in_use: int  # account: its jobs' GPUs; cohort: its members' use above their guarantee
    borrowed: int  # GPUs in use above nominal
    lent: int  # of its unused nominal quota, what other accounts use now
    borrowing_limit: int | None
    lending_limit: int | None


def share_rows(tree: QuotaTree, running: Iterable[Running], accounts: AccountTree,
               gpu_types: Sequence[str] = ()) -> list[ShareRow]:  # fmt: skip
    """Nominal, in use, borrowed and lent per account and cohort and GPU type.
    What is borrowed in a cohort tree is shown as lent by the members with
    unused lendable quota, in proportion to it (largest remainder)."""
    ledger = QuotaLedger(tree, accounts, tuple(sorted(set(gpu_types))))
    for r in running:
        ledger.add(r.job, r.alloc.gpu_count)
    types = sorted(tree.resources())
    lent = _lent(ledger, types)
    rows = []
    for name, q in sorted(tree.accounts.items()):
        for t in types:
            use = ledger.used.get(name, {}).get(t, 0)
            nominal = q.nominal.get(t, 0)
            rows.append(ShareRow(name, "account", q.cohort, t, nominal, use,
                                 max(0, use - nominal), lent.get((("a", name), t), 0),
                                 q.borrowing_limit.get(t), q.lending_limit.get(t)))  # fmt: skip
    for name, c in sorted(tree.cohorts.items()):
        for t in types:
            node: Node = ("c", name)
            use = ledger.usage(node, t)
            nominal = c.nominal.get(t, 0)
            rows.append(ShareRow(name, "cohort", c.parent, t, nominal, use,
                                 max(0, use - ledger.sq(node, t)), lent.get((node, t), 0),
                                 c.borrowing_limit.get(t), c.lending_limit.get(t)))  # fmt: skip
    return rows


def _lent(ledger: QuotaLedger, types: list[str]) -> dict[tuple[Node, str], int]:
    out: dict[tuple[Node, str], int] = {}
    tree = ledger.tree
    roots: dict[Node, list[Node]] = {}
    for name in tree.accounts:
        roots.setdefault(ledger.root(name), []).append(("a", name))
    for name in tree.cohorts:
        roots.setdefault(ledger.root(name, "c"), []).append(("c", name))
    for members in roots.values():
        for t in types:
            borrowed = sum(
                max(0, ledger.usage(m, t) - tree.accounts[m[1]].nominal.get(t, 0))
                for m in members
                if m[0] == "a"
            )
            spare = {m: _spare(ledger, m, t) for m in members}
            for m, k in _apportion(spare, borrowed).items():
                out[(m, t)] = k
    return out


def _spare(ledger: QuotaLedger, node: Node, t: str) -> int:
    """Unused quota of its own that the node may lend."""
    spec = ledger._spec(node)
    own = spec.nominal.get(t, 0)  # type: ignore[attr-defined]
    used = ledger.used.get(node[1], {}).get(t, 0) if node[0] == "a" else 0
    unused = max(0, own - used)
    limit = spec.lending_limit.get(t)  # type: ignore[attr-defined]
    return unused if limit is None else min(unused, limit)


def _apportion(weights: dict[Node, int], total: int) -> dict[Node, int]:
    """Split `total` in proportion to weights, each at most its weight (largest remainder)."""
    cap = sum(weights.values())
    total = min(total, cap)
    if total <= 0 or cap <= 0:
        return {}
    exact = {k: total * w / cap for k, w in weights.items()}
    out = {k: math.floor(v) for k, v in exact.items()}
    short = total - sum(out.values())
    for k in sorted(weights, key=lambda k: (-(exact[k] - out[k]), k))[:short]:
        out[k] += 1
    return {k: v for k, v in out.items() if v}
