"""Scheduling policies, selected by name (see `make_policy`; docs/policies.md).

`policy_for` is the one factory both worlds call: the live controller
(tide.server.loop) and the twin (tide.sim.engine) build the policy named in
the cluster's SchedulerConfig (`policy`, overridable by --policy) with the
same options (`victim_order`), so a what-if in the twin runs the object the
server runs.
"""

from __future__ import annotations

from tide.model.sched_config import SchedulerConfig
from tide.sched.cycle import VICTIM_ORDERS
from tide.sched.index import ClusterIndex
from tide.sched.policies.base import Capabilities, Policy
from tide.sched.policies.slurm import SlurmPolicy

POLICY_NAMES = ("k8s-default", "volcano", "kueue", "slurm", "tide")


def make_policy(name: str, index: ClusterIndex, victim_order: str = "") -> Policy:
    """The policy called `name` for this cluster; ValueError names the choices.
    `victim_order` ("" = the policy's default) orders preemption victims of the
    policies that preempt by the cluster's rules (slurm, tide); the others
    choose victims by their own queues (kueue, volcano) or never preempt."""
    if victim_order and victim_order not in VICTIM_ORDERS:
        raise ValueError(
            f"victim_order {victim_order!r}: choose one of {', '.join(VICTIM_ORDERS)}"
        )
    if name == "slurm":
        return SlurmPolicy(index, victim_order) if victim_order else SlurmPolicy(index)
    if name == "k8s-default":
        from tide.sched.policies.k8s import K8sDefaultPolicy

        return K8sDefaultPolicy(index)
    if name == "volcano":
        from tide.sched.policies.volcano import VolcanoPolicy

        return VolcanoPolicy(index)
    if name == "kueue":
        from tide.sched.policies.kueue import KueuePolicy

        return KueuePolicy(index)
    if name == "tide":
        from tide.sched.policies.tide_policy import TidePolicy

        return TidePolicy(index, victim_order=victim_order) if victim_order else TidePolicy(index)
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICY_NAMES)}")


def policy_for(config: SchedulerConfig, index: ClusterIndex, name: str = "") -> Policy:
    """The policy a driver runs: `name` (a --policy given on the command line)
    or the configuration's `policy`, with the configuration's options."""
    return make_policy(name or config.policy, index, config.victim_order)


__all__ = ["POLICY_NAMES", "Capabilities", "Policy", "SlurmPolicy", "make_policy", "policy_for"]
