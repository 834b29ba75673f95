"""A killed CANCEL victim whose processes are not gone (COMPLETING) is still its
preemptor's in the live snapshot (services.preemption.shape, phase `killed`), as a
parked REQUEUE victim is: the core takes no needless second victim for the same
preemptor. The probe of /work/notes/live13.md: job 11 killed for job 13 and
completing since its start long ago, job 12 started 5 s ago; under the lost_work
order job 12 is the cheaper victim."""

from __future__ import annotations

from tide.model import JobState, Partition
from tide.sched.cycle import LOST_WORK
from tide.sched.index import build_index
from tide.sched.scheduler import Scheduler
from tide.sched.types import Running
from tide.server.services.preemption import KILLED, Mark, Marks, shape
from tide.testing.builders import flat_cluster, job, running, snapshot

EIGHT = tuple(range(8))


def _victims(phase: str | None) -> tuple[dict[int, int], list[int]]:
    c = flat_cluster(2)
    names = tuple(x.name for x in c.nodes)
    c.partitions = [Partition("gpu", names, default=True, priority_tier=1),
                    Partition("urgent", names, priority_tier=10)]  # fmt: skip
    runs: list[Running] = []
    for jid, node, start in ((11, "n001", 0.0), (12, "n002", 95.0)):
        j = job(jid, nodes=1, gpus_per_node=8, time=600, partitions=("gpu",))
        j.partition = "gpu"
        runs.append(running(j, c, {node: EIGHT}, start))
    runs[0].job.state = JobState.COMPLETING  # killed; its processes not yet gone
    urgent = job(13, nodes=1, gpus_per_node=8, time=600, partitions=("urgent",))
    marks = Marks()
    if phase is not None:
        marks.jobs[11] = Mark(11, "COMPLETING", phase, 13, None, 90.0, 0.0)
    states = {11: "COMPLETING", 12: "RUNNING", 13: "PENDING"}
    shaped = shape(marks, states, [urgent], runs, 100.0)
    snap = snapshot(c, shaped.pending, now=100.0, running_jobs=shaped.running,
                    preempt_type="preempt/partition_prio", preempt_mode="CANCEL")  # fmt: skip
    snap.preempting = shaped.preempting
    snap.completing = (runs[0].alloc,)
    d = Scheduler(build_index(c), victim_order=LOST_WORK).schedule(snap, None)
    return shaped.preempting, [p.victim for p in d.preemptions]


def test_a_killed_cancel_victim_is_committed_and_no_second_victim_is_taken() -> None:
    preempting, victims = _victims(KILLED)
    assert preempting == {11: 13}
    assert victims == []  # job 13 waits for job 11's node


def test_without_the_phase_a_needless_second_victim_is_taken() -> None:
    """What the live server did before: the phase cleared at the kill."""
    preempting, victims = _victims(None)
    assert preempting == {}
    assert victims == [12]
