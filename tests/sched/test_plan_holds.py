"""Plan.hold_aware_ready (a few pushes, then a sorted sweep per node) gives
exactly what the fixed point it replaced gives; that fixed point is kept here as the reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.sched.index import build_index
from tide.sched.plan import INF, Plan, past_holds
from tide.sched.state import Usage
from tide.testing.builders import flat_cluster

NODES = 4


def reference(plan: Plan, ready: np.ndarray, duration: float, skip: str | None) -> np.ndarray:
    """The quadratic fixed point: push every node past each whole-node hold its
    window overlaps until none does."""
    hn, hs, he, _, _, _, hw, tags = plan.holds.arrays()
    sel = hw if not skip else hw & (tags != skip)
    nodes, starts, ends = hn[sel], hs[sel] - duration, he[sel]
    e = ready.copy()
    for _ in range(len(nodes) + 1):
        cur = e[nodes]
        hit = (starts < cur) & (cur < ends)
        if not hit.any():
            break
        np.maximum.at(e, nodes[hit], ends[hit])
    return e


_time = st.one_of(st.integers(0, 40).map(float), st.just(INF))  # small: many ties and overlaps
_hold = st.tuples(
    st.integers(0, NODES - 1), st.integers(0, 40), st.integers(-5, 30), st.booleans(),
    st.sampled_from(["", "a", "b"]),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_hold, max_size=25),
    st.lists(_time, min_size=NODES, max_size=NODES),
    st.integers(0, 20),
    st.sampled_from([None, "a", "b"]),
    st.booleans(),
)
def test_sweep_equals_fixed_point(holds, ready, duration, skip, open_end) -> None:  # type: ignore[no-untyped-def]
    ix = build_index(flat_cluster(NODES, gpus=8))
    plan = Plan.build(ix, Usage.empty(ix), [], 0.0)
    for k, (node, start, length, whole, tag) in enumerate(holds):
        end = INF if open_end and k == 0 else float(start + length)  # length <= 0: an empty hold
        plan.hold(node, float(start), end, gpus=2, whole=whole, tag=tag)
    ready_at = np.array(ready)
    got = plan.hold_aware_ready(ready_at, float(duration), skip)
    want = reference(plan, ready_at, float(duration), skip)
    assert np.array_equal(got, want), (got, want)
    hn, hs, he, _, _, _, hw, tags = plan.holds.arrays()
    sel = hw if not skip else hw & (tags != skip)
    for pushes in (0, 1):  # the sweep alone, and after one plain push
        swept = past_holds(ready_at, hn[sel], hs[sel] - float(duration), he[sel], pushes)
        assert np.array_equal(swept, want), (pushes, swept, want)
    assert np.array_equal(ready_at, np.array(ready))  # the input is left alone


def test_chain_of_holds_is_followed() -> None:
    """A window that fits before no hold: pushed through the chain to its end;
    a gap as long as the job is used."""
    ix = build_index(flat_cluster(2, gpus=8))
    plan = Plan.build(ix, Usage.empty(ix), [], 0.0)
    for start, end in ((10, 20), (25, 40), (45, 60), (100, 120)):
        plan.hold(0, float(start), float(end))
    got = plan.hold_aware_ready(np.array([5.0, 5.0]), 10.0)
    assert got.tolist() == [60.0, 5.0]  # [5,15) hits [10,20), [20,30) hits 25, [40,50) hits 45
    got = plan.hold_aware_ready(np.array([0.0, 0.0]), 10.0)
    assert got.tolist() == [0.0, 0.0]  # [0, 10) ends as the first hold starts
