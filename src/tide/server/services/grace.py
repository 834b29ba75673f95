"""The end of a REQUEUE or CANCEL victim's grace: the preemption's kill, as the
job's record keeps it (docs/preemption.md, "The live server").

The loop's tick kills a victim once its kill time has come (services.preemption).
A victim whose end the controller learns of only after that time ended as that
kill all the same: its grace was over. No controller may have run at the kill
time (stopped during the grace, back after it), or the end was collected before
the tick came to it. Both paths record the kill here, from the job's row, so
the history names the preemptor ("preempted by job N after G s of grace"), the
work lost since the last checkpoint is counted once, and the victim goes on to
its next phase (parked, or killed), whatever the order in which the grace and
the end were seen. A victim that ended before its kill time left within its
grace (services.preemption._left_in_grace): it was not killed.
"""

from __future__ import annotations

from typing import Any

from tide.server.services.recovery import PREEMPT_ACTOR
from tide.store import jobs as jobrepo
from tide.store.models import JobRow

GRACE, PARKED, KILLED = "grace", "parked", "killed"  # preempt_phase values


def over_by(row: JobRow, end: float) -> bool:
    """A running victim in its grace whose kill time had come by `end`."""
    kill_at = row.preempt_kill_at
    return (
        row.state == "RUNNING"
        and row.preempt_phase == GRACE
        and (kill_at is not None and end >= kill_at)
    )


def lost_at(row: JobRow, when: float) -> float:
    """GPUs x seconds since the run's last checkpoint (else its start) at `when`."""
    start = row.start_time or when
    last = max(start, row.last_checkpoint or start)
    return float(row.gpus_alloc * max(0.0, when - last))


def record_kill(session: Any, row: JobRow, when: float) -> bool:
    """The running victim `row` killed at `when`: COMPLETING, phase parked (REQUEUE)
    or killed (CANCEL), its lost work. False, changing nothing, when the row is no
    longer a running victim in its grace (the tick or an end got there first)."""
    requeue = row.preempt_mode == "REQUEUE"
    lost = lost_at(row, when)
    values: dict[str, Any] = {
        "preempt_phase": PARKED if requeue else KILLED,
        "preempt_kill_at": None,
        "preempt_lost": lost,
        "preempt_eligible": row.eligible_time,
    }
    if requeue:  # a requeue tide asks for counts no lost work of its own
        values["lost_gpu_seconds"] = (row.lost_gpu_seconds or 0.0) + lost
    grace = when - (row.preempt_time or when)
    why = (
        f"preempted by job {row.preempted_by} after {grace:.1f} s of grace "
        f"({row.preempt_mode}); {lost:.0f} GPU-seconds since the last checkpoint lost"
    )
    return row.preempt_phase == GRACE and jobrepo.transition(
        session, row.id, ["RUNNING"], "COMPLETING", when, values, reason=why, actor=PREEMPT_ACTOR
    )
