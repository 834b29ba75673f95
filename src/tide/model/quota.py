"""Shared GPU quotas in the Kueue sense: nominal quota per account, cohorts
that lend unused quota and take it back (docs/preemption.md).

Kueue's words (its "Cluster Queue" and "Cohort" concept pages): an account
here plays the part of a ClusterQueue. Its `nominal` quota is what it is
guaranteed; inside a cohort, quota it does not use may be borrowed by the
other members, up to each borrower's `borrowing_limit` and each lender's
`lending_limit`. Cohorts form a tree: a cohort may have quota of its own and
a parent cohort it borrows from and lends to, with the same two limits.
Quotas are GPUs per GPU type; the type "" counts GPUs of any type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Kueue's preemption policy words (ClusterQueue .spec.preemption)
NEVER, LOWER_PRIORITY, ANY = "Never", "LowerPriority", "Any"

Gpus = dict[str, int]  # GPU type ("" = any type) -> GPUs


@dataclass(slots=True)
class AccountQuota:
    """One account's quota (a Kueue ClusterQueue). Jobs of sub-accounts that
    have no quota of their own count against their nearest ancestor's."""

    account: str
    nominal: Gpus = field(default_factory=dict)
    cohort: str = ""  # "" = in no cohort: it neither borrows nor lends
    # a type missing from a limit = no limit (Kueue: the field unset)
    borrowing_limit: Gpus = field(default_factory=dict)
    lending_limit: Gpus = field(default_factory=dict)
    weight: float | None = None  # fair-sharing weight; None = the account's Fairshare
    # preemption when one of its jobs needs quota (Kueue's policy words):
    # reclaim_within_cohort: take back lent nominal quota from borrowers
    # (Never | LowerPriority | Any; tide's default Any, Kueue's Never)
    reclaim_within_cohort: str = ANY
    # borrow_within_cohort: preempt lower-priority borrowers to borrow (Never | LowerPriority)
    borrow_within_cohort: str = NEVER
    # within_account (Kueue's withinClusterQueue): its own lower-priority jobs
    within_account: str = NEVER


@dataclass(slots=True)
class Cohort:
    """A node of the cohort tree: members are the accounts (and cohorts) that
    name it; it may hold quota of its own and borrow from its parent."""

    name: str
    parent: str = ""  # "" = a root cohort
    nominal: Gpus = field(default_factory=dict)
    borrowing_limit: Gpus = field(default_factory=dict)
    lending_limit: Gpus = field(default_factory=dict)


@dataclass(slots=True)
class QuotaTree:
    """Every account quota and cohort of a cluster."""

    accounts: dict[str, AccountQuota] = field(default_factory=dict)
    cohorts: dict[str, Cohort] = field(default_factory=dict)
    preempt_mode: str = "REQUEUE"  # how reclaimed jobs go: REQUEUE or CANCEL
    fair_sharing: bool = True  # borrowers go in order of weighted share

    def resources(self) -> set[str]:
        """Every GPU type some quota names."""
        out: set[str] = set()
        for q in self.accounts.values():
            out.update(q.nominal, q.borrowing_limit, q.lending_limit)
        for c in self.cohorts.values():
            out.update(c.nominal, c.borrowing_limit, c.lending_limit)
        return out

    def root_of(self, account: str) -> str:
        """The root cohort above an account ("" when it is in none)."""
        q = self.accounts.get(account)
        cur = q.cohort if q is not None else ""
        seen: set[str] = set()
        while cur and cur in self.cohorts and self.cohorts[cur].parent and cur not in seen:
            seen.add(cur)
            cur = self.cohorts[cur].parent
        return cur
