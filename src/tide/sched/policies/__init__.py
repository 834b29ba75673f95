"""Scheduling policies, selected by name (see `make_policy`; docs/policies.md)."""

from __future__ import annotations

from tide.sched.index import ClusterIndex
from tide.sched.policies.base import Capabilities, Policy
from tide.sched.policies.slurm import SlurmPolicy

POLICY_NAMES = ("k8s-default", "volcano", "kueue", "slurm", "tide")


def make_policy(name: str, index: ClusterIndex) -> Policy:
    """The policy called `name` for this cluster; ValueError names the choices."""
    if name == "slurm":
        return SlurmPolicy(index)
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

        return TidePolicy(index)
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICY_NAMES)}")


__all__ = ["POLICY_NAMES", "Capabilities", "Policy", "SlurmPolicy", "make_policy"]
