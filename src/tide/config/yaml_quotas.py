"""The `quotas:` section of tide's cluster YAML <-> tide.model.quota.QuotaTree.

Kueue's words (ClusterQueue nominalQuota, borrowingLimit, lendingLimit,
cohorts, preemption policies), with an account playing a ClusterQueue
(docs/preemption.md, "Quotas"). GPU amounts are a number (any GPU type)
or a map per GPU type:

    quotas:
      preempt_mode: REQUEUE          # how reclaimed jobs go
      cohorts:
        lab: {}                      # a root cohort; `parent:` makes a tree
      accounts:
        physics: {cohort: lab, nominal: {a100: 8}, borrowing_limit: {a100: 8}}
        bio: {cohort: lab, nominal: 8, lending_limit: 4}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from tide.config.errors import ConfigError
from tide.model import AccountTree
from tide.model.quota import ANY, LOWER_PRIORITY, NEVER, AccountQuota, Cohort, QuotaTree

Fail = Callable[[Sequence[str | int], str, str], ConfigError]


def _gpus(value: Any) -> dict[str, int]:
    """8 -> {"": 8}; {a100: 8, h100: 4} -> the same, checked."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = {"": value}
    if not isinstance(value, dict):
        raise ValueError("expected GPUs: a number (any type) or a map such as {a100: 8}")
    out = {}
    for k, v in value.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            kind = f" of type {k}" if k not in (None, "", "any", "*") else ""
            raise ValueError(f"{v!r} GPUs{kind} is not a whole number of GPUs >= 0; "
                             "write a count such as 4 or {a100: 4}")  # fmt: skip
        out["" if k in (None, "any", "*") else str(k)] = v
    return out


Gpus = Annotated[dict[str, int], BeforeValidator(_gpus)]


class Spec(BaseModel):  # as yaml_schema.Spec (which imports this module)
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class CohortSpec(Spec):
    parent: str = ""
    nominal: Gpus = {}
    borrowing_limit: Gpus = {}
    lending_limit: Gpus = {}


class AccountQuotaSpec(Spec):
    cohort: str = ""
    nominal: Gpus = {}
    borrowing_limit: Gpus = {}
    lending_limit: Gpus = {}
    weight: float | None = None
    reclaim_within_cohort: str = ANY
    borrow_within_cohort: str = NEVER
    within_account: str = NEVER


class QuotasSpec(Spec):
    preempt_mode: str = "REQUEUE"
    fair_sharing: bool = True
    cohorts: dict[str, CohortSpec] = {}
    accounts: dict[str, AccountQuotaSpec] = {}


_POLICIES = {
    "reclaim_within_cohort": (NEVER, LOWER_PRIORITY, ANY),
    "borrow_within_cohort": (NEVER, LOWER_PRIORITY),
    "within_account": (NEVER, LOWER_PRIORITY),
}


def build_quotas(spec: QuotasSpec | None, accounts: AccountTree, fail: Fail) -> QuotaTree | None:
    """The quota tree, checked: known accounts and cohorts, Kueue's policy words."""
    if spec is None:
        return None
    mode = spec.preempt_mode.upper()
    if mode not in ("REQUEUE", "CANCEL"):
        raise fail(["quotas", "preempt_mode"], f"preempt_mode {spec.preempt_mode!r} is not "
                   "a reclaim mode", "write REQUEUE or CANCEL")  # fmt: skip
    tree = QuotaTree(preempt_mode=mode, fair_sharing=spec.fair_sharing)
    for name, c in spec.cohorts.items():
        if c.parent and c.parent not in spec.cohorts:
            raise fail(["quotas", "cohorts", name, "parent"], f"cohort {name}: parent "
                       f"{c.parent!r} is not a cohort", "define it under quotas.cohorts")
        tree.cohorts[name] = Cohort(name, c.parent, dict(c.nominal), dict(c.borrowing_limit),
                                    dict(c.lending_limit))  # fmt: skip
    _check_cycles(tree, fail)
    for name, a in spec.accounts.items():
        path: list[str | int] = ["quotas", "accounts", name]
        if name not in accounts.accounts:
            raise fail(path, f"quota for account {name!r}, which is not defined",
                       "add it under accounts: or fix the name")  # fmt: skip
        if a.cohort and a.cohort not in tree.cohorts:
            raise fail([*path, "cohort"], f"account {name}: cohort {a.cohort!r} is not "
                       "defined", "define it under quotas.cohorts")  # fmt: skip
        for key, allowed in _POLICIES.items():
            if getattr(a, key) not in allowed:
                raise fail([*path, key], f"{key}: {getattr(a, key)!r} is not a policy",
                           f"write one of {', '.join(allowed)}")  # fmt: skip
        tree.accounts[name] = AccountQuota(
            name, dict(a.nominal), a.cohort, dict(a.borrowing_limit), dict(a.lending_limit),
            a.weight, a.reclaim_within_cohort, a.borrow_within_cohort,
            a.within_account)  # fmt: skip
    return tree


def _check_cycles(tree: QuotaTree, fail: Fail) -> None:
    for name in tree.cohorts:
        seen, cur = {name}, tree.cohorts[name].parent
        while cur:
            if cur in seen:
                raise fail(["quotas", "cohorts", name, "parent"], f"cohort {name} is its "
                           "own ancestor", "make the cohort parents a tree")  # fmt: skip
            seen.add(cur)
            cur = tree.cohorts[cur].parent


def _gpus_out(g: dict[str, int]) -> int | dict[str, int]:
    return g[""] if set(g) == {""} else dict(g)


def save_quotas(tree: QuotaTree | None) -> dict[str, Any]:
    """The `quotas:` section (empty when there is no tree); defaults left out."""
    if tree is None:
        return {}
    d: dict[str, Any] = {}
    if tree.preempt_mode != "REQUEUE":
        d["preempt_mode"] = tree.preempt_mode
    if not tree.fair_sharing:
        d["fair_sharing"] = False
    d["cohorts"] = {n: _limits({"parent": c.parent} if c.parent else {}, c)
                    for n, c in tree.cohorts.items()}  # fmt: skip
    accounts = {}
    for n, a in tree.accounts.items():
        e = _limits({"cohort": a.cohort} if a.cohort else {}, a)
        if a.weight is not None:
            e["weight"] = a.weight
        for key, default in (("reclaim_within_cohort", ANY), ("borrow_within_cohort", NEVER),
                             ("within_account", NEVER)):  # fmt: skip
            if getattr(a, key) != default:
                e[key] = getattr(a, key)
        accounts[n] = e
    d["accounts"] = accounts
    return {"quotas": d}


def _limits(d: dict[str, Any], q: Cohort | AccountQuota) -> dict[str, Any]:
    for key in ("nominal", "borrowing_limit", "lending_limit"):
        if getattr(q, key):
            d[key] = _gpus_out(getattr(q, key))
    return d
