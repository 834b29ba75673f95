"""Lending and reclaim rules (tide.sched.serving.lending): the GPU budget's
hysteresis, the node state machine of node lending, the reclaim grace; with
hypothesis properties (the budget cannot flap, the reclaim deadline holds)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model.service import Pool
from tide.sched.serving import lending
from tide.sched.serving.lending import (
    DRAINING,
    LENT,
    SERVING,
    SWITCHING,
    GpuLending,
    NodeLending,
    NodeView,
    observe_gpus,
    observe_nodes,
    reclaim_grace,
)

POOL = Pool("serving", "serving", "lend", lend_after=60.0, keep_idle=2)


def budgets(pool: Pool, series: list[tuple[float, int]]) -> list[int]:
    state, out = GpuLending(), []
    for t, spare in series:
        b, state = observe_gpus(pool, state, t, spare)
        out.append(b)
    return out


def test_nothing_is_lent_before_a_full_window_of_observation():
    assert budgets(POOL, [(0, 10), (30, 10), (59, 10), (60, 10)]) == [0, 0, 0, 10]


def test_a_dip_closes_lending_for_a_whole_window():
    series = [(0, 10), (60, 10), (70, 3), (80, 10), (120, 10), (131, 10)]
    # the dip to 3 at t=70 lasts until t=80; it leaves the window at t=140 (80 + 60)
    assert budgets(POOL, series) == [0, 10, 3, 3, 3, 3]
    assert budgets(POOL, [*series, (140, 10), (141, 10)])[-2:] == [10, 10]


def test_spare_counts_replicas_pending_replicas_and_headroom():
    assert lending.spare_gpus(POOL, total=32, replica_gpus=8, pending_gpus=4) == 18
    assert lending.spare_gpus(POOL, total=8, replica_gpus=8, pending_gpus=4) == 0


def test_reclaim_grace_is_bounded_by_the_objective():
    pool = Pool("s", "s", "l", reclaim_objective=60.0, startup=20.0, margin=5.0)
    assert reclaim_grace(pool, decided=100.0, now=100.0) == 35
    assert reclaim_grace(pool, decided=100.0, now=110.0) == 25  # the decision waited 10 s
    assert reclaim_grace(pool, decided=100.0, now=200.0) == 0
    assert reclaim_grace(Pool("s", "s", "l", reclaim_objective=3600.0), 0.0, 0.0) == 300


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.tuples(st.floats(0.1, 40.0), st.integers(0, 32)), min_size=1, max_size=80),
    window=st.sampled_from([0.0, 30.0, 120.0]),
)
def test_budget_never_exceeds_spare_and_stays_down_for_a_window(steps, window):
    pool = Pool("s", "s", "l", lend_after=window)
    t, series = 0.0, []
    for dt, spare in steps:
        t += dt
        series.append((t, spare))
    got = budgets(pool, series)
    for (t_i, spare_i), b in zip(series, got, strict=True):
        assert 0 <= b <= spare_i
        # every spare value seen within the last window bounds the budget
        for t_j, spare_j in series:
            if t_i - window < t_j <= t_i:
                assert b <= spare_j


@settings(max_examples=200, deadline=None)
@given(
    objective=st.floats(1.0, 600.0),
    startup=st.floats(0.0, 300.0),
    waited=st.floats(0.0, 600.0),
)
def test_replica_ready_by_the_objective_when_the_startup_estimate_holds(objective, startup, waited):
    pool = Pool("s", "s", "l", reclaim_objective=objective, startup=startup, margin=5.0)
    grace = reclaim_grace(pool, decided=0.0, now=waited)
    assert 0 <= grace <= pool.max_grace
    if grace > 0:  # decision + wait + grace + margin + startup fits in the objective
        assert waited + grace + pool.margin + startup <= objective + 1e-6


# --- node lending ------------------------------------------------------------------

NODE_POOL = Pool("s", "s", "l", mode="node", lend_after=60.0, keep_idle=1, switch_gap=30.0)


def nodes(*usage: tuple[int, int]) -> list[NodeView]:
    return [NodeView(i, 8, r, b) for i, (r, b) in enumerate(usage)]


def sides(state: NodeLending) -> list[str]:
    return [s.state for _, s in state.sides]


def test_empty_nodes_are_lent_after_the_window_keeping_one_idle():
    state = NodeLending()
    view = nodes((8, 0), (0, 0), (0, 0), (0, 0))
    state, _ = observe_nodes(NODE_POOL, state, 0.0, view, 0)
    assert sides(state) == [SERVING] * 4
    state, moves = observe_nodes(NODE_POOL, state, 60.0, view, 0)
    # three empty nodes, one kept idle: two switch (highest numbers first)
    assert sides(state) == [SERVING, SERVING, SWITCHING, SWITCHING]
    assert moves.switching == [3, 2]
    state, moves = observe_nodes(NODE_POOL, state, 90.0, view, 0)
    assert sides(state) == [SERVING, SERVING, LENT, LENT] and moves.lent == [2, 3]


def test_reclaim_drains_lent_nodes_then_switches_them_back():
    state = NodeLending()
    view = nodes((8, 0), (0, 0), (0, 0), (0, 0))
    for t in (0.0, 60.0, 90.0):
        state, _ = observe_nodes(NODE_POOL, state, t, view, 0)
    busy = nodes((8, 0), (0, 0), (0, 4), (0, 8))
    # 16 GPUs wanted, 8 free on serving nodes: the lent node with fewer borrowed GPUs drains
    state, moves = observe_nodes(NODE_POOL, state, 100.0, busy, 16)
    assert moves.draining == [2] and sides(state)[2] == DRAINING
    state, _ = observe_nodes(NODE_POOL, state, 200.0, busy, 16)
    assert sides(state)[2] == DRAINING  # borrowers still there: it waits
    done = nodes((8, 0), (0, 0), (0, 0), (0, 8))
    state, moves = observe_nodes(NODE_POOL, state, 300.0, done, 16)
    assert sides(state)[2] == SWITCHING and moves.switching == [2]
    state, moves = observe_nodes(NODE_POOL, state, 330.0, done, 16)
    assert sides(state)[2] == SERVING and moves.back == [2]
    assert sides(state)[3] == LENT  # enough came back: the other one stays lent


def test_drain_timeout_gives_up_waiting():
    pool = Pool("s", "s", "l", mode="node", lend_after=0.0, drain_timeout=50.0)
    state, _ = observe_nodes(pool, NodeLending(), 0.0, nodes((0, 0)), 0)
    assert sides(state) == [LENT]
    state, _ = observe_nodes(pool, state, 10.0, nodes((0, 8)), 8)
    assert sides(state) == [DRAINING]
    state, _ = observe_nodes(pool, state, 60.0, nodes((0, 8)), 8)
    assert sides(state) == [SERVING]  # no switch gap: back at once


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), min_size=4, max_size=4),
            st.integers(0, 40),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_node_sides_only_move_by_the_rules(steps):
    """A node is lent only after lend_after seconds without replicas, never
    while replicas are pending; it never goes from LENT to SERVING without
    draining or switching."""
    state, t = NodeLending(), 0.0
    empty_since: dict[int, float] = {}
    for usage, pending in steps:
        view = [NodeView(i, 8, r, min(b, 8 - r)) for i, (r, b) in enumerate(usage)]
        before = {n: s.state for n, s in state.sides}
        state, _ = observe_nodes(NODE_POOL, state, t, view, pending)
        after = {n: s for n, s in state.sides}
        for n in view:
            if before.get(n.node, SERVING) == SERVING and n.replica_gpus == 0:
                empty_since.setdefault(n.node, t)
            elif n.replica_gpus:
                empty_since.pop(n.node, None)
            if before.get(n.node, SERVING) == SERVING and after[n.node].state != SERVING:
                assert pending == 0
                assert t - empty_since.get(n.node, t) >= NODE_POOL.lend_after
            if before.get(n.node) == LENT:
                assert after[n.node].state in (LENT, DRAINING, SWITCHING)
        t += 15.0
