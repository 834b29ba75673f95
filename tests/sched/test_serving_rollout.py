"""Replica sets and rolling updates (tide.sched.serving.rollout): the
docstring's example step by step, scale-down order, and hypothesis runs of
whole rollouts with replicas becoming ready in any order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model.service import Rollout
from tide.sched.serving.rollout import ReplicaView, step


class World:
    """Replicas as a controller keeps them: stopping ones leave at once."""

    def __init__(self, generation: int = 1) -> None:
        self.replicas: dict[int, ReplicaView] = {}
        self.next_id = 1
        self.clock = 0.0
        self.generation = generation

    def add(self, state: str = "Pending", generation: int | None = None) -> int:
        rid = self.next_id
        self.next_id += 1
        self.clock += 1
        gen = self.generation if generation is None else generation
        self.replicas[rid] = ReplicaView(rid, gen, state, self.clock)
        return rid

    def set(self, rid: int, state: str) -> None:
        r = self.replicas[rid]
        self.replicas[rid] = ReplicaView(r.id, r.generation, state, r.created)

    def apply(self, desired: int, rollout: Rollout) -> list[int]:
        s = step(list(self.replicas.values()), desired, self.generation, rollout)
        for rid in s.stop:
            del self.replicas[rid]
        return [self.add() for _ in range(s.create)]

    def ready(self) -> int:
        return sum(r.state == "Ready" for r in self.replicas.values())


def test_the_docstring_example():
    w = World()
    a, b = w.add("Ready"), w.add("Ready")
    w.generation = 2
    (c,) = w.apply(2, Rollout(1, 0))
    assert set(w.replicas) == {a, b, c}
    assert w.apply(2, Rollout(1, 0)) == []  # C is not ready yet: nothing moves
    w.set(c, "Ready")
    (d,) = w.apply(2, Rollout(1, 0))  # A goes, D comes
    assert set(w.replicas) == {b, c, d}
    w.set(d, "Ready")
    assert w.apply(2, Rollout(1, 0)) == []
    assert set(w.replicas) == {c, d}


def test_percentages_resolve_as_kubernetes_does():
    """Kubernetes' default, 25% / 25%: surge rounds up, unavailable down; both 0
    would never move, so unavailable becomes 1."""
    k8s = Rollout(max_surge_percent=25, max_unavailable_percent=25)
    assert k8s.resolve(10) == (3, 2)
    assert k8s.resolve(4) == (1, 1)
    assert k8s.resolve(1) == (1, 0)
    assert Rollout(0, 0, None, 25).resolve(3) == (0, 1)  # floor(0.75) = 0 -> 1
    # 10 ready old replicas, 25%/25%: 3 new at once, 2 old go at once
    w = World()
    for _ in range(10):
        w.add("Ready")
    w.generation = 2
    s = step(list(w.replicas.values()), 10, 2, k8s)
    assert s.create == 5 and len(s.stop) == 2  # 8 old kept ready + 5 new = desired + 3


def test_the_spec_takes_counts_or_percentages():
    from tide.serve.spec import parse_service

    spec, stored = parse_service({"name": "a", "spec": {
        "command": "x", "rollout": {"maxSurge": "25%", "maxUnavailable": 1}}})  # fmt: skip
    assert spec.rollout.resolve(8) == (2, 1)
    assert stored["spec"]["rollout"] == {"maxSurge": "25%", "maxUnavailable": 1}


def test_scale_down_stops_pending_then_unready_then_newest_ready():
    w = World()
    r1, r2, r3 = w.add("Ready"), w.add("Ready"), w.add("Unready")
    r4 = w.add("Pending")
    s = step(list(w.replicas.values()), 1, 1, Rollout())
    assert s.stop == [r4, r3, r2] and s.create == 0
    assert r1 not in s.stop


def test_scale_up_creates_the_missing_ones():
    w = World()
    w.add("Ready")
    assert step(list(w.replicas.values()), 4, 1, Rollout()).create == 3


def test_old_replicas_that_are_not_ready_go_at_once():
    w = World()
    a = w.add("Unready")
    b = w.add("Ready")
    w.generation = 2
    s = step(list(w.replicas.values()), 2, 2, Rollout(1, 0))
    assert a in s.stop and b not in s.stop


@settings(max_examples=200, deadline=None)
@given(
    desired=st.integers(1, 6),
    surge=st.integers(0, 3),
    unavailable=st.integers(0, 2),
    order=st.lists(st.integers(0, 1000), min_size=10, max_size=200),
)
def test_a_rollout_keeps_its_bounds_and_finishes(desired, surge, unavailable, order):
    if surge == 0 and unavailable == 0:
        surge = 1
    rollout = Rollout(surge, unavailable)
    w = World()
    for _ in range(desired):
        w.add("Ready")
    w.generation = 2
    floor = desired - unavailable
    for pick in order:
        w.apply(desired, rollout)
        assert len(w.replicas) <= desired + surge
        assert w.ready() >= floor  # never fewer ready replicas than the policy allows
        starting = [r for r in w.replicas.values() if r.state != "Ready"]
        if starting:  # one of them becomes ready (any order)
            r = starting[pick % len(starting)]
            w.set(r.id, "Starting" if r.state == "Pending" else "Ready")
    for _ in range(4 * desired + 4):  # let it finish: every replica gets ready
        w.apply(desired, rollout)
        for r in list(w.replicas.values()):
            if r.state != "Ready":
                w.set(r.id, "Ready")
    w.apply(desired, rollout)
    assert len(w.replicas) == desired
    assert all(r.generation == 2 and r.state == "Ready" for r in w.replicas.values())
