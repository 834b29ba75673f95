"""tide.sim.pending.QueueView: a snapshot's pending jobs read in place from
the engine's queue, in its order, and refused once the queue changed."""

from __future__ import annotations

import pytest

from tide.model import Job, JobRequest
from tide.sim.pending import PendingJobs


def job(jid: int) -> Job:
    req = JobRequest(name=f"j{jid}", gpus_per_node=1, time_limit=60)
    return Job(id=jid, request=req, user="u", account="a", submit=float(jid))


def test_a_view_reads_the_queue_in_its_order() -> None:
    q = PendingJobs()
    for jid in (3, 1, 2):
        q[jid] = job(jid)
    q.pop(1)
    q[1] = job(1)  # back at the end, as a requeued job
    view = q.view()
    assert len(view) == 3 and bool(view)
    assert [j.id for j in view] == [3, 2, 1] == [j.id for j in q.values()]
    assert view[0].id == 3 and view[-1].id == 1 and [j.id for j in view[1:]] == [2, 1]
    q.touch(3)  # a change in place keeps the same jobs
    assert view[0] is q[3]


@pytest.mark.parametrize("change", ["put", "pop", "del", "clear"])
def test_a_view_is_refused_once_the_queue_changed(change: str) -> None:
    q = PendingJobs()
    q[1], q[2] = job(1), job(2)
    view = q.view()
    assert view[1].id == 2  # listed now
    if change == "put":
        q[3] = job(3)
    elif change == "pop":
        q.pop(1)
    elif change == "del":
        del q[2]
    else:
        q.clear()
    for read in (len, list, lambda v: v[0]):
        with pytest.raises(RuntimeError, match="queue changed"):
            read(view)
    assert not PendingJobs().view()


def test_the_queue_keeps_its_order_and_records_as_a_backlog_drains() -> None:
    """Thousands of jobs leaving from the head (a backlog draining): the
    first job, the order, the delta and the counts follow."""
    q = PendingJobs()
    assert q.first() is None
    for jid in range(3000):
        q[jid] = job(jid)
    q.delta()
    left = [jid for jid in range(3000) if jid % 7 != 3][:2500]
    for jid in left:
        q.pop(jid)
        assert q.first() is next(iter(q.values()))
    q[5000] = job(5000)
    kept = [jid for jid in range(3000) if jid not in set(left)] + [5000]
    assert list(q) == kept == [j.id for j in q.view()]
    d = q.delta()
    assert d.gone == frozenset(left) and [j.id for j in d.changed] == [5000]
    assert q.others() == len(kept)  # none is eligible: each waits on more than GPUs


def test_the_first_job_follows_requeues_and_jobs_put_again_in_place() -> None:
    q = PendingJobs()
    q[1], q[2], q[3] = job(1), job(2), job(3)
    again = q.pop(1)
    q[1] = again  # a requeue: back at the end
    assert q.first() is q[2] and list(q) == [2, 3, 1]
    q[2] = job(2)  # put again in place: keeps its place
    assert q.first() is q[2] and list(q) == [2, 3, 1]
    del q[2]
    q.pop(3)
    assert q.first() is again
    q.clear()
    assert q.first() is None
