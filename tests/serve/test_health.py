"""The status word of `tide service ls` (tide.serve.health), case by case."""

from __future__ import annotations

from tide.serve.health import ReplicaFacts, service_health

NOW = 10_000.0


def rep(rid: int, state: str, gen: int = 1, ready: float | None = None,
        ended: float | None = None, reason: str = "") -> ReplicaFacts:  # fmt: skip
    return ReplicaFacts(rid, 100 + rid, gen, state, NOW - 500 + rid, ready, ended, reason)


def test_all_ready_is_active_and_scaled_to_zero_too():
    h = service_health("Active", 2, 1, [rep(1, "Ready", ready=NOW), rep(2, "Ready", ready=NOW)],
                       NOW)  # fmt: skip
    assert h.status == "Active"
    assert service_health("Active", 0, 1, [], NOW).status == "Active"


def test_replicas_ending_before_ready_are_a_crash_loop_with_the_last_exit():
    reps = [
        rep(1, "Failed", ended=NOW - 30, reason="job FAILED, exit code 3"),
        rep(2, "Failed", ended=NOW - 10, reason="job FAILED, exit code 4"),
        rep(3, "Starting"),
    ]
    h = service_health("Active", 1, 1, reps, NOW, backoff_until=NOW + 20)
    assert h.status == "CrashLoopBackOff"
    assert "2 replicas in a row" in h.reason and "replica 2 (job 102)" in h.reason
    assert "exit code 4" in h.reason and "next replica in 20 s" in h.reason


def test_a_ready_replica_or_a_new_template_ends_the_loop():
    failed = [rep(1, "Failed", ended=NOW - 30), rep(2, "Failed", ended=NOW - 20)]
    # one of them was ready before it died: not a loop, a recent failure
    served = [*failed, rep(3, "Failed", ready=NOW - 15, ended=NOW - 5, reason="killed")]
    h = service_health("Active", 1, 1, served, NOW)
    assert h.status == "Degraded" and "replica 3" in h.reason and "killed" in h.reason
    # the fixed template (generation 2) starting: progressing, the old loop forgotten
    h = service_health("Active", 1, 2, [*failed, rep(4, "Starting", gen=2)], NOW + 190)
    assert h.status == "Progressing" and "1 starting" in h.reason


def test_unready_is_degraded_and_deleting_wins():
    reps = [rep(1, "Ready", ready=NOW), rep(2, "Unready", ready=NOW - 50)]
    h = service_health("Active", 2, 1, reps, NOW)
    assert h.status == "Degraded" and "replica 2 fails its readiness probe" in h.reason
    assert service_health("Deleting", 2, 1, reps, NOW).status == "Deleting"


def test_an_old_failure_does_not_explain_a_scale_up():
    reps = [rep(1, "Failed", ready=NOW - 900, ended=NOW - 600), rep(2, "Ready", ready=NOW),
            rep(3, "Pending")]  # fmt: skip
    h = service_health("Active", 2, 1, reps, NOW)
    assert h.status == "Progressing" and "1 of 2" in h.reason and "1 pending" in h.reason


def test_a_stuck_rollout_shows_while_the_old_replicas_serve():
    reps = [rep(1, "Ready", ready=NOW - 300), rep(2, "Failed", gen=2, ended=NOW - 20),
            rep(3, "Failed", gen=2, ended=NOW - 5, reason="job FAILED, exit code 1")]  # fmt: skip
    h = service_health("Active", 1, 2, reps, NOW)
    assert h.status == "CrashLoopBackOff" and "1 of 1 replicas ready" in h.reason
    assert service_health("Active", 0, 2, reps[1:], NOW).status == "Active"  # scaled to zero
