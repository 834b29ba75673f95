"""Fault isolation: no single job can stop a scheduling cycle for everyone.

A job whose evaluation raises (a value the boundary let through, a stored row
from an older version, a bug the job's shape reaches) would otherwise make
every cycle fail and no job on the cluster start. `schedule_isolating` runs
the cycle; only if it raises does it look for the pending jobs that make it
raise and run the cycle without them. The drivers hold those jobs (the
server: an admin hold whose reason names the error) or report them (the
twin), and everyone else is scheduled.

Pure like the rest of the core: it calls the schedule function it is given
on snapshots that differ only in their pending list, so a deterministic
policy gives the same answer for the same jobs. The search is greedy by
halves over the queue in its order: it keeps a growing set of jobs that
schedule cleanly and adds the rest in chunks, splitting a chunk that fails
until the failing job is alone. One bad job among n costs about 2·log2(n)
extra cycles, once (the driver keeps it out afterwards); jobs that fail only
together are caught too (the later one is held).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tide.model import Job
from tide.sched.types import Decisions, Snapshot

MAX_ERROR = 300  # characters of the error kept in a reason


@dataclass(slots=True, frozen=True)
class JobFault:
    """A pending job the cycle could not evaluate, and why."""

    job_id: int
    error: str  # "TypeError: unhashable type: 'list'"


def describe(exc: BaseException) -> str:
    """One line naming the error: its type and message, bounded."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 3] + "..."


def schedule_isolating(
    schedule: Callable[[Snapshot], Decisions], snap: Snapshot
) -> tuple[Decisions, tuple[JobFault, ...]]:
    """(decisions, faults): one cycle over `snap`, without the pending jobs
    that make it raise. Raises only if the cycle fails with no pending job at
    all (a fault of the cluster or of running jobs, not of one submission)."""
    try:
        return schedule(snap), ()
    except Exception:
        if not snap.pending:
            raise
    # other pending lists than the driver's: what it says changed is not known
    snap = replace(snap, pending_delta=None, running_delta=None)
    schedule(replace(snap, pending=[]))  # raises if no pending job is at fault
    kept, faults = _partition(schedule, snap)
    return schedule(replace(snap, pending=kept)), tuple(faults)


def _partition(
    schedule: Callable[[Snapshot], Decisions], snap: Snapshot
) -> tuple[list[Job], list[JobFault]]:
    """Pending jobs split into those that schedule together and the faulty ones."""
    kept: list[Job] = []
    faults: list[JobFault] = []
    jobs = list(snap.pending)
    half = len(jobs) // 2
    chunks = [jobs[half:], jobs[:half]]  # a stack: the first half is tried first
    while chunks:
        chunk = chunks.pop()
        if not chunk:
            continue
        try:
            schedule(replace(snap, pending=kept + chunk))
        except Exception as e:
            if len(chunk) == 1:
                faults.append(JobFault(chunk[0].id, describe(e)))
            else:
                mid = len(chunk) // 2
                chunks += [chunk[mid:], chunk[:mid]]
            continue
        kept += chunk
    return kept, faults
