"""A job's token (TIDE_JOB_TOKEN) belongs to one run: a requeued job's next run
gets another, and the earlier run's token can no longer notify (docs/security.md)."""

from __future__ import annotations

import pytest

from tide.server.auth import Authenticator, Principal, job_token
from tide.server.errors import ApiError
from tide.server.services.jobs import check_owner
from tide.store.models import JobRow

SECRET = b"k" * 32


def _principal(token: str) -> Principal:
    return Authenticator(None, SECRET).principal(f"Bearer {token}")


def test_each_run_has_its_own_token() -> None:
    first, second = job_token(SECRET, 7), job_token(SECRET, 7, 1)
    assert first != second
    assert _principal(first) == Principal("job:7", "job", 7, 0)
    assert _principal(second) == Principal("job:7", "job", 7, 1)
    for forged in (second.replace("r1_", "r2_"), first.replace("tidejob_7", "tidejob_8"),
                   "tidejob_7r-1_" + "0" * 32, "tidejob_x_" + "0" * 32):  # fmt: skip
        with pytest.raises(ApiError) as e:
            _principal(forged)
        assert e.value.status == 401


def test_a_token_of_an_ended_run_cannot_notify_the_next_run() -> None:
    row = JobRow(id=7, user="alice", restarts=1)
    check_owner(_principal(job_token(SECRET, 7, 1)), row, "notify")
    with pytest.raises(ApiError) as e:
        check_owner(_principal(job_token(SECRET, 7)), row, "notify")
    assert e.value.status == 403 and "run 0 of job 7" in e.value.error
    with pytest.raises(ApiError):
        check_owner(_principal(job_token(SECRET, 7, 1)), row, "cancel")
