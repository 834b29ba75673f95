"""Fair Tree fair-share (slurm.schedmd.com/fair_tree.html) and decayed usage,
against hand-computed tables."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model import Account, AccountTree, UserAssoc
from tide.model.account import FAIRSHARE_PARENT
from tide.sched.fairshare import ShareRow, fair_tree_factors, sshare_rows
from tide.sched.usage import GPU_SECONDS, billing, charge, charge_all, decay, decay_factor

# --- the 3-level tree of the brief ----------------------------------------------
#
# root -> eng (60), res (40); eng -> nlp (1), cv (1); every user 1 share.
# usage: nlp/alice 100, nlp/bob 300, cv/carol 200, cv/dave 200, res/erin 100, frank 0
#
# account usage: nlp 400, cv 400, eng 800, res 100, root 900
#
# level 1 (siblings under root, shares 60 + 40 = 100):
#   eng  S = 0.6  U = 800/900 = 0.8889  LF = 0.675
#   res  S = 0.4  U = 100/900 = 0.1111  LF = 3.6     -> res first
# under res (shares 1 + 1):
#   frank S = 0.5  U = 0          LF = inf  -> rank 6 -> 6/6 = 1.0
#   erin  S = 0.5  U = 100/100=1  LF = 0.5  -> rank 5 -> 5/6
# under eng: nlp S = 0.5 U = 400/800 = 0.5 LF = 1; cv the same: LF = 1 -> TIED:
#   their children are merged and sorted together:
#   alice S .5  U 100/400 = .25  LF 2
#   carol S .5  U 200/400 = .5   LF 1
#   dave  S .5  U 200/400 = .5   LF 1   (tied with carol)
#   bob   S .5  U 300/400 = .75  LF 0.6667
#   alice rank 4 -> 4/6; carol rank 3 -> 3/6; dave tied -> 3/6;
#   bob: the rank resumes where it would be without the tie: 1 -> 1/6


def three_level() -> AccountTree:
    return AccountTree(
        accounts={
            "eng": Account("eng", fairshare=60),
            "res": Account("res", fairshare=40),
            "nlp": Account("nlp", parent="eng"),
            "cv": Account("cv", parent="eng"),
        },
        users=[
            UserAssoc("alice", "nlp"),
            UserAssoc("bob", "nlp"),
            UserAssoc("carol", "cv"),
            UserAssoc("dave", "cv"),
            UserAssoc("erin", "res"),
            UserAssoc("frank", "res"),
        ],
    )


USAGE = {"nlp/alice": 100, "nlp/bob": 300, "cv/carol": 200, "cv/dave": 200, "res/erin": 100}


def test_three_level_ranking_with_merged_account_tie() -> None:
    assert fair_tree_factors(three_level(), USAGE) == pytest.approx(
        {
            "res/frank": 6 / 6,
            "res/erin": 5 / 6,
            "nlp/alice": 4 / 6,
            "cv/carol": 3 / 6,
            "cv/dave": 3 / 6,
            "nlp/bob": 1 / 6,
        }
    )


def test_three_level_sshare_rows() -> None:
    rows = sshare_rows(three_level(), USAGE)
    # sshare order: under each account its users (by name), then sub-accounts (by name)
    got = [(r.account, r.user, r.depth) for r in rows]
    assert got == [
        ("root", "", 0),
        ("eng", "", 1),
        ("cv", "", 2),
        ("cv", "carol", 3),
        ("cv", "dave", 3),
        ("nlp", "", 2),
        ("nlp", "alice", 3),
        ("nlp", "bob", 3),
        ("res", "", 1),
        ("res", "erin", 2),
        ("res", "frank", 2),
    ]
    by = {(r.account, r.user): r for r in rows}
    assert by[("root", "")] == ShareRow("root", "", 0, 1, 1.0, 900.0, 1.0, None, None)
    eng = by[("eng", "")]
    assert (eng.raw_shares, eng.norm_shares, eng.raw_usage) == (60, 0.6, 800.0)
    assert eng.eff_usage == pytest.approx(8 / 9)
    assert eng.level_fs == pytest.approx(0.675)
    assert eng.fairshare is None
    assert by[("res", "")].level_fs == pytest.approx(3.6)
    assert by[("cv", "")].level_fs == by[("nlp", "")].level_fs == 1.0
    alice = by[("nlp", "alice")]
    assert (alice.norm_shares, alice.raw_usage, alice.eff_usage) == (0.5, 100.0, 0.25)
    assert alice.level_fs == 2.0
    assert alice.fairshare == pytest.approx(4 / 6)
    assert by[("nlp", "bob")].level_fs == pytest.approx(2 / 3)
    frank = by[("res", "frank")]
    assert (frank.raw_usage, frank.eff_usage, frank.level_fs, frank.fairshare) == (
        0.0, 0.0, math.inf, 1.0,
    )


def test_user_tied_with_sibling_account_shares_its_top_rank() -> None:
    # root -> u (user, 1 share), A (account, 1 share) -> x, y
    # usage: root/u 50, A/x 50, A/y 0; root 100, A 50
    #   u: S .5 U .5 LF 1;  A: S .5 U .5 LF 1  -> tied; users sort first
    #   u: rank 3 -> 1.0
    #   A starts tied: its first user takes u's rank.
    #     y: S .5 U 0 LF inf -> tied -> rank 3 -> 1.0
    #     x: S .5 U 1 LF .5 -> rank resumes at 1 -> 1/3
    tree = AccountTree(
        accounts={"A": Account("A")},
        users=[UserAssoc("u", "root"), UserAssoc("x", "A"), UserAssoc("y", "A")],
    )
    got = fair_tree_factors(tree, {"root/u": 50, "A/x": 50})
    assert got == pytest.approx({"root/u": 1.0, "A/y": 1.0, "A/x": 1 / 3})


def test_sibling_users_with_equal_level_fs_share_a_rank() -> None:
    # root -> a, b, c (users, 1 share each); usage a 10, b 10, c 40
    #   LF: a = (1/3)/(10/60) = 2, b = 2, c = (1/3)/(40/60) = 0.5
    #   a rank 3, b tied rank 3, c rank 1
    tree = AccountTree(users=[UserAssoc(u, "root") for u in "abc"])
    got = fair_tree_factors(tree, {"root/a": 10, "root/b": 10, "root/c": 40})
    assert got == pytest.approx({"root/a": 1.0, "root/b": 1.0, "root/c": 1 / 3})


def test_no_usage_anywhere_ties_everyone_at_one() -> None:
    assert set(fair_tree_factors(three_level(), {}).values()) == {1.0}


def test_zero_shares_gives_level_fs_zero_and_ranks_last() -> None:
    # root -> a (0 shares), b (1 share); no usage: a LF 0, b LF inf
    tree = AccountTree(users=[UserAssoc("a", "root", fairshare=0), UserAssoc("b", "root")])
    rows = {r.user: r for r in sshare_rows(tree, {})}
    assert rows["a"].level_fs == 0.0 and rows["a"].norm_shares == 0.0
    assert rows["b"].level_fs == math.inf and rows["b"].norm_shares == 1.0
    assert fair_tree_factors(tree, {}) == {"root/b": 1.0, "root/a": 0.5}


def test_fairshare_parent_account_hoists_its_users() -> None:
    # root -> dept (Fairshare=parent) -> p, q; root -> other (1) -> r
    # Fair Tree sees root's children as: other, dept/p, dept/q (1 share each, S = 1/3)
    # usage p 10, q 0, r 5; root 15
    #   q: U 0 -> inf -> rank 3 -> 1.0
    #   other: U 5/15 -> LF 1 -> r rank 2 -> 2/3
    #   p: U 10/15 -> LF .5 -> rank 1 -> 1/3
    # (With dept holding 1 share instead, dept: LF .5/(10/15) = .75 < other 1.5,
    #  so r would come first.)
    tree = AccountTree(
        accounts={
            "dept": Account("dept", fairshare=FAIRSHARE_PARENT),
            "other": Account("other"),
        },
        users=[UserAssoc("p", "dept"), UserAssoc("q", "dept"), UserAssoc("r", "other")],
    )
    usage = {"dept/p": 10, "dept/q": 0, "other/r": 5}
    assert fair_tree_factors(tree, usage) == pytest.approx(
        {"dept/q": 1.0, "other/r": 2 / 3, "dept/p": 1 / 3}
    )
    rows = {(r.account, r.user): r for r in sshare_rows(tree, usage)}
    assert rows[("dept", "")].raw_shares == FAIRSHARE_PARENT
    assert rows[("dept", "")].level_fs is None
    assert rows[("dept", "p")].norm_shares == pytest.approx(1 / 3)
    assert rows[("dept", "p")].eff_usage == pytest.approx(10 / 15)  # of root's usage

    tree.accounts["dept"].fairshare = 1
    assert fair_tree_factors(tree, usage) == pytest.approx(
        {"other/r": 1.0, "dept/q": 2 / 3, "dept/p": 1 / 3}
    )


def test_fairshare_parent_user_ranks_first_in_its_account() -> None:
    # A -> a (parent, heavy usage), b (1 share, no usage): a LF inf, b LF inf -> tie
    # B -> c: root level A S .5 U 100/110 vs B S .5 U 10/110 -> B first
    tree = AccountTree(
        accounts={"A": Account("A"), "B": Account("B")},
        users=[
            UserAssoc("a", "A", fairshare=FAIRSHARE_PARENT),
            UserAssoc("b", "A"),
            UserAssoc("c", "B"),
        ],
    )
    got = fair_tree_factors(tree, {"A/a": 100, "B/c": 10})
    assert got == pytest.approx({"B/c": 1.0, "A/a": 2 / 3, "A/b": 2 / 3})
    rows = {(r.account, r.user): r for r in sshare_rows(tree, {"A/a": 100, "B/c": 10})}
    assert rows[("A", "a")].level_fs == math.inf
    assert rows[("A", "b")].norm_shares == 1.0  # a's "parent" takes no share


def test_users_outside_the_tree_get_no_factor() -> None:
    tree = three_level()
    tree.users.append(UserAssoc("ghost", "nosuch"))
    tree.accounts["orphan"] = Account("orphan", parent="missing")
    tree.users.append(UserAssoc("lost", "orphan"))
    got = fair_tree_factors(tree, {**USAGE, "nosuch/ghost": 5, "orphan/lost": 5})
    assert "nosuch/ghost" not in got and "orphan/lost" not in got
    assert len(got) == 6  # n counts only users in the tree
    assert max(got.values()) == 1.0


def test_parent_cycle_terminates() -> None:
    tree = AccountTree(
        accounts={"a": Account("a", parent="b"), "b": Account("b", parent="a")},
        users=[UserAssoc("x", "a"), UserAssoc("y", "root")],
    )
    assert fair_tree_factors(tree, {"a/x": 1}) == {"root/y": 1.0}


def test_account_keys_in_usage_are_ignored() -> None:
    assert fair_tree_factors(three_level(), {**USAGE, "eng": 1e9, "res": 1e9}) == (
        fair_tree_factors(three_level(), USAGE)
    )


# --- decayed usage --------------------------------------------------------------

WEEK = 7 * 86400


@pytest.mark.parametrize(
    ("elapsed", "half_life", "factor"),
    [
        (WEEK, WEEK, 0.5),
        (2 * WEEK, WEEK, 0.25),
        (WEEK / 2, WEEK, 2**-0.5),
        (3600, 0, 1.0),  # PriorityDecayHalfLife=0: no decay
        (0, WEEK, 1.0),
        (-60, WEEK, 1.0),  # a clock stepping back never grows usage
    ],
)
def test_decay_factor(elapsed: float, half_life: float, factor: float) -> None:
    assert decay_factor(elapsed, half_life) == pytest.approx(factor)


def test_decay_is_multiplicative_over_periods() -> None:
    usage = {"a/x": 800.0, "b/y": 80.0}
    once = decay(usage, 3 * 300, 3600)
    thrice = decay(decay(decay(usage, 300, 3600), 300, 3600), 300, 3600)
    assert once == pytest.approx(thrice)
    assert decay(usage, 3600, 3600) == {"a/x": 400.0, "b/y": 40.0}
    assert usage == {"a/x": 800.0, "b/y": 80.0}  # inputs are not modified


def test_charge_adds_and_ignores_negative_amounts() -> None:
    usage = {"a/x": 1.0}
    assert charge(usage, "a/x", 2.5) == {"a/x": 3.5}
    assert charge(usage, "b/y", 4.0) == {"a/x": 1.0, "b/y": 4.0}
    assert charge(usage, "a/x", -3.0) == {"a/x": 1.0}
    assert charge_all(usage, [("a/x", 1), ("b/y", 2), ("a/x", 3)]) == {"a/x": 5.0, "b/y": 2.0}
    assert usage == {"a/x": 1.0}


def test_billing_defaults_to_gpu_seconds_and_takes_tres_weights() -> None:
    assert GPU_SECONDS == {"gres/gpu": 1.0}
    assert billing(cpus=64, gpus=8, mem_mb=512000) == 8.0
    # TRESBillingWeights=CPU=1.0,Mem=0.25G: the doc's Job1, 1 CPU and 60 GB -> 16
    w = {"CPU": 1.0, "Mem": 0.25 / 1024}
    assert billing(1, 0, 60 * 1024, w) == pytest.approx(16.0)
    assert billing(16, 0, 60 * 1024, w) == pytest.approx(31.0)
    # PriorityFlags=MAX_TRES: the largest weighted TRES
    assert billing(1, 0, 60 * 1024, w, max_tres=True) == pytest.approx(15.0)
    assert billing(2, 4, 0, {"cpu": 0.5, "gres/gpu": 2.0}) == 9.0


# --- properties -------------------------------------------------------------------


@st.composite
def trees(draw: st.DrawFn, allow_parent: bool = True) -> tuple[AccountTree, dict[str, float]]:
    """Random account trees (accounts a0..; users u0..), with usages."""
    n_acct = draw(st.integers(0, 5))
    shares = st.integers(0, 5) | (st.just(FAIRSHARE_PARENT) if allow_parent else st.nothing())
    accounts = {}
    for i in range(n_acct):
        parent = draw(st.sampled_from(["root"] + [f"a{k}" for k in range(i)]))
        accounts[f"a{i}"] = Account(f"a{i}", parent=parent, fairshare=draw(shares))
    names = ["root", *accounts]
    users = [
        UserAssoc(f"u{i}", draw(st.sampled_from(names)), fairshare=draw(shares))
        for i in range(draw(st.integers(1, 8)))
    ]
    usage_values = st.sampled_from([0.0, 1.0, 2.0, 5.0, 10.0, 100.0]) | st.floats(0, 1e6)
    usage = {f"{u.account}/{u.user}": draw(usage_values) for u in users}
    return AccountTree(accounts=accounts, users=users), usage


@settings(max_examples=300, deadline=None)
@given(trees())
def test_factors_lie_in_zero_one_and_the_top_user_gets_one(
    case: tuple[AccountTree, dict[str, float]],
) -> None:
    tree, usage = case
    got = fair_tree_factors(tree, usage)
    assert len(got) == len(tree.users)
    assert all(0.0 < f <= 1.0 for f in got.values())
    assert max(got.values()) == 1.0


@settings(max_examples=300, deadline=None)
@given(trees(), st.data())
def test_more_usage_never_raises_a_users_factor(
    case: tuple[AccountTree, dict[str, float]], data: st.DataObject
) -> None:
    tree, usage = case
    key = data.draw(st.sampled_from(sorted(usage)))
    extra = data.draw(st.sampled_from([1.0, 10.0, 1000.0]) | st.floats(0.001, 1e6))
    before = fair_tree_factors(tree, usage)[key]
    after = fair_tree_factors(tree, {**usage, key: usage[key] + extra})[key]
    assert after <= before


@settings(max_examples=300, deadline=None)
@given(trees(allow_parent=False))
def test_a_higher_level_fs_account_ranks_all_its_users_higher(
    case: tuple[AccountTree, dict[str, float]],
) -> None:
    """fair_tree.html: if account A has a higher Level FS than its sibling B,
    every user below A has a higher FairShare than every user below B."""
    tree, usage = case
    rows = sshare_rows(tree, usage)
    factors = fair_tree_factors(tree, usage)
    below: dict[str, list[float]] = {}
    for r in rows:
        if r.user:
            for acct in tree.lineage(r.account):
                below.setdefault(acct, []).append(factors[f"{r.account}/{r.user}"])
    lf = {r.account: r.level_fs or 0.0 for r in rows if not r.user and r.account != "root"}
    accts = [a for a in tree.accounts.values() if a.name != "root"]
    for a in accts:
        for b in accts:
            siblings = a.parent == b.parent and below.get(a.name) and below.get(b.name)
            if siblings and lf[a.name] > lf[b.name]:
                assert min(below[a.name]) > max(below[b.name])
