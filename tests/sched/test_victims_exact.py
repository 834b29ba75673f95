"""Victim choice is right on every topology (issue 13 item 5): the
least-lost-work sufficient victim set, on flat clusters as on trees; a
hand-computed case where the greedy choice was wrong, and a property test
against brute force over every subset on small clusters."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_preempt import _fits_without, high_job, low_job, preempt_snap, qos_tree, victims

from tide.model.sched_config import BackfillMode
from tide.sched.index import build_index
from tide.sched.preempt_rules import lost_gpu_seconds
from tide.sched.scheduler import Scheduler
from tide.sched.types import Allocation, NodeAlloc, Snapshot
from tide.testing.builders import flat_cluster, tree_cluster

LOW = (0, 1, 2, 3)
HIGH = (4, 5, 6, 7)


def test_a_flat_cluster_gets_the_cheapest_whole_node_not_the_greedy_one() -> None:
    """n001: two victims losing 32 GPU-s each (64); n002: 4 and 52 (56). Cheapest
    first takes 4, 32, 32 and then needs both n001 jobs: 64 lost. The least is
    n002's pair."""
    c = flat_cluster(2)
    runs = [
        low_job(c, 11, {"n001": LOW}, start=992.0),
        low_job(c, 12, {"n001": HIGH}, start=992.0),
        low_job(c, 21, {"n002": LOW}, start=999.0),
        low_job(c, 22, {"n002": HIGH}, start=987.0),
    ]
    snap = preempt_snap(c, [high_job(1, nodes=1, gpus_per_node=8)], runs)
    d = Scheduler(build_index(c), victim_order="lost_work").schedule(snap)
    assert victims(d) == {21, 22}
    assert sum(p.lost_gpu_seconds for p in d.preemptions) == 56.0


def _cost(snap: Snapshot, ids: set[int]) -> float:
    by_id = {r.job.id: r for r in snap.running}
    return sum(lost_gpu_seconds(by_id[i], snap.now, snap.last_checkpoint, "REQUEUE") for i in ids)


@st.composite
def small_scenes(draw):  # type: ignore[no-untyped-def]
    if draw(st.booleans()):
        c = flat_cluster(draw(st.integers(1, 3)))
    else:
        c = tree_cluster(draw(st.lists(st.integers(1, 2), min_size=2, max_size=2)))
    runs, jid = [], 100
    for i, node in enumerate(c.nodes):
        free = list(range(8))
        while free and len(runs) < 8 and draw(st.integers(0, 9)) > 0:
            k = draw(st.integers(1, len(free)))
            gpus, free = tuple(free[:k]), free[k:]
            jid += 1
            r = low_job(c, jid, {node.name: gpus}, start=float(draw(st.integers(0, 999))))
            runs.append(replace(r, alloc=Allocation(jid, (NodeAlloc(i, gpus, (len(runs),)),))))
    ck = {r.job.id: float(draw(st.integers(int(r.start), 1000))) for r in runs
          if draw(st.booleans())}  # fmt: skip
    kw = {"nodes": draw(st.integers(1, len(c.nodes))),
          "gpus_per_node": draw(st.sampled_from([2, 4, 6, 8]))}  # fmt: skip
    return c, runs, ck, kw


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenes())
def test_the_victims_lose_the_least_work_of_any_sufficient_set(scene) -> None:  # type: ignore[no-untyped-def]
    c, runs, ck, kw = scene
    snap = preempt_snap(c, [high_job(1, **kw)], runs, checkpoints=ck, accounts=qos_tree(),
                        backfill=BackfillMode.NONE)  # fmt: skip
    if _fits_without(snap, 1, set()):
        return  # it starts without preemption
    ids = [r.job.id for r in runs]
    best: tuple[float, int] | None = None
    for k in range(1, len(ids) + 1):  # brute force: every subset
        for subset in combinations(ids, k):
            gone = set(subset)
            if _fits_without(snap, 1, gone):
                key = (round(_cost(snap, gone), 6), len(gone))
                best = key if best is None or key < best else best
    d = Scheduler(build_index(c), victim_order="lost_work").schedule(snap)
    gone = victims(d)
    if best is None:
        assert gone == set()
        return
    assert gone, "a sufficient set exists but none was chosen"
    assert _fits_without(snap, 1, gone)
    assert (round(_cost(snap, gone), 6), len(gone)) == best
    assert np.isclose(sum(p.lost_gpu_seconds for p in d.preemptions), best[0])
