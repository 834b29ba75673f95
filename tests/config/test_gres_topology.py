"""gres.conf (GPU devices, cores, sockets, NVLinks) and topology.conf (switches, blocks)."""

from __future__ import annotations

import pytest

from tide.config.errors import ConfigError, Warnings
from tide.config.gres_conf import parse_gres_conf
from tide.config.slurm_conf import SlurmConf, parse_slurm_conf
from tide.config.topology_conf import parse_topology_conf
from tide.model import NodeState, TopologyKind

NODES = ("ClusterName=c\nNodeName=DEFAULT Sockets=2 CoresPerSocket=8 Gres=gpu:a100:4\n"
         "NodeName=n[1-2]\nNodeName=cpu1 Gres=\nPartitionName=p Nodes=ALL\n")


def with_gres(gres: str, nodes: str = NODES) -> SlurmConf:
    conf = parse_slurm_conf(nodes)
    parse_gres_conf(gres, conf.nodes, conf.gres, conf.warnings)
    return conf


def test_files_cores_and_sockets() -> None:
    c = with_gres("Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-7\n"
                  "Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=8-15\n")
    n = c.nodes[0]
    assert [(g.index, g.file, g.socket, g.cores[0], len(g.cores)) for g in n.gpus] == [
        (0, "/dev/nvidia0", 0, 0, 8), (1, "/dev/nvidia1", 0, 0, 8),
        (2, "/dev/nvidia2", 1, 8, 8), (3, "/dev/nvidia3", 1, 8, 8)]
    assert n.links == []
    assert c.nodes[2].gpus == []  # cpu1 has no Gres: global lines skip it
    assert list(c.warnings) == []


def test_links_matrix_and_cross_socket_cores() -> None:
    gres = "".join(
        f"NodeName=n[1-2] Name=gpu File=/dev/nvidia{i} Cores=0-15 Links={row}\n"
        for i, row in enumerate(["-1,2,0,0", "2,-1,0,0", "0,0,-1,4", "0,0,4,-1"]))
    n = with_gres(gres).nodes[1]
    assert n.links == [[0, 2, 0, 0], [2, 0, 0, 0], [0, 0, 0, 4], [0, 0, 4, 0]]
    assert [g.type for g in n.gpus] == ["a100"] * 4  # inherited from Gres=gpu:a100:4
    assert all(g.socket is None for g in n.gpus)  # cores span both sockets


def test_count_lines_and_nodename_scope() -> None:
    c = with_gres("NodeName=n1 Name=gpu Count=4\nNodeName=n2 Name=gpu File=/dev/nvidia[4-7]\n")
    assert [g.index for g in c.nodes[0].gpus] == [0, 1, 2, 3]
    assert [g.index for g in c.nodes[1].gpus] == [4, 5, 6, 7]


def test_fewer_devices_drain_the_node() -> None:
    c = with_gres("NodeName=n1 Name=gpu File=/dev/nvidia[0-1]\n"
                  "NodeName=n2 Name=gpu File=/dev/nvidia[0-5]\n")
    n1, n2 = c.nodes[0], c.nodes[1]
    assert (n1.gpu_count, n1.state) == (2, NodeState.DRAIN)
    assert n1.reason == "gres/gpu count reported lower than configured"
    assert (n2.gpu_count, n2.state) == (4, NodeState.IDLE)
    assert sorted(c.warnings) == [
        "gres.conf: n1: slurm.conf Gres has 4 GPUs but gres.conf describes 2 (drained, as "
        "Slurm does)",
        "gres.conf: n2: slurm.conf Gres has 4 GPUs but gres.conf describes 6 (extra devices "
        "ignored)"]


def test_autodetect_and_unknown_keys_warn() -> None:
    c = with_gres("AutoDetect=nvml\nName=mps Count=100\nNodeName=n1 Name=gpu Count=4 Foo=1\n")
    assert c.nodes[1].gpu_count == 4  # n2 keeps the slurm.conf count
    text = "\n".join(c.warnings)
    assert "gres.conf:3: unknown gres.conf key 'Foo' ignored" in text
    assert "gres.conf:2: GRES 'mps' is not modelled" in text
    assert "n2: GPU cores and NVLinks unknown (AutoDetect finds them at run time)" in text


@pytest.mark.parametrize(
    ("gres", "message"),
    [
        ("Type=a100 File=/dev/nvidia0", "gres.conf:1: gres.conf line has no Name="),
        ("Name=gpu File=/dev/nvidia[0-1] Links=-1,1", "gres.conf:1: Links= needs exactly one "
         "device"),
        ("NodeName=n1 Name=gpu File=/dev/nvidia0 Links=-1,2\nNodeName=n1 Name=gpu "
         "File=/dev/nvidia1 Links=2,-1,0\n", "gres.conf:2: node n1: Links has 3 values but the "
         "node has 2 GPUs"),
        ("Name=gpu File=/dev/nvidia0 Links=-1,x", "Links='-1,x' is not a list of numbers"),
        ("Name=gpu File=/dev/nvidia0 Cores=a-b", "Cores='a-b' is not a core list"),
        ("Name=gpu File=/dev/nvidia[0-1] Count=3", "Count=3 but File names 2 devices"),
        ("NodeName=zz Name=gpu Count=1", "NodeName names zz, not defined in slurm.conf"),
        ("NodeName=n1 Name=gpu File=/dev/nvidia0\nNodeName=n1 Name=gpu File=/dev/nvidia0",
         "gres.conf:2: node n1: GPU 0 is already described at line 1"),
    ],
)
def test_gres_errors(gres: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        with_gres(gres)
    assert message in str(e.value)


TREE_NODES = "ClusterName=c\nNodeName=n[01-08]\nNodeName=lonely\nPartitionName=p Nodes=ALL\n"


def test_tree_depth_three() -> None:
    conf = parse_slurm_conf(TREE_NODES)
    warn = Warnings()
    topo = parse_topology_conf(
        "SwitchName=l1 Nodes=n[01-02]\nSwitchName=l2 Nodes=n[03-04]\n"
        "SwitchName=l3 Nodes=n[05-06]\nSwitchName=l4 Nodes=n[07-08],ghost LinkSpeed=100\n"
        "SwitchName=s1 Switches=l[1-2]\nSwitchName=s2 Switches=l[3-4]\n"
        "SwitchName=core Switches=s[1-2]\n", conf.nodes, "topology/tree", warn)
    assert topo.kind is TopologyKind.TREE
    assert [(s.name, s.nodes, s.switches) for s in topo.switches][3:] == [
        ("l4", ("n07", "n08"), ()), ("s1", (), ("l1", "l2")), ("s2", (), ("l3", "l4")),
        ("core", (), ("s1", "s2"))]
    assert topo.switches[3].link_speed == 100
    assert list(warn) == ["topology.conf:4: ghost not defined in slurm.conf (ignored)",
                          "topology.conf: lonely under no leaf switch (Slurm cannot place "
                          "multi-node jobs across them)"]


def test_blocks() -> None:
    conf = parse_slurm_conf(TREE_NODES)
    topo = parse_topology_conf("BlockName=b1 Nodes=n[01-04]\nBlockName=b2 Nodes=n[05-08]\n"
                               "BlockSizes=4,8\n", conf.nodes, "topology/block", Warnings())
    assert topo.kind is TopologyKind.BLOCK
    assert [(b.name, len(b.nodes)) for b in topo.blocks] == [("b1", 4), ("b2", 4)]
    assert topo.block_sizes == (4, 8)


def test_flat_plugin_keeps_switches_with_warning() -> None:
    conf = parse_slurm_conf(TREE_NODES)
    warn = Warnings()
    topo = parse_topology_conf("SwitchName=s Nodes=n[01-08]", conf.nodes, "", warn)
    assert topo.kind is TopologyKind.FLAT and len(topo.switches) == 1
    assert "Slurm ignores topology.conf" in warn[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SwitchName=s Switches=t", "topology.conf:1: switch s lists switch t, which is not "
         "defined; define switch t"),
        ("SwitchName=a Switches=b\nSwitchName=b Switches=a", "switch loop a -> b -> a"),
        ("SwitchName=a Nodes=n01 Switches=b", "switch a has both Nodes= and Switches="),
        ("SwitchName=a Nodes=n01\nSwitchName=a Nodes=n02", "topology.conf:2: switch a is "
         "already defined at line 1"),
        ("Nodes=n01", "Nodes does not start a topology.conf line"),
        ("BlockSizes=4,x", "BlockSizes='x' is not a number"),
    ],
)
def test_topology_errors(text: str, message: str) -> None:
    conf = parse_slurm_conf(TREE_NODES)
    with pytest.raises(ConfigError) as e:
        parse_topology_conf(text, conf.nodes, "topology/tree", Warnings())
    assert message in str(e.value)


def test_type_mismatch_warns() -> None:
    c = with_gres("NodeName=n[1-2] Name=gpu Type=v100 File=/dev/nvidia[0-3]\n")
    assert [g.type for g in c.nodes[0].gpus] == ["v100"] * 4
    assert list(c.warnings) == ["gres.conf: n[1-2]: GPU types differ: slurm.conf "
                                "Gres=gpu:a100:4, gres.conf gpu:v100:4"]
