"""tide's YAML: schema errors with lines, NVLink patterns, and save -> load round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.config.errors import ConfigError
from tide.config.links import build_links, describe_links
from tide.config.loaded import LoadedCluster
from tide.config.loader import bundled_cluster, bundled_names, load_cluster
from tide.config.yaml_load import load_yaml_text
from tide.config.yaml_save import save_yaml
from tide.model import (
    Account,
    AccountTree,
    Block,
    Cluster,
    Gpu,
    Limits,
    Node,
    NodeState,
    Partition,
    Qos,
    Switch,
    Topology,
    TopologyKind,
    UserAssoc,
)
from tide.model.sched_config import BackfillMode, SchedulerConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "slurm"


def round_trip(loaded: LoadedCluster) -> LoadedCluster:
    again = load_yaml_text(save_yaml(loaded), "saved.yaml")
    assert again.warnings == []
    return again


@pytest.mark.parametrize("name", ["demo", "seed004"])
def test_bundled_round_trip(name: str) -> None:
    loaded = bundled_cluster(name)
    assert loaded.warnings == []
    assert round_trip(loaded).same_model(loaded)


def test_slurm_files_round_trip_through_yaml() -> None:
    loaded = load_cluster(EXAMPLES)
    assert round_trip(loaded).same_model(loaded)


def test_examples_equal_bundled_demo() -> None:
    """examples/slurm is the demo cluster in Slurm's own files."""
    from_slurm, bundled = load_cluster(EXAMPLES), bundled_cluster("demo")
    assert from_slurm.warnings == []
    assert from_slurm.config.extra  # daemon keys are kept...
    from_slurm.config.extra.clear()  # ...and are the only difference
    assert from_slurm.same_model(bundled)
    assert {"demo", "seed004"} <= set(bundled_names())


def test_demo_shape() -> None:
    c = bundled_cluster("demo").cluster
    n = c.nodes[0]
    assert (len(c.nodes), c.total_gpus, n.cpus, n.sockets, n.cores_per_socket) == (
        16, 128, 64, 2, 16)
    assert [g.socket for g in n.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert n.gpus[5].cores == tuple(range(16, 32))
    assert n.links[0] == [0, 2, 1, 1, 0, 0, 0, 0]
    assert n.links[6] == [0, 0, 0, 0, 1, 1, 0, 2]
    assert [(p.name, p.default) for p in c.partitions] == [("gpu", True), ("debug", False)]
    assert [s.name for s in c.topology.switches] == ["leaf1", "leaf2", "leaf3", "leaf4", "spine"]


SOCKETS = [0, 0, 0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize(
    ("spec", "row0", "row4"),
    [
        ("pairs", [0, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 0, 0]),
        ("quads", [0, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 1, 1]),
        ("socket", [0, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 1, 1]),
        ("all", [0, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1, 1, 1]),
        ("none", [0] * 8, [0] * 8),
        ({"pairs": 4, "all": 1}, [0, 4, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 4, 1, 1]),
        ({"all": 12}, [0] + [12] * 7, [12] * 4 + [0] + [12] * 3),
    ],
)
def test_link_patterns(spec: object, row0: list[int], row4: list[int]) -> None:
    m = build_links(spec, 8, SOCKETS)  # type: ignore[arg-type]
    assert (m[0], m[4]) == (row0, row4)
    assert build_links(describe_links(m, SOCKETS), 8, SOCKETS) == m  # type: ignore[arg-type]


def test_link_matrix_and_describe() -> None:
    odd = [[-1, 3, 0], [3, -1, 1], [0, 1, -1]]
    m = build_links(odd, 3, [None] * 3)
    assert m == [[0, 3, 0], [3, 0, 1], [0, 1, 0]]
    assert describe_links(m, [None] * 3) == m
    assert describe_links(build_links({"pairs": 2, "quads": 1}, 8, SOCKETS), SOCKETS) == {
        "pairs": 2, "quads": 1}
    assert describe_links([], []) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes:\n- names: n[1-2]\n  cpus: many\n",
         "x.yaml:3: nodes.0.cpus: Input should be a valid integer"),
        ("nodes:\n- names: n[1-\n", "x.yaml:2: nodes.0.names: unbalanced '['"),
        ("partitions:\n- name: p\n  max_time: 60\n",
         "x.yaml:3: partitions.0.max_time: 60 has no unit; write e.g. '60m'"),
        ("nodes:\n- names: n1\n  gpus: {count: 2, nvlink: rings}\n",
         "x.yaml:3: unknown NVLink pattern 'rings'"),
        ("nodes:\n- names: n1\n  gpus: {count: 2, sockets: [0, 1, 1]}\n",
         "x.yaml:3: sockets has 3 entries for 2 GPUs"),
        ("nodes:\n- names: n1\n  sockets: 2\n  gpus: {count: 2, sockets: [0, 5]}\n",
         "socket 5 does not exist (the node has 2)"),
        ("nodes:\n- names: n1\n  gpus: {nvlink: all}\n", "x.yaml:3: no GPU count"),
        ("nodes:\n- names: n1\n- names: n1\n", "x.yaml:3: node n1 is already in node group 0"),
        ("nodes:\n- names: n1\npartitions:\n- name: p\n  nodes: n2\n",
         "x.yaml:5: partition p: node n2 is not defined under nodes"),
        ("topology:\n  kind: block\nscheduler:\n  topology_plugin: topology/tree\n",
         "x.yaml:2: topology kind block but topology_plugin is topology/tree"),
        ("topology:\n  switches:\n  - {name: s, switches: t}\n",
         "x.yaml:3: switch s lists switch t, which is not defined"),
        ("accounts:\n  a: {parent: nowhere}\n", "x.yaml:2: account a: parent 'nowhere' is not"),
        ("users:\n- {user: u, account: ghost}\n", "x.yaml:2: user u: account 'ghost' is not"),
        ("users:\n- {user: u, account: root, admin_level: King}\n", "admin_level 'King'"),
        ("name: [unclosed\n", "x.yaml:2: not valid YAML"),
        ("scheduler:\n  policy: fifo\n", "x.yaml:2: scheduler.policy: Input should be"),
        ("scheduler:\n  victim_order: age\n", "x.yaml:2: scheduler.victim_order: Input"),
        ("- just a list\n", "x.yaml:1: the file is not a mapping"),
    ],
)
def test_yaml_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_yaml_text(text, "x.yaml")
    assert message in str(e.value)


def test_unknown_keys_warn_with_lines() -> None:
    loaded = load_yaml_text("name: c\nnodez: []\nnodes:\n- names: n1\n  gpu: {count: 1}\n",
                            "x.yaml")
    assert loaded.warnings == [
        "x.yaml:2: unknown key 'nodez' ignored (did you mean nodes?)",
        "x.yaml:5: unknown key 'nodes.0.gpu' ignored (did you mean gpus?)"]


def test_yaml_words_and_defaults() -> None:
    loaded = load_yaml_text(
        "nodes:\n- names: n[1-2]\n  memory: 2G\n  sockets: 2\n  cores_per_socket: 4\n"
        "  gpus: {count: 2, type: h100, cores: ['0-3', '4-7']}\n"
        "partitions:\n- {name: p, oversubscribe: NO}\n"
        "scheduler: {backfill: none, preempt_mode: OFF, bf_window: 2h}\n", "x.yaml")
    c, cfg = loaded.cluster, loaded.config
    n = c.nodes[0]
    assert (n.cpus, n.real_memory, [g.socket for g in n.gpus]) == (8, 2048, [0, 1])
    assert c.partitions[0].nodes == ("n1", "n2") and c.partitions[0].oversubscribe == "NO"
    assert (cfg.backfill, cfg.scheduler_type, cfg.preempt_mode, cfg.bf_window) == (
        BackfillMode.NONE, "sched/builtin", "OFF", 7200)
    assert (c.topology.kind, cfg.topology_plugin) == (TopologyKind.FLAT, "topology/flat")


def full_cluster() -> LoadedCluster:
    """Every field away from its default, to catch anything save_yaml forgets."""
    gpus = [Gpu(0, "a100", 0, (0, 1), "/dev/nvidia0"), Gpu(2, "v100", None, (), ""),
            Gpu(3, "a100", 1, (5,), "/dev/nvidia3")]
    nodes = [
        Node("x1", cpus=12, boards=2, sockets=2, cores_per_socket=3, threads_per_core=1,
             real_memory=999, gpus=gpus, links=[[0, 1, 2], [1, 0, 0], [3, 0, 0]],
             features=("f",), weight=7, partitions=("p",), state=NodeState.DRAIN,
             reason="why", address="10.0.0.1"),
        Node("y9", partitions=("p", "q"), state=NodeState.FUTURE, address="h"),
        Node("x2", partitions=("p",)),
    ]
    parts = [Partition("p", ("x1", "y9", "x2"), default=True, max_time=None, default_time=90,
                       max_nodes=3, min_nodes=0, priority_tier=4, priority_job_factor=9,
                       allow_accounts=("a",), allow_qos=("normal",), oversubscribe="FORCE:2",
                       state="DRAIN", preempt_mode="SUSPEND,GANG", requeue=False),
             Partition("q", ("y9",), max_time=61)]
    topo = Topology(TopologyKind.BLOCK, [Switch("s", ("x1",), (), 40)],
                    [Block("b", ("x1", "x2")), Block("c", ("y9",))], (1, 2))
    cfg = SchedulerConfig(
        scheduler_type="sched/custom", backfill=BackfillMode.EASY, bf_window=3601,
        bf_resolution=7, bf_max_job_test=3, bf_interval=2, bf_continue=True,
        default_queue_depth=5, priority_type="priority/basic", decay_half_life=0, max_age=1,
        favor_small=True, priority_flags=("F",), topology_plugin="topology/block",
        select_type="select/linear", select_type_parameters=(), max_switch_wait=0,
        preempt_type="preempt/qos", preempt_mode="CANCEL", extra={"K": "v"},
        policy="tide", victim_order="priority", sched_min_interval=0.25, batch_sched_delay=5)
    cfg.weights.age, cfg.weights.tres = 3, {"gres/gpu": 1.5}
    lim = Limits(grp_tres={"cpu": 1}, grp_jobs=0, grp_submit_jobs=2, max_jobs=3,
                 max_submit_jobs=4, max_tres_per_job={"node": 2}, max_tres_per_user={"mem": 5},
                 max_tres_per_node={"gres/gpu": 1}, max_wall=60, max_jobs_per_user=6,
                 max_submit_jobs_per_user=7)
    tree = AccountTree(cluster="other")
    tree.accounts["root"].fairshare = 5
    tree.accounts["a"] = Account("a", fairshare=-1, limits=lim, description="d",
                                 organization="o", qos=("normal",), default_qos="normal",
                                 priority=3)
    tree.accounts["b"] = Account("b", parent="a", fairshare=0)
    tree.users = [UserAssoc("u", "b", fairshare=2, limits=Limits(max_wall=None, max_jobs=1),
                            qos=("gold",), default_qos="gold", priority=0,
                            admin_level="Operator", default_account=True),
                  UserAssoc("u", "a")]
    tree.qos["gold"] = Qos("gold", priority=5, limits=lim, preempt=("normal",),
                           preempt_mode="REQUEUE", preempt_exempt_time=120, grace_time=30,
                           usage_factor=0.25, flags=("DenyOnLimit",))
    return LoadedCluster(Cluster("full", nodes, parts, topo), cfg, tree)


def test_every_field_round_trips() -> None:
    loaded = full_cluster()
    again = round_trip(loaded)
    assert again.cluster == loaded.cluster
    assert again.config == loaded.config
    assert again.accounts == loaded.accounts


@st.composite
def gpu_nodes(draw: st.DrawFn) -> Node:
    sockets = draw(st.integers(1, 2))
    cps = draw(st.integers(1, 4))
    n = draw(st.integers(0, 4))
    indices = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n, unique=True))
    core_ids = st.integers(0, sockets * cps - 1)
    gpus = [Gpu(i, draw(st.sampled_from(["", "a100", "h100"])),
                draw(st.none() | st.integers(0, sockets - 1)),
                tuple(sorted(draw(st.sets(core_ids, max_size=3)))),
                draw(st.sampled_from(["", f"/dev/nvidia{i}", f"/dev/x{i}"])))
            for i in indices]
    links: list[list[int]] = []
    if n and draw(st.booleans()):
        links = [[0 if i == j else draw(st.integers(0, 3)) for j in range(n)] for i in range(n)]
    return Node(draw(st.sampled_from(["a", "b"])), cpus=sockets * cps, sockets=sockets,
                cores_per_socket=cps, gpus=gpus, links=links)


@settings(max_examples=150, deadline=None)
@given(st.lists(gpu_nodes(), min_size=1, max_size=4))
def test_random_gpu_layouts_round_trip(nodes: list[Node]) -> None:
    for i, node in enumerate(nodes):
        node.name = f"{node.name}{i:02d}"
    loaded = LoadedCluster(Cluster("r", nodes), SchedulerConfig(), AccountTree(cluster="r"))
    assert round_trip(loaded).cluster == loaded.cluster


def test_docs_example_loads() -> None:
    """The schema example in docs/cluster.md stays valid."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cluster.md").read_text()
    loaded = load_yaml_text(doc.split("```yaml\n")[1].split("```")[0], "doc.yaml")
    assert loaded.warnings == []
    assert loaded.cluster.nodes[0].links[0] == [0, 2, 1, 1, 0, 0, 0, 0]
    assert loaded.cluster.nodes[15].address == "10.0.0.16"
