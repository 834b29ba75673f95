"""Fair-share over time: samples of the Fair Tree in the store, bounded by
tier, read back as series per association (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from tide.model import Account, AccountTree, UserAssoc
from tide.sched.fairshare import sshare_rows
from tide.server.services.share_history import pick_tier, series
from tide.store import db
from tide.store import share_history as repo

TREE = AccountTree(
    accounts={
        "root": Account("root", parent=None),
        "physics": Account("physics", fairshare=2),
        "bio": Account("bio", fairshare=1),
    },
    users=[UserAssoc("alice", "physics"), UserAssoc("bob", "bio")],
)


def _rows(alice: float, bob: float) -> list:
    return sshare_rows(TREE, {"physics/alice": alice, "bio/bob": bob})


def test_samples_come_back_as_series_per_association(store_url: tuple[str, str | None]) -> None:
    _, Session = db.open_store(*store_url)
    with Session.begin() as s:
        assert repo.record(s, 100.0, 60, _rows(0.0, 0.0)) == 4  # root left out
        repo.record(s, 160.0, 60, _rows(3000.0, 1000.0))
        repo.record(s, 220.0, 60, _rows(3000.0, 3000.0))
        repo.record(s, 220.0, repo.HOURLY, _rows(3000.0, 3000.0))  # the other tier
    with Session() as s:
        got = series(repo.between(s, 0.0, 1000.0, 60))
        assert repo.last_time(s, 60) == 220.0 and repo.oldest(s, 60) == 100.0
    assert got["times"] == [100.0, 160.0, 220.0]
    physics = got["accounts"]["physics"]
    assert physics["raw_usage"] == [0.0, 3000.0, 3000.0]
    # usage share of the parent: 3000 of 4000, then half; shares 2 of 3 throughout
    assert physics["eff_usage"] == pytest.approx([0.0, 0.75, 0.5])
    assert physics["norm_shares"] == pytest.approx([2 / 3] * 3)
    # LF = S / U: infinite with no usage (stored as null), then 2/3 / 0.75
    assert physics["level_fs"][0] is None
    assert physics["level_fs"][1:] == pytest.approx([(2 / 3) / 0.75, (2 / 3) / 0.5])
    # Fair Tree with two users: the one whose account is further under its
    # share ranks first (factor 1), the other gets 1/2; idle, both rank 1
    assert got["users"]["physics/alice"]["fairshare"] == pytest.approx([1.0, 0.5, 1.0])
    assert got["users"]["bio/bob"]["fairshare"] == pytest.approx([1.0, 1.0, 0.5])
    assert set(got["users"]["bio/bob"]) == {"raw_usage", "eff_usage", "fairshare"}


def test_an_association_added_later_has_gaps_before(store_url: tuple[str, str | None]) -> None:
    _, Session = db.open_store(*store_url)
    small = AccountTree(
        accounts={"root": Account("root", parent=None), "physics": Account("physics")},
        users=[UserAssoc("alice", "physics")],
    )
    with Session.begin() as s:
        repo.record(s, 10.0, 5, sshare_rows(small, {}))
        repo.record(s, 15.0, 5, _rows(1.0, 1.0))
    with Session() as s:
        got = series(repo.between(s, 0.0, 100.0, 5))
    assert got["accounts"]["bio"]["raw_usage"] == [None, 1.0]
    assert got["accounts"]["physics"]["raw_usage"] == [0.0, 1.0]


def test_storage_is_bounded_per_tier(store_url: tuple[str, str | None]) -> None:
    """FINE_KEEP fine samples per association, hourly ones for 90 days, and a
    fine tier left by an earlier PriorityCalcPeriod goes at once."""
    _, Session = db.open_store(*store_url)
    fine = 10
    rows = _rows(5.0, 5.0)
    with Session.begin() as s:
        repo.record(s, 0.0, 300, rows)  # the old period's tier
        for k in range(repo.FINE_KEEP + 50):
            repo.record(s, 1000.0 + k * fine, fine, rows)
        now = 1000.0 + (repo.FINE_KEEP + 49) * fine
        repo.record(s, now - repo.HOURLY_KEEP_S - 1, repo.HOURLY, rows)
        repo.record(s, now - repo.HOURLY_KEEP_S + 1, repo.HOURLY, rows)
        repo.prune(s, now, fine)
    with Session() as s:
        kept = repo.between(s, 0.0, now, fine)
        assert len({x.time for x in kept}) == repo.FINE_KEEP
        assert min(x.time for x in kept) == now - (repo.FINE_KEEP - 1) * fine
        assert repo.between(s, 0.0, now, 300) == []
        hourly = repo.between(s, now - 2 * repo.HOURLY_KEEP_S, now, repo.HOURLY)
        assert {x.time for x in hourly} == {now - repo.HOURLY_KEEP_S + 1}


def test_fine_interval_is_the_calc_period_clamped() -> None:
    assert repo.fine_every(300) == 300
    assert repo.fine_every(0) == 1
    assert repo.fine_every(86400) == repo.HOURLY


def test_the_window_picks_the_tier_that_covers_it() -> None:
    # fine samples since t=10000 every 300 s; hourly ones since t=0
    assert pick_tier(10000.0, 300, 10000.0, 0.0) == 300
    assert pick_tier(9800.0, 300, 10000.0, 0.0) == 300  # within one interval
    assert pick_tier(5000.0, 300, 10000.0, 0.0) == repo.HOURLY
    assert pick_tier(5000.0, 300, 10000.0, None) == 300  # nothing hourly
    assert pick_tier(5000.0, 300, 10000.0, 9000.0) == 300  # a new server: both start together
    assert pick_tier(5000.0, 300, None, 0.0) == repo.HOURLY
    assert pick_tier(5000.0, 300, None, None) == 300
