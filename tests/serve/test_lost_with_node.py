"""The replicas the service controller tells the router were lost with their
node (tide.serve.controller.lost_with_node): what they dropped is not held
against the requests (tide.serve.router._blamed)."""

from __future__ import annotations

from tide.serve.controller import lost_with_node
from tide.serve.replicas import JobView
from tide.store.models import ReplicaRow


def _view(state: str, nodelist: str) -> JobView:
    return JobView(state, nodelist, "", None, None, "")


def test_replicas_on_a_down_node_are_lost_the_others_are_not():
    reps = [ReplicaRow(id=i, job_id=100 + i) for i in range(1, 6)]
    views = {
        101: _view("RUNNING", "n1"),
        102: _view("COMPLETING", "n[1-2]"),  # a second node is down: lost too
        103: _view("RUNNING", "n3"),
        104: _view("PENDING", ""),  # not placed: nothing to lose
    }  # 105: its job is gone (no view)
    assert lost_with_node(reps, views, {"n1"}) == ["1", "2"]
    assert lost_with_node(reps, views, {"n2", "n3"}) == ["2", "3"]
    assert lost_with_node(reps, views, set()) == []
