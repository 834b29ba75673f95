"""A real multi-node Ray cluster on this machine for the Ray executor's tests.

One head (no CPUs: it runs no jobs) and three worker nodes, each a separate
raylet with its own resources and tide labels, all on 127.0.0.1
(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 must be set before ray is imported, or
Ray binds to and dials the network interface's address). Health checks are
faster than Ray's defaults, so a killed node is declared dead in about 5 s.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

FAST_HEALTH = {  # ~5 s to declare a node dead; tighter, a loaded CI machine loses live nodes
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 5,
}
WORKERS = {  # tide name -> leaf switch
    "gpu01": "leaf1",
    "gpu02": "leaf1",
    "gpu03": "leaf2",
}


def worker_args(name: str, switch: str) -> dict[str, Any]:
    return {
        "num_cpus": 2,
        "num_gpus": 2,  # Ray takes the count on trust: CUDA_VISIBLE_DEVICES per node is testable
        "labels": {"tide.node": name, "tide.switch": switch, "tide.gpu_type": "a100"},
    }


@dataclass
class RayTestCluster:
    cluster: Any
    nodes: dict[str, Any] = field(default_factory=dict)  # tide name -> ray Node
    started_in: float = 0.0

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def node_id(self, name: str) -> str:
        return str(self.nodes[name].node_id)

    def add(self, name: str, switch: str) -> None:
        self.nodes[name] = self.cluster.add_node(**worker_args(name, switch))

    def kill(self, name: str) -> None:
        """The node's raylet and everything Ray runs there die at once."""
        self.cluster.remove_node(self.nodes.pop(name), allow_graceful=False)


def start() -> RayTestCluster:
    from ray.cluster_utils import Cluster

    t0 = time.monotonic()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "_system_config": FAST_HEALTH},
    )
    tc = RayTestCluster(cluster)
    try:
        for name, switch in WORKERS.items():
            tc.add(name, switch)
        cluster.wait_for_nodes()
    except BaseException:
        cluster.shutdown()
        raise
    tc.started_in = time.monotonic() - t0
    return tc
