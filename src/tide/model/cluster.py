"""Cluster model: nodes, GPUs, switches, blocks, partitions.

Names follow Slurm (slurm.conf, gres.conf, topology.conf) so an administrator
recognises every field. These classes are static description; what is free
right now lives in the scheduler's state (tide.sched.state), not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class NodeState(StrEnum):
    """Administrative / health state of a node (Slurm's base states)."""

    IDLE = "IDLE"  # usable; the scheduler derives ALLOCATED/MIXED from usage
    DRAIN = "DRAIN"  # no new jobs; running ones finish
    DOWN = "DOWN"  # unusable; running jobs fail (NODE_FAIL)
    FUTURE = "FUTURE"  # declared, not yet present

    @property
    def schedulable(self) -> bool:
        return self is NodeState.IDLE


@dataclass(slots=True)
class Gpu:
    """One GPU device of a node (a gres.conf File= entry)."""

    index: int  # device index on the node (CUDA_VISIBLE_DEVICES value)
    type: str = ""  # e.g. "a100"; "" when untyped
    socket: int | None = None  # socket whose cores are close (from Cores=)
    cores: tuple[int, ...] = ()  # core ids with affinity (gres.conf Cores=)
    file: str = ""  # device file, e.g. /dev/nvidia0


@dataclass(slots=True)
class Node:
    name: str
    cpus: int = 1  # logical CPUs (threads)
    boards: int = 1
    sockets: int = 1
    cores_per_socket: int = 1
    threads_per_core: int = 1
    real_memory: int = 1  # MB, like slurm.conf RealMemory
    gpus: list[Gpu] = field(default_factory=list)
    # links[i][j]: NVLink count between GPU i and j (gres.conf Links), 0 = PCIe.
    links: list[list[int]] = field(default_factory=list)
    features: tuple[str, ...] = ()
    weight: int = 1
    partitions: tuple[str, ...] = ()
    state: NodeState = NodeState.IDLE
    reason: str = ""
    address: str = ""  # NodeAddr / NodeHostname, for executors

    @property
    def cores(self) -> int:
        """Physical cores: the unit cons_tres allocates with CR_Core."""
        return self.boards * self.sockets * self.cores_per_socket

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    def socket_of_core(self, core: int) -> int:
        return core // max(1, self.cores_per_socket)

    def gpu_type(self) -> str:
        return self.gpus[0].type if self.gpus else ""


@dataclass(slots=True)
class Switch:
    """A switch of topology/tree: a leaf lists nodes, an upper one lists switches."""

    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    link_speed: int = 1

    @property
    def is_leaf(self) -> bool:
        return not self.switches


@dataclass(slots=True)
class Block:
    """A block of topology/block: nodes with the best interconnect among them."""

    name: str
    nodes: tuple[str, ...]


@dataclass(slots=True)
class Partition:
    name: str
    nodes: tuple[str, ...] = ()
    default: bool = False
    max_time: int | None = None  # seconds; None = UNLIMITED
    default_time: int | None = None
    max_nodes: int | None = None
    min_nodes: int = 1
    priority_tier: int = 1
    priority_job_factor: int = 1
    allow_accounts: tuple[str, ...] = ()  # () = ALL
    allow_qos: tuple[str, ...] = ()  # () = ALL
    deny_accounts: tuple[str, ...] = ()  # used only without allow_accounts, as Slurm
    deny_qos: tuple[str, ...] = ()  # used only without allow_qos
    oversubscribe: str = "NO"
    state: str = "UP"  # UP, DOWN, DRAIN, INACTIVE
    preempt_mode: str = ""
    requeue: bool | None = None  # partition default for --requeue
    grace_time: int = 0  # GraceTime: seconds a preempted job gets (preempt/partition_prio)

    def refuses_account(self, account: str) -> bool:
        """AllowAccounts, else DenyAccounts (slurm.conf: a Deny list is not
        enforced when an Allow list is given)."""
        if self.allow_accounts:
            return account not in self.allow_accounts
        return account in self.deny_accounts

    def refuses_qos(self, qos: str) -> bool:
        """AllowQos, else DenyQos."""
        if self.allow_qos:
            return qos not in self.allow_qos
        return qos in self.deny_qos


class TopologyKind(StrEnum):
    FLAT = "flat"  # topology/flat (Slurm's default: none)
    TREE = "tree"
    BLOCK = "block"


@dataclass(slots=True)
class Topology:
    kind: TopologyKind = TopologyKind.FLAT
    switches: list[Switch] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    block_sizes: tuple[int, ...] = ()  # BlockSizes; () = the base block size only


@dataclass(slots=True)
class Cluster:
    name: str = "tide"
    nodes: list[Node] = field(default_factory=list)
    partitions: list[Partition] = field(default_factory=list)
    topology: Topology = field(default_factory=Topology)
    # GPU type -> peak TFLOPS, over tide.model.gpu_peaks (the MFU denominator)
    gpu_peak_tflops: dict[str, float] = field(default_factory=dict)
    # tide user -> OS user its jobs run as (cluster YAML user_map); unmapped: same name
    user_map: dict[str, str] = field(default_factory=dict)

    def node_index(self) -> dict[str, int]:
        return {n.name: i for i, n in enumerate(self.nodes)}

    def partition(self, name: str) -> Partition | None:
        for p in self.partitions:
            if p.name == name:
                return p
        return None

    def default_partition(self) -> Partition | None:
        for p in self.partitions:
            if p.default:
                return p
        return self.partitions[0] if self.partitions else None

    @property
    def total_gpus(self) -> int:
        return sum(n.gpu_count for n in self.nodes)
