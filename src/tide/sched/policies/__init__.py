"""Scheduling policies, selected by name (see `make_policy`)."""

from __future__ import annotations

from tide.sched.index import ClusterIndex
from tide.sched.policies.base import Policy, SlurmPolicy

POLICY_NAMES = ("slurm",)


def make_policy(name: str, index: ClusterIndex) -> Policy:
    """The policy called `name` for this cluster; ValueError names the choices."""
    if name == "slurm":
        return SlurmPolicy(index)
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICY_NAMES)}")


__all__ = ["POLICY_NAMES", "Policy", "SlurmPolicy", "make_policy"]
