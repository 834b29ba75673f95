"""One factory for both worlds (issue 13 item 1): the policy the live
controller runs is the one the twin runs, named and configured by the
cluster's SchedulerConfig (policy, victim_order)."""

from __future__ import annotations

import pytest

from tide.model.sched_config import SchedulerConfig
from tide.sched.cycle import LOST_WORK, PRIORITY_ORDER
from tide.sched.index import build_index
from tide.sched.policies import POLICY_NAMES, make_policy, policy_for
from tide.sim.engine import Engine
from tide.testing.builders import flat_cluster

CLUSTER = flat_cluster(2, 8)


@pytest.mark.parametrize(
    ("name", "order", "cls", "expected_order"),
    [
        ("slurm", "", "SlurmPolicy", PRIORITY_ORDER),  # Slurm's own: lowest priority first
        ("slurm", LOST_WORK, "SlurmPolicy", LOST_WORK),
        ("tide", "", "TidePolicy", LOST_WORK),
        ("tide", PRIORITY_ORDER, "TidePolicy", PRIORITY_ORDER),
        ("kueue", "", "KueuePolicy", None),  # victims by its own queues
        ("volcano", "", "VolcanoPolicy", None),
        ("k8s-default", "", "K8sDefaultPolicy", None),  # never preempts
    ],
)
def test_policy_for_builds_the_named_policy_with_its_options(
    name: str, order: str, cls: str, expected_order: str | None
) -> None:
    ix = build_index(CLUSTER)
    p = policy_for(SchedulerConfig(policy=name, victim_order=order), ix)
    assert type(p).__name__ == cls and p.name == name
    assert getattr(p, "victim_order", None) == expected_order


def test_a_name_given_on_the_command_line_wins_and_keeps_the_options() -> None:
    ix = build_index(CLUSTER)
    p = policy_for(SchedulerConfig(policy="slurm", victim_order=LOST_WORK), ix, "tide")
    assert p.name == "tide" and p.victim_order == LOST_WORK  # type: ignore[attr-defined]


def test_the_twin_engine_runs_what_the_factory_builds() -> None:
    cfg = SchedulerConfig(policy="tide", victim_order=PRIORITY_ORDER)
    engine = Engine(CLUSTER, cfg, "tide")
    twin = engine.policy
    live = policy_for(cfg, build_index(CLUSTER))
    assert type(twin) is type(live)
    assert twin.victim_order == live.victim_order == PRIORITY_ORDER  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "order", "message"),
    [
        ("fifo", "", f"unknown policy 'fifo'; choose one of {', '.join(POLICY_NAMES)}"),
        ("slurm", "oldest", "victim_order 'oldest': choose one of lost_work, priority"),
    ],
)
def test_bad_names_are_named_with_the_choices(name: str, order: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        make_policy(name, build_index(CLUSTER), order)
    assert str(e.value) == message
