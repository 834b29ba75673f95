"""tide's data model: small typed classes with names Slurm users recognise."""

from tide.model.account import Account, AccountTree, Limits, Qos, UserAssoc
from tide.model.cluster import (
    Block,
    Cluster,
    Gpu,
    Node,
    NodeState,
    Partition,
    Switch,
    Topology,
    TopologyKind,
)
from tide.model.job import (
    ArraySpec,
    Dependency,
    DependencyItem,
    DependencyType,
    Job,
    JobRequest,
    JobState,
    SignalSpec,
)
from tide.model.reservation import Reservation

__all__ = [
    "Account",
    "AccountTree",
    "ArraySpec",
    "Block",
    "Cluster",
    "Dependency",
    "DependencyItem",
    "DependencyType",
    "Gpu",
    "Job",
    "JobRequest",
    "JobState",
    "Limits",
    "Node",
    "NodeState",
    "Partition",
    "Qos",
    "Reservation",
    "SignalSpec",
    "Switch",
    "Topology",
    "TopologyKind",
    "UserAssoc",
]
