"""Ray's node table -> tide nodes, topology and a bound cluster file: pure
functions, tested on ray.nodes()-shaped data (no Ray needed)."""

from __future__ import annotations

import pytest

from tide.exec.ray.cluster import (
    ABSENT,
    RayNode,
    bind_cluster,
    cluster_from_ray,
    node_names,
)
from tide.model import Cluster, Node, NodeState
from tide.model.cluster import TopologyKind


def info(node_id: str, alive: bool = True, host: str = "h1", **labels: str) -> dict:
    return {
        "NodeID": node_id,
        "Alive": alive,
        "NodeManagerAddress": "10.0.0." + node_id[-1],
        "NodeManagerHostname": host,
        "Resources": {"CPU": 16.0, "GPU": 4.0, "memory": 64 * 2.0**30},
        "Labels": {k.replace("_", ".", 1): v for k, v in labels.items()},
    }


HEAD = {
    "NodeID": "head0",
    "Alive": True,
    "NodeManagerAddress": "10.0.0.0",
    "NodeManagerHostname": "h0",
    "Resources": {"node:__internal_head__": 1.0, "memory": 1.0},
    "Labels": {},
}


def test_labels_name_nodes_and_give_type_and_switches() -> None:
    nodes = [RayNode.from_info(i) for i in (
        HEAD,
        info("a1", tide_node="gpu01", tide_switch="leaf1", tide_gpu_type="a100"),
        info("a2", tide_node="gpu02", tide_switch="leaf2", tide_gpu_type="a100"),
    )]  # fmt: skip
    cluster = cluster_from_ray(nodes)
    assert [n.name for n in cluster.nodes] == ["gpu01", "gpu02"]  # the CPU-less head is not
    n = cluster.nodes[0]
    assert (n.cpus, n.gpu_count, n.gpu_type(), n.real_memory, n.address) == (
        16, 4, "a100", 65536, "10.0.0.1",
    )  # fmt: skip
    assert cluster.topology.kind == TopologyKind.TREE
    leaves = {s.name: s.nodes for s in cluster.topology.switches if s.is_leaf}
    assert leaves == {"leaf1": ("gpu01",), "leaf2": ("gpu02",)}
    assert cluster.partitions[0].name == "ray" and cluster.partitions[0].default


def test_unlabelled_nodes_take_unique_host_names_else_ids() -> None:
    nodes = [RayNode.from_info(i) for i in (
        info("b1", host="solo"), info("b2", host="twin"), info("b3", host="twin"),
    )]  # fmt: skip
    assert sorted(node_names(nodes)) == ["ray-b2", "ray-b3", "solo"]


def test_a_machine_that_came_back_is_its_live_entry() -> None:
    old = info("c1", alive=False, tide_node="gpu01")
    new = info("c2", tide_node="gpu01")
    for order in ([old, new], [new, old]):
        named = node_names([RayNode.from_info(i) for i in order])
        assert named["gpu01"].node_id == "c2"


def test_blocks_when_there_are_no_switches() -> None:
    nodes = [RayNode.from_info(info(f"d{i}", tide_node=f"n{i}", tide_block=f"b{i // 2}"))
             for i in range(4)]  # fmt: skip
    topo = cluster_from_ray(nodes).topology
    assert topo.kind == TopologyKind.BLOCK
    assert {b.name: b.nodes for b in topo.blocks} == {"b0": ("n0", "n1"), "b1": ("n2", "n3")}


def test_a_cluster_file_is_bound_to_ray_nodes() -> None:
    file = Cluster(name="f", nodes=[Node("gpu01"), Node("gpu02", address="old")])
    bound = bind_cluster(file, [RayNode.from_info(info("e7", tide_node="gpu02"))])
    gpu01, gpu02 = bound.nodes
    assert (gpu01.state, gpu01.reason) == (NodeState.DOWN, ABSENT)
    assert (gpu02.state, gpu02.address) == (NodeState.IDLE, "10.0.0.7")


def test_no_usable_node_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="ray start --address"):
        cluster_from_ray([RayNode.from_info(HEAD)])


def test_unreachable_ray_address_is_one_clear_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    pytest.importorskip("ray", reason="the Ray executor needs ray: pip install 'tide[ray]'")
    cmd = [sys.executable, "-m", "tide.server", "--data-dir", str(tmp_path)]
    cmd += ["--executor", "ray", "--ray-address", "127.0.0.1:1", "--single-user"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    text = " ".join(done.stderr.replace("│", " ").split())  # the error box wraps lines
    assert done.returncode == 2, done.stderr
    assert "nothing answers there" in text and "Traceback" not in text
    assert "ray start --head" in text


def test_each_ray_cluster_and_namespace_has_its_own_state_folder() -> None:
    """Agents of two Ray clusters on one machine (or of one cluster started
    again) must not share job folders: job ids collide there."""
    from tide.exec.ray.executor import default_state_root

    def head(node_id: str) -> RayNode:
        return RayNode(node_id, True, "127.0.0.1", "h", {"node:__internal_head__": 1.0})

    worker = RayNode("w" * 56, True, "127.0.0.1", "h", {"CPU": 4.0})
    one = default_state_root([head("a" * 56), worker], "tide")
    assert one == default_state_root([worker, head("a" * 56)], "tide")  # a restarted controller
    assert one != default_state_root([head("b" * 56), worker], "tide")  # another cluster
    assert one != default_state_root([head("a" * 56), worker], "other")  # another tide
    assert one.endswith("tide-" + "a" * 16)
