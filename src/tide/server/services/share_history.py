"""Fair-share over time: the scheduling loop samples `sshare -l` every
PriorityCalcPeriod (tide.store.share_history keeps it bounded), and the
dashboard and `GET /v1/share/history` read it back as series per association.

Like `tide share`, the history is visible to every user: it is the tree that
sets everyone's priority.
"""

from __future__ import annotations

from typing import Any

from tide.sched.fairshare import sshare_rows
from tide.server.ports import Ctl
from tide.store import share_history as repo


def fine_every(ctl: Ctl) -> int:
    return repo.fine_every(ctl.config.priority_calc_period)


def sample(ctl: Ctl, now: float) -> int:
    """Record the tree now in the tiers that are due; prune what is past the
    bounds. Returns the rows written (0 when nothing was due)."""
    fine = fine_every(ctl)
    with ctl.lock:
        tree, usage = ctl.tree, dict(ctl.usage)
    rows = sshare_rows(tree, usage)
    written = 0
    with ctl.sessions.begin() as s:
        for every in sorted({fine, repo.HOURLY}):
            last = repo.last_time(s, every)
            if last is None or now - last >= every - 0.5:  # a loop tick may come a bit early
                written += repo.record(s, now, every, rows)
        if written:
            repo.prune(s, now, fine)
    return written


def history(ctl: Ctl, start: float, end: float) -> dict[str, Any]:
    """Series per association over [start, end] (see `series`), from the fine
    tier when the window starts within what it keeps, else the hourly one."""
    fine = fine_every(ctl)
    with ctl.sessions() as s:
        every = pick_tier(start, fine, repo.oldest(s, fine), repo.oldest(s, repo.HOURLY))
        samples = repo.between(s, start, end, every)
    return {"every": every, **series(samples)}


def pick_tier(start: float, fine: int, fine_oldest: float | None,
              hourly_oldest: float | None) -> int:  # fmt: skip
    """The fine tier, unless the window reaches back before its oldest sample
    (by more than one interval) and the hourly tier reaches back further (by
    more than an hour: on a new server both start together)."""
    if fine_oldest is None:
        return repo.HOURLY if hourly_oldest is not None else fine
    if start >= fine_oldest - fine:
        return fine
    if hourly_oldest is None or hourly_oldest >= fine_oldest - repo.HOURLY:
        return fine
    return repo.HOURLY


ACCOUNT_FIELDS = ("raw_usage", "eff_usage", "norm_shares", "level_fs")
USER_FIELDS = ("raw_usage", "eff_usage", "fairshare")


def series(samples: list[repo.ShareSample]) -> dict[str, Any]:
    """{"times": [t...], "accounts": {account: {field: [value per time]}},
    "users": {"account/user": {field: [...]}}}, fields as ACCOUNT_FIELDS and
    USER_FIELDS; None where the association was not in the tree at that time."""
    times = sorted({x.time for x in samples})
    slot = {t: i for i, t in enumerate(times)}
    out: dict[str, dict[str, dict[str, list[float | None]]]] = {"accounts": {}, "users": {}}
    for x in samples:
        kind, key, fields = (
            ("users", f"{x.account}/{x.user}", USER_FIELDS)
            if x.user
            else ("accounts", x.account, ACCOUNT_FIELDS)
        )
        row = out[kind].get(key)
        if row is None:
            row = out[kind][key] = {k: [None] * len(times) for k in fields}
        for k in fields:
            row[k][slot[x.time]] = getattr(x, k)
    return {"times": times, **out}
