"""ActiveJobs keeps, as jobs start and end, what the engine used to recount
over every running job at every event: each figure must equal that walk."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model import Job, JobRequest
from tide.sched.types import Allocation, NodeAlloc
from tide.sim.active import Active, ActiveJobs
from tide.sim.workload.base import SimJob


def _act(jid: int, account: str, gpus: int, limit_end: float, end: float, ckpt: bool) -> Active:
    req = JobRequest(name=f"j{jid}", gpus_per_node=gpus)
    job = Job(id=jid, request=req, user="u", account=account, submit=0.0)
    sim = SimJob(id=jid, submit=0.0, duration=1.0, request=req,
                 checkpoint_interval=60.0 if ckpt else None)  # fmt: skip
    alloc = Allocation(jid, (NodeAlloc(0, tuple(range(gpus)), (0,), 0),))
    return Active(job, sim, alloc, 0.0, limit_end, end, jid, 1.0)


ops = st.lists(
    st.tuples(
        st.booleans(),  # start (else end one)
        st.integers(0, 30),  # job id
        st.sampled_from(["a", "b", "c"]),
        st.integers(1, 8),  # GPUs
        st.integers(0, 50),  # limit end
        st.integers(0, 60),  # end
        st.booleans(),  # checkpoints
        st.integers(0, 60),  # now, for past_limit
    ),
    max_size=60,
)


@settings(max_examples=150)
@given(ops)
def test_side_tables_equal_the_walk(steps: list[tuple]) -> None:
    active, plain = ActiveJobs(), {}
    for start, jid, acct, gpus, limit, end, ckpt, now in steps:
        if start and jid not in plain:
            act = _act(jid, acct, gpus, float(limit), float(min(end, limit)), ckpt)
            active[jid] = plain[jid] = act
        elif not start and jid in plain:
            del plain[jid]
            if jid % 2:
                del active[jid]
            else:
                assert active.pop(jid) is not None
        walk: dict[str, int] = {}
        for a in plain.values():
            walk[a.job.account] = walk.get(a.job.account, 0) + a.alloc.gpu_count
        got = active.gpus_by_account()
        assert list(got.items()) == list(walk.items())  # same figures, same order
        assert list(active) == list(plain)
        assert [r.job.id for r in active.runs.values()] == list(plain)
        assert all(r.end == plain[j].limit_end for j, r in active.runs.items())
        assert list(active.checkpointing) == [
            j for j, a in plain.items() if a.sim.checkpoint_interval
        ]
        due = [j for j in active.past_limit(float(now)) if active[j].limit_end <= now]
        assert due == [j for j, a in plain.items() if a.limit_end <= now]


def test_a_moved_limit_is_due_at_its_new_time() -> None:
    active = ActiveJobs()
    act = _act(1, "a", 1, 10.0, 10.0, False)
    active[1] = act
    act.limit_end = 40.0  # a resume pushes the limit back in place
    assert active.past_limit(20.0) == []
    assert active.past_limit(40.0) == [1]
