"""slurm.conf: nodes, partitions and scheduling keys, with DEFAULT lines, hostlists and errors."""

from __future__ import annotations

import pytest

from tide.config.errors import ConfigError, Warnings
from tide.config.slurm_conf import SlurmConf, parse_slurm_conf
from tide.model import NodeState
from tide.model.sched_config import BackfillMode

BASE = "ClusterName=c1\n"


def parse(text: str) -> SlurmConf:
    return parse_slurm_conf(BASE + text)


def test_node_defaults_and_ranges() -> None:
    c = parse(
        "NodeName=DEFAULT CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 \\\n"
        "  RealMemory=512000 Gres=gpu:a100:8 Feature=a100,ib\n"
        "NodeName=gpu[01-02,05]\n"
        "NodeName=DEFAULT Gres=gpu:2 RealMemory=1000\n"  # later DEFAULT overrides single keys
        "nodename=small1 weight=5 state=DRAIN nodeaddr=10.0.0.9\n"
        "PartitionName=p Nodes=ALL\n"
    )
    assert [n.name for n in c.nodes] == ["gpu01", "gpu02", "gpu05", "small1"]
    big, small = c.nodes[0], c.nodes[3]
    assert (big.cpus, big.sockets, big.cores_per_socket, big.threads_per_core) == (64, 2, 16, 2)
    assert (big.real_memory, big.features, big.gpu_count, big.gpu_type()) == (
        512000, ("a100", "ib"), 8, "a100")
    assert [g.index for g in big.gpus] == list(range(8))
    assert (small.cpus, small.real_memory, small.gpu_count, small.gpu_type()) == (64, 1000, 2, "")
    assert (small.weight, small.state, small.address, small.features) == (
        5, NodeState.DRAIN, "10.0.0.9", ("a100", "ib"))
    assert c.gres["gpu01"].gpus == [("a100", 8)]


@pytest.mark.parametrize(
    ("line", "shape"),
    [
        ("NodeName=n CPUs=64", (64, 64, 1, 1)),  # Sockets inferred from CPUs
        ("NodeName=n CPUs=64 CoresPerSocket=16 ThreadsPerCore=2", (64, 2, 16, 2)),
        ("NodeName=n Sockets=2 CoresPerSocket=8", (16, 2, 8, 1)),  # CPUs from the shape
        ("NodeName=n Procs=8", (8, 8, 1, 1)),
        ("NodeName=n Boards=2 SocketsPerBoard=2 CoresPerSocket=4", (16, 2, 4, 1)),
    ],
)
def test_node_shape(line: str, shape: tuple[int, int, int, int]) -> None:
    n = parse(line + "\nPartitionName=p Nodes=ALL").nodes[0]
    assert (n.cpus, n.sockets, n.cores_per_socket, n.threads_per_core) == shape


@pytest.mark.parametrize(
    ("state", "expected"),
    [("UNKNOWN", NodeState.IDLE), ("IDLE", NodeState.IDLE), ("CLOUD", NodeState.IDLE),
     ("DOWN", NodeState.DOWN), ("FAIL", NodeState.DOWN), ("DRAIN", NodeState.DRAIN),
     ("FUTURE", NodeState.FUTURE)],
)
def test_node_states(state: str, expected: NodeState) -> None:
    assert parse(f"NodeName=n State={state}\nPartitionName=p Nodes=ALL").nodes[0].state is expected


def test_gres_forms() -> None:
    c = parse("NodeName=a Gres=gpu:a100:4,gpu:v100:2\nNodeName=b Gres=gpu:8(S:0-1),nvme:1\n"
              "NodeName=c Gres=gpu:a100:no_consume:2\nPartitionName=p Nodes=ALL")
    assert [g.type for g in c.nodes[0].gpus] == ["a100"] * 4 + ["v100"] * 2
    assert c.nodes[1].gpu_count == 8
    assert c.nodes[2].gpu_count == 2
    assert any("Gres 'nvme' is not modelled" in w for w in c.warnings)


def test_partitions() -> None:
    c = parse(
        "NodeName=n[1-4]\n"
        "PartitionName=DEFAULT State=UP MaxTime=1-00:00:00 AllowQos=normal,high\n"
        "PartitionName=batch Nodes=n[1-3] Default=YES DefaultTime=30 MaxNodes=UNLIMITED "
        "PriorityTier=2 PriorityJobFactor=5 AllowAccounts=ALL OverSubscribe=FORCE:4 "
        "PreemptMode=requeue Requeue=YES\n"
        "PartitionName=all Nodes=ALL MaxTime=INFINITE MinNodes=2 State=DRAIN Shared=NO "
        "Priority=7 AllowAccounts=a,b\n"
    )
    batch, every = c.partitions
    assert batch.nodes == ("n1", "n2", "n3") and batch.default
    assert (batch.max_time, batch.default_time, batch.max_nodes) == (86400, 1800, None)
    assert (batch.priority_tier, batch.priority_job_factor) == (2, 5)
    assert (batch.allow_accounts, batch.allow_qos) == ((), ("normal", "high"))
    assert (batch.oversubscribe, batch.preempt_mode, batch.requeue) == ("FORCE:4", "REQUEUE", True)
    assert every.nodes == ("n1", "n2", "n3", "n4") and not every.default
    assert (every.max_time, every.min_nodes, every.state) == (None, 2, "DRAIN")
    assert (every.priority_tier, every.priority_job_factor, every.allow_accounts) == (
        7, 7, ("a", "b"))
    assert c.nodes[0].partitions == ("batch", "all") and c.nodes[3].partitions == ("all",)


def test_deny_accounts_and_qos_apply_without_an_allow_list() -> None:
    """DenyAccounts/DenyQos, as slurm.conf(5): not enforced where AllowAccounts /
    AllowQos is given."""
    c = parse(
        "NodeName=n[1-2]\n"
        "PartitionName=p Nodes=ALL DenyAccounts=guests,ext DenyQos=scavenger\n"
        "PartitionName=q Nodes=ALL AllowAccounts=a DenyAccounts=a\n"
    )
    p, q = c.partitions
    assert (p.deny_accounts, p.deny_qos) == (("guests", "ext"), ("scavenger",))
    assert p.refuses_account("ext") and not p.refuses_account("a")
    assert p.refuses_qos("scavenger") and not p.refuses_qos("normal")
    assert not q.refuses_account("a") and q.refuses_account("b")  # the Allow list wins
    assert not any("DenyAccounts" in w for w in c.warnings)


def test_nodeset_and_downnodes() -> None:
    c = parse("NodeName=n[1-2] Feature=a100\nNodeName=m1\nNodeSet=fast Feature=a100\n"
              "NodeSet=other Nodes=m1\nPartitionName=p Nodes=fast,other\n"
              'DownNodes=n2 State=DRAIN Reason="bad dimm"\n')
    assert c.partitions[0].nodes == ("n1", "n2", "m1")
    assert (c.nodes[1].state, c.nodes[1].reason) == (NodeState.DRAIN, "bad dimm")


def test_scheduler_keys() -> None:
    c = parse(
        "SchedulerType=sched/backfill\n"
        "SchedulerParameters=bf_window=2880,bf_resolution=120,bf_max_job_test=300,"
        "bf_interval=15,bf_continue,default_queue_depth=50,max_switch_wait=900,"
        "bf_busy_nodes\n"
        "PriorityType=priority/multifactor\nPriorityWeightAge=1000\nPriorityWeightFairshare=2\n"
        "PriorityWeightJobSize=3\nPriorityWeightPartition=4\nPriorityWeightQOS=5\n"
        "PriorityWeightAssoc=6\nPriorityWeightTRES=CPU=1000,GRES/gpu=3000\n"
        "PriorityDecayHalfLife=7-0\nPriorityMaxAge=00:10:00\nPriorityFavorSmall=YES\n"
        "PriorityFlags=SMALL_RELATIVE_TO_TIME,MAX_TRES\nTopologyPlugin=topology/tree\n"
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory,CR_ONE_TASK_PER_CORE\n"
        "PreemptType=preempt/qos\nPreemptMode=SUSPEND,GANG\n"
    )
    cfg = c.config
    assert c.cluster_name == "c1"
    assert cfg.backfill is BackfillMode.CONSERVATIVE
    assert (cfg.bf_window, cfg.bf_resolution, cfg.bf_max_job_test, cfg.bf_interval) == (
        2880 * 60, 120, 300, 15)
    assert (cfg.bf_continue, cfg.default_queue_depth, cfg.max_switch_wait) == (True, 50, 900)
    w = cfg.weights
    assert (w.age, w.fairshare, w.job_size, w.partition, w.qos, w.assoc) == (1000, 2, 3, 4, 5, 6)
    assert w.tres == {"cpu": 1000.0, "gres/gpu": 3000.0}
    assert (cfg.decay_half_life, cfg.max_age, cfg.favor_small) == (7 * 86400, 600, True)
    assert cfg.priority_flags == ("SMALL_RELATIVE_TO_TIME", "MAX_TRES")
    assert cfg.select_type_parameters == ("CR_Core_Memory", "CR_ONE_TASK_PER_CORE")
    assert (cfg.topology_plugin, cfg.preempt_type, cfg.preempt_mode) == (
        "topology/tree", "preempt/qos", "SUSPEND,GANG")
    assert c.warnings[0] == (
        "slurm.conf:3: SchedulerParameters option 'bf_busy_nodes' is not used by tide (ignored)")


def test_builtin_scheduler() -> None:
    assert parse("SchedulerType=sched/builtin").config.backfill is BackfillMode.NONE


def test_unknown_keys_warn_once_each() -> None:
    warn = Warnings()
    c = parse_slurm_conf(
        BASE + "SlurmctldHost=head\nAccountingStorageEnforce=limits\nPriorityWieghtAge=5\n"
        "NodeName=n1 CPUs=2 Colour=blue\nPartitionName=p Nodes=ALL Hidden=YES Fancy=1\n"
        "PartitionName=q Nodes=ALL Fancy=2\n", warn=warn)
    assert c.warnings is warn
    assert list(warn) == [
        "slurm.conf:3: AccountingStorageEnforce is not modelled by tide (kept, not used)",
        "slurm.conf:4: unknown key 'PriorityWieghtAge' ignored (did you mean PriorityWeightAge?)",
        "slurm.conf:5: unknown NodeName key 'Colour' ignored",
        "slurm.conf:6: partition key Hidden is not modelled by tide (ignored)",
        "slurm.conf:6: unknown PartitionName key 'Fancy' ignored",
    ]
    assert c.config.extra["SlurmctldHost"] == "head"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NodeName=n CPUs=abc", "slurm.conf:2: CPUs='abc' is not a number; write an integer "
         "of at least 1 such as CPUs=64"),
        ("NodeName=n[1-", "slurm.conf:2: NodeName='n[1-': unbalanced '['"),
        ("NodeName=n\nNodeName=n", "slurm.conf:3: node n is already defined at line 2"),
        ("NodeName=n State=SLEEPY", "slurm.conf:2: State='SLEEPY' is not a node state"),
        ("NodeName=n[1-2] NodeAddr=10.0.0.1", "NodeAddr names 1 addresses for 2 nodes"),
        ("NodeName=n\nPartitionName=p Nodes=m1", "slurm.conf:3: partition p lists node m1, "
         "which no NodeName line defines"),
        ("PartitionName=p MaxTime=soon", "slurm.conf:2: MaxTime='soon' is not a Slurm time"),
        ("PartitionName=p State=OPEN", "State='OPEN' is not a partition state"),
        ("PartitionName=p\nPartitionName=p", "slurm.conf:3: partition p is already defined"),
        ("PartitionName=p OverSubscribe=MAYBE", "OverSubscribe='MAYBE' is not valid"),
        ("PreemptMode=NICE", "slurm.conf:2: PreemptMode='NICE' is not a preemption mode"),
        ("SchedulerParameters=bf_window=", "SchedulerParameters option bf_window needs a value"),
        ("SchedulerParameters=bf_window=ten", "SchedulerParameters bf_window='ten' is not a "
         "number"),
        ("PriorityWeightAge=lots", "slurm.conf:2: PriorityWeightAge='lots' is not a number"),
        ("NodeName=n Gres=gpu:a:b:4", "Gres item 'gpu:a:b:4' is not gpu[:TYPE][:COUNT]"),
        ("DownNodes=zz", "DownNodes names zz, which no NodeName line defines"),
    ],
)
def test_errors_name_line_and_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse(text)
    assert message in str(e.value)
    assert "; " in str(e.value)  # every error carries a fix


def test_several_defaults_keep_last() -> None:
    c = parse("NodeName=n\nPartitionName=a Nodes=ALL Default=YES\n"
              "PartitionName=b Nodes=ALL Default=YES")
    assert [p.default for p in c.partitions] == [False, True]
    assert "several partitions have Default=YES (a, b); using the last, b" in c.warnings[0]


def test_missing_cluster_name_and_nodes() -> None:
    c = parse_slurm_conf("SchedulerType=sched/backfill\n")
    assert c.cluster_name == "tide"
    assert c.warnings == ["slurm.conf: no ClusterName; using 'tide'",
                          "slurm.conf: no NodeName lines: the cluster has no nodes"]
