"""load_cluster: which files it reads, and real generated Slurm configs (the slurm peer)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tide.config.errors import ConfigError
from tide.config.loader import bundled_cluster, load_cluster, resolve_cluster
from tide.model import TopologyKind
from tide.model.sched_config import BackfillMode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "slurm"


def copy_examples(tmp_path: Path, *keep: str) -> Path:
    for name in keep:
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("target", ["dir", "slurm.conf"])
def test_dir_or_slurm_conf(tmp_path: Path, target: str) -> None:
    d = copy_examples(tmp_path, "slurm.conf", "gres.conf", "topology.conf", "sacctmgr.dump")
    loaded = load_cluster(d if target == "dir" else d / "slurm.conf")
    assert loaded.cluster.total_gpus == 128
    assert loaded.cluster.topology.kind is TopologyKind.TREE
    assert "nlp" in loaded.accounts.accounts


@pytest.mark.parametrize("dump_name", ["sacctmgr.dump", "associations.txt", "demo.cfg"])
def test_account_file_names(tmp_path: Path, dump_name: str) -> None:
    copy_examples(tmp_path, "slurm.conf")
    shutil.copy(EXAMPLES / "sacctmgr.dump", tmp_path / dump_name)
    assert load_cluster(tmp_path).accounts.lineage("nlp") == ["nlp", "research", "root"]


def test_slurm_conf_alone(tmp_path: Path) -> None:
    copy_examples(tmp_path, "slurm.conf")
    loaded = load_cluster(tmp_path / "slurm.conf")
    node = loaded.cluster.nodes[0]
    assert (node.gpu_count, node.gpus[0].cores, node.links) == (8, (), [])
    assert list(loaded.accounts.accounts) == ["root"] and loaded.accounts.cluster == "demo"
    assert loaded.warnings == ["slurm.conf: TopologyPlugin=topology/tree but no topology.conf "
                               "next to it; every node counts as one switch apart"]


def test_qos_txt_fills_the_dump(tmp_path: Path) -> None:
    copy_examples(tmp_path, "slurm.conf")
    (tmp_path / "sacctmgr.dump").write_text("Cluster - 'demo':QOS='normal,gold'\n")
    (tmp_path / "qos.txt").write_text("Name|Priority|MaxTRESPU\ngold|50|gres/gpu=4\n")
    loaded = load_cluster(tmp_path)
    gold = loaded.accounts.qos["gold"]
    assert (gold.priority, gold.limits.max_tres_per_user) == (50, {"gres/gpu": 4})
    assert not any("used but not defined" in w for w in loaded.warnings)


def test_two_dumps_and_cluster_mismatch_warn(tmp_path: Path) -> None:
    copy_examples(tmp_path, "slurm.conf", "sacctmgr.dump")
    (tmp_path / "old.cfg").write_text("Cluster - 'other'\n")
    loaded = load_cluster(tmp_path)
    assert any("several account dumps (sacctmgr.dump, old.cfg)" in w for w in loaded.warnings)


def test_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no slurm\.conf here"):
        load_cluster(tmp_path)
    with pytest.raises(ConfigError, match="no such file or folder"):
        load_cluster(tmp_path / "missing.yaml")
    (tmp_path / "c.yaml").write_text("name: one\n")
    assert load_cluster(tmp_path).cluster.name == "one"  # a folder with one YAML file


def test_resolve_bundled_names() -> None:
    assert resolve_cluster("seed004").cluster.total_gpus == 800
    with pytest.raises(ConfigError, match="use one of demo, "):
        bundled_cluster("nope")


# --- text exactly as the slurm peer's start.sh writes it (NODES=16, GPUS_PER_NODE=8) ------


def peer_files(d: Path, nvlink: bool) -> Path:
    host, base = "vm", "/tmp/slurm-peer"
    nodes = "".join(
        f"NodeName=node{i:03d} NodeHostname={host} NodeAddr=127.0.0.1 Port={17000 + i} CPUs=64 "
        "RealMemory=512000 Gres=gpu:8 State=UNKNOWN\n" for i in range(1, 17))
    (d / "slurm.conf").write_text(f"""ClusterName=peer
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={base}/run/munge/munge.socket
SlurmctldPort=16817
SlurmdPort=17000
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool/%n
SlurmctldPidFile={base}/run/slurmctld.pid
SlurmdPidFile={base}/run/slurmd-%n.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=error
MailProg=/bin/true
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=120
InactiveLimit=0
KillWait=2
MinJobAge=3600
MaxJobCount=100000
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=16819
AccountingStoragePass={base}/run/munge/munge.socket
AccountingStorageTRES=gres/gpu
AccountingStorageEnforce=associations,limits
JobAcctGatherType=jobacct_gather/none
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityMaxAge=00:10:00
PriorityWeightTRES=GRES/gpu=1000
JobCompType=jobcomp/filetxt
JobCompLoc={base}/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_resolution=1,bf_continue,bf_window=1440,\
sched_min_interval=100000,default_queue_depth=1000
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
TopologyPlugin=topology/tree
PriorityType=priority/multifactor
PriorityCalcPeriod=1
PriorityDecayHalfLife=00:30:00
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
{nodes}PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 \
OverSubscribe=NO
PartitionName=urgent Nodes=ALL Default=NO MaxTime=INFINITE State=UP PriorityTier=10 \
OverSubscribe=NO
""")
    if nvlink:
        lines = []
        for g in range(8):
            row = ",".join("-1" if g == h else "4" if g // 4 == h // 4 else "0" for h in range(8))
            lines.append(f"NodeName=node[001-016] Name=gpu File={base}/dev/nvidia{g} Links={row}")
        (d / "gres.conf").write_text("\n".join(lines) + "\n")
    else:
        line = f"NodeName=node[001-016] Name=gpu File={base}/dev/nvidia[0-7]\n"
        (d / "gres.conf").write_text(line)
    topo = [f"SwitchName=leaf{k} Nodes=node[{4 * k + 1:03d}-{4 * k + 4:03d}]" for k in range(4)]
    topo += ["SwitchName=spine0 Switches=leaf[0-1]", "SwitchName=spine1 Switches=leaf[2-3]",
             "SwitchName=core Switches=spine[0-1]"]
    (d / "topology.conf").write_text("\n".join(topo) + "\n")
    return d


@pytest.mark.parametrize("nvlink", [False, True])
def test_slurm_peer_config(tmp_path: Path, nvlink: bool) -> None:
    loaded = load_cluster(peer_files(tmp_path, nvlink))
    c, cfg = loaded.cluster, loaded.config
    assert (c.name, len(c.nodes), c.total_gpus) == ("peer", 16, 128)
    n = c.nodes[0]
    assert (n.name, n.cpus, n.real_memory, n.address) == ("node001", 64, 512000, "127.0.0.1")
    assert [g.file for g in n.gpus][7] == "/tmp/slurm-peer/dev/nvidia7"
    assert n.links == ([[0 if i == j else 4 if i // 4 == j // 4 else 0 for j in range(8)]
                        for i in range(8)] if nvlink else [])
    assert [p.name for p in c.partitions] == ["gpu", "urgent"]
    assert c.partitions[1].priority_tier == 10 and c.partitions[0].max_time is None
    assert [s.name for s in c.topology.switches][-1] == "core"
    assert (cfg.backfill, cfg.bf_interval, cfg.bf_resolution, cfg.bf_window) == (
        BackfillMode.CONSERVATIVE, 1, 1, 86400)
    assert (cfg.bf_continue, cfg.default_queue_depth, cfg.max_age, cfg.decay_half_life) == (
        True, 1000, 600, 1800)
    assert cfg.weights.tres == {"gres/gpu": 1000.0} and cfg.preempt_mode == "REQUEUE"
    # microseconds in slurm.conf; batch_sched_delay not given: Slurm's default
    assert (cfg.sched_min_interval, cfg.batch_sched_delay) == (0.1, 3)
    assert loaded.warnings == [
        "slurm.conf:35: AccountingStorageEnforce is not modelled by tide (kept, not used)",
        "slurm.conf:56: JobRequeue is not modelled by tide (kept, not used)",
    ]
