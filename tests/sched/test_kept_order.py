"""The kept priority order (tide.sched.kept_order, Snapshot.pending_delta)
gives the from-scratch order, whatever jobs come, go or change between
cycles, and is really the path taken when the driver says what changed."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model.sched_config import PriorityWeights
from tide.sched.cycle import CycleMemo, open_cycle
from tide.sched.index import build_index
from tide.sched.kept_order import KeptOrder
from tide.sched.passes import priorities
from tide.sched.types import PendingDelta
from tide.testing.builders import flat_cluster, job, snapshot

_keys = st.tuples(st.integers(-3, 3), st.sampled_from([0.0, 1.0, 2.5]), st.integers(1, 40))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _keys), max_size=60))
def test_put_and_remove_keep_the_keys_sorted(ops) -> None:  # type: ignore[no-untyped-def]
    kept, want = KeptOrder(), {}
    for put, key in ops:
        if put:
            kept.put(key, job(key[2]))
            want[key[2]] = key
        else:
            kept.remove(key[2])
            want.pop(key[2], None)
    assert kept.ids == [k[2] for k in sorted(want.values())]
    assert [j.id for j in kept.jobs] == kept.ids


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=400), st.randoms(use_true_random=False))
def test_a_drain_from_the_head_keeps_the_order(moves, rnd) -> None:  # type: ignore[no-untyped-def]
    """Mostly the first job out (a backlog draining: the head moves, a dead
    head is cut), sometimes one before every job in or one anywhere out;
    the jobs read as a list: indexed from both ends, sliced, iterated."""
    kept, want = KeptOrder(), {}
    for jid in range(300):
        key = (rnd.randint(-50, 50), 0.0, jid)
        kept.put(key, job(jid))
        want[jid] = key
    fresh = 1000
    for move in moves:
        ordered = sorted(want.values())
        if move == 0 and ordered:  # a new job before every kept one
            fresh += 1
            key = (ordered[0][0] - 1, 0.0, fresh)
            kept.put(key, job(fresh))
            want[fresh] = key
        elif move == 1 and ordered:  # one anywhere out
            gone = rnd.choice(ordered)[2]
            kept.remove(gone)
            del want[gone]
        elif ordered:  # the first out
            kept.remove(ordered[0][2])
            del want[ordered[0][2]]
        assert len(kept) == len(want) and (not want or kept.jobs[0].id == min(want.values())[2])
    ids = [k[2] for k in sorted(want.values())]
    jobs = kept.jobs
    assert kept.ids == ids == [j.id for j in jobs] and len(kept) == len(jobs) == len(ids)
    if ids:
        assert jobs[0].id == ids[0] and jobs[-1].id == ids[-1]
        assert [j.id for j in jobs[1:3]] == ids[1:3]


# one step between two cycles: ("add", gpus, submit, user), ("remove", pick),
# ("requeue", pick), ("eligible", pick, at), ("hold", pick), ("resize", pick, gpus),
# ("time", seconds)
_step = st.one_of(
    st.tuples(
        st.just("add"),
        st.sampled_from([1, 2, 4, 8]),
        st.sampled_from([0.0, 5.0, 9.0]),
        st.sampled_from(["alice", "bob"]),
    ),
    st.tuples(st.just("remove"), st.integers(0, 10**6)),
    st.tuples(st.just("requeue"), st.integers(0, 10**6)),
    st.tuples(st.just("eligible"), st.integers(0, 10**6), st.sampled_from([1.0, 7.0, 20.0])),
    st.tuples(st.just("hold"), st.integers(0, 10**6)),
    st.tuples(st.just("resize"), st.integers(0, 10**6), st.sampled_from([1, 2, 8])),
    st.tuples(st.just("time"), st.sampled_from([30.0, 60.0])),
)


def _ordered(snap, memo):  # type: ignore[no-untyped-def]
    """The cycle's pending jobs in the order `priorities` gives (indices into
    the cycle's snapshot, which it may have replaced by a sorted one)."""
    cyc = open_cycle(snap, build_index(snap.cluster), None, memo)
    return [cyc.snap.pending[i] for i in priorities(cyc)]


def _fresh(snap):  # type: ignore[no-untyped-def]
    """The order a memo that never saw the queue gives (every job sorted)."""
    return _ordered(replace(snap, pending_delta=None), CycleMemo())


@settings(max_examples=120, deadline=None)
@given(st.lists(st.lists(_step, max_size=6), min_size=1, max_size=12))
def test_kept_order_is_the_order_from_scratch(cycles) -> None:  # type: ignore[no-untyped-def]
    cluster = flat_cluster(2)
    weights = PriorityWeights(age=1000, job_size=500)
    queue: dict[int, object] = {}
    memo, since, now, next_id = CycleMemo(), 0, 10.0, 1
    for gen, steps in enumerate(cycles, start=1):
        changed: set[int] = set()
        gone: set[int] = set()
        for step in steps:
            ids = list(queue)
            if step[0] == "add":
                j = job(next_id, gpus=step[1], submit=step[2], user=step[3])
                queue[next_id] = j
                changed.add(next_id)
                next_id += 1
            elif step[0] == "time":
                now += step[1]  # ages move: every priority is computed again
            elif ids:
                jid = ids[step[1] % len(ids)]
                j = queue[jid]
                if step[0] == "remove":
                    del queue[jid]
                    gone.add(jid)
                    continue
                if step[0] == "requeue":  # out and back in as a new object, as the twin does
                    del queue[jid]
                    gone.add(jid)
                    j = queue[jid] = replace(j, submit=j.submit + 1.0)  # type: ignore[type-var]
                elif step[0] == "eligible":
                    j.eligible = step[2]  # type: ignore[attr-defined]
                elif step[0] == "hold":
                    j.held = "" if j.held else "user"  # type: ignore[attr-defined]
                else:
                    j.request = replace(j.request, gpus=step[2])  # type: ignore[attr-defined]
                changed.add(jid)
        snap = snapshot(cluster, list(queue.values()), now=now, weights=weights)
        jobs = tuple(queue[i] for i in sorted(changed) if i in queue)
        snap.pending_delta = PendingDelta(since, gen, jobs, frozenset(gone))  # type: ignore[arg-type]
        got = _ordered(snap, memo)
        assert [j.id for j in got] == [j.id for j in _fresh(snap)]
        assert all(j is queue[j.id] for j in got)  # the pending objects themselves
        if queue:  # the kept order followed this delta: the next one updates it
            assert memo.order.gen == gen and len(memo.order) == len(queue)
        since = gen


def test_a_job_the_driver_did_not_report_sends_it_back_to_sorting() -> None:
    """A pending job the kept order never saw (the driver's delta left it out)
    is not lost: the whole queue is sorted again."""
    cluster = flat_cluster(2)
    a, b = job(1, gpus=1, submit=5.0), job(2, gpus=8, submit=0.0)  # equal priorities
    memo = CycleMemo()
    snap = snapshot(cluster, [a])
    snap.pending_delta = PendingDelta(0, 1, (a,))
    assert _ordered(snap, memo) == [a]
    snap = snapshot(cluster, [a, b])
    snap.pending_delta = PendingDelta(1, 2, ())  # b not reported
    assert _ordered(snap, memo) == _fresh(snap) == [b, a]  # the earlier submit first
    assert memo.order.ids == [2, 1] and memo.order.gen == 2  # sorted again, and kept
