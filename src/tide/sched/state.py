"""Usage: what is free on every node right now, kept incrementally.

GPUs are tracked as a bitmask per node (so in-node placement can pick exact
device indices), cores as a Python int bitmask per node, memory as MB.
`allocate`/`release` are O(nodes of the job); nothing rescans the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tide.sched.index import ClusterIndex
from tide.sched.types import Allocation


class OverAllocation(ValueError):
    """An allocation asked for something already taken: a bug upstream."""


def _bits(indices: Iterable[int]) -> int:
    m = 0
    for i in indices:
        m |= 1 << i
    return m


@dataclass(slots=True)
class Usage:
    index: ClusterIndex
    gpu_mask: np.ndarray  # uint64 free-GPU bitmask per node
    free_gpus: np.ndarray  # int32
    free_cores: np.ndarray  # int32
    core_mask: list[int]  # free-core bitmask per node
    free_mem: np.ndarray  # int64 MB
    usable: np.ndarray  # bool: node may take new work (state IDLE)

    @classmethod
    def empty(cls, index: ClusterIndex) -> Usage:
        gpus = index.gpus.astype(np.int64)
        mask = np.where(
            gpus >= 64,
            np.uint64(2**64 - 1),
            (np.uint64(1) << gpus.astype(np.uint64)) - np.uint64(1),
        )
        return cls(
            index=index,
            gpu_mask=mask.astype(np.uint64),
            free_gpus=index.gpus.copy(),
            free_cores=index.cores.copy(),
            core_mask=[(1 << int(c)) - 1 for c in index.cores],
            free_mem=index.mem.copy(),
            usable=index.up.copy(),
        )

    def copy(self) -> Usage:
        return Usage(
            self.index,
            self.gpu_mask.copy(),
            self.free_gpus.copy(),
            self.free_cores.copy(),
            list(self.core_mask),
            self.free_mem.copy(),
            self.usable.copy(),
        )

    def idle(self) -> np.ndarray:
        """Nodes with nothing allocated (for --exclusive)."""
        ix = self.index
        return (
            (self.free_gpus == ix.gpus) & (self.free_cores == ix.cores) & (self.free_mem == ix.mem)
        )

    def allocate(self, alloc: Allocation) -> None:
        for na in alloc.nodes:
            g, c = _bits(na.gpus), _bits(na.cores)
            have = int(self.gpu_mask[na.node])
            if have & g != g or self.core_mask[na.node] & c != c or self.free_mem[na.node] < na.mem:
                raise OverAllocation(
                    f"job {alloc.job_id}: node {self.index.names[na.node]} lacks "
                    f"gpus {na.gpus} / cores {na.cores} / {na.mem} MB"
                )
            self.gpu_mask[na.node] = np.uint64(have & ~g)
            self.core_mask[na.node] &= ~c
            self.free_gpus[na.node] -= len(na.gpus)
            self.free_cores[na.node] -= len(na.cores)
            self.free_mem[na.node] -= na.mem

    def release(self, alloc: Allocation) -> None:
        for na in alloc.nodes:
            g, c = _bits(na.gpus), _bits(na.cores)
            self.gpu_mask[na.node] = np.uint64(int(self.gpu_mask[na.node]) | g)
            self.core_mask[na.node] |= c
            self.free_gpus[na.node] += len(na.gpus)
            self.free_cores[na.node] += len(na.cores)
            self.free_mem[na.node] += na.mem

    def set_usable(self, node: int, usable: bool) -> None:
        self.usable[node] = usable
