"""One entry point for cluster descriptions: `load_cluster(path)`.

`path` may be
  * a tide YAML file (*.yaml / *.yml),
  * a slurm.conf (any name): gres.conf and topology.conf next to it are read
    when present, and the accounts from the first of `sacctmgr.dump`,
    `associations.txt` or `*.cfg` found there (the output of
    `sacctmgr dump CLUSTER file=F`), plus QOS from `qos.txt`
    (`sacctmgr -P show qos` output) when present,
  * a folder holding slurm.conf (then as above) or exactly one *.yaml.
Every loader returns LoadedCluster: Cluster, SchedulerConfig, AccountTree and
the warnings met on the way (never fatal); malformed input raises ConfigError.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tide.config.checks import check_loaded
from tide.config.errors import ConfigError, Warnings
from tide.config.gres_conf import read_gres_conf
from tide.config.loaded import LoadedCluster
from tide.config.qos_table import read_qos_table
from tide.config.sacctmgr_dump import read_sacctmgr_dump
from tide.config.slurm_conf import read_slurm_conf
from tide.config.topology_conf import kind_for_plugin, read_topology_conf
from tide.config.yaml_load import load_yaml, load_yaml_text
from tide.model import AccountTree, Cluster, Topology

__all__ = ["ACCOUNT_FILES", "LoadedCluster", "bundled_cluster", "bundled_names",
           "load_cluster", "load_slurm", "resolve_cluster"]

ACCOUNT_FILES = ("sacctmgr.dump", "associations.txt")  # then *.cfg, sorted
QOS_FILE = "qos.txt"
_YAML = (".yaml", ".yml")


def load_cluster(path: str | Path) -> LoadedCluster:
    p = Path(path)
    if not p.exists():
        raise ConfigError(str(p), None, "no such file or folder",
                          "give a tide YAML file, a slurm.conf or a folder holding slurm.conf")
    if p.is_dir():
        p = _pick_in_dir(p)
    loaded = load_yaml(p) if p.suffix.lower() in _YAML else load_slurm(p)
    loaded.warnings.extend(check_loaded(loaded))
    return loaded


def resolve_cluster(spec: str) -> LoadedCluster:
    """A path, or the name of a bundled cluster ('demo', 'seed004')."""
    if not Path(spec).exists() and spec in bundled_names():
        return bundled_cluster(spec)
    return load_cluster(spec)


def _pick_in_dir(d: Path) -> Path:
    if (d / "slurm.conf").is_file():
        return d / "slurm.conf"
    yamls = sorted(p for p in d.iterdir() if p.suffix.lower() in _YAML)
    if len(yamls) == 1:
        return yamls[0]
    raise ConfigError(str(d), None, "no slurm.conf here" + (
        f" and {len(yamls)} YAML files" if yamls else ""),
        "point at the slurm.conf or the YAML file itself")


def load_slurm(slurm_conf: Path) -> LoadedCluster:
    """slurm.conf plus its neighbours (see the module docstring)."""
    warn = Warnings()
    conf = read_slurm_conf(slurm_conf, warn)
    folder = slurm_conf.parent
    if (folder / "gres.conf").is_file():
        read_gres_conf(folder / "gres.conf", conf.nodes, conf.gres, warn)
    topology = Topology(kind=kind_for_plugin(conf.config.topology_plugin))
    if (folder / "topology.conf").is_file():
        topology = read_topology_conf(folder / "topology.conf", conf.nodes,
                                      conf.config.topology_plugin, warn)
    elif topology.kind.value != "flat":
        warn.add(slurm_conf.name, None, f"TopologyPlugin={conf.config.topology_plugin} but no "
                 "topology.conf next to it; every node counts as one switch apart")
    accounts = _accounts(folder, conf.cluster_name, warn)
    cluster = Cluster(conf.cluster_name, conf.nodes, conf.partitions, topology)
    return LoadedCluster(cluster, conf.config, accounts, list(warn), str(slurm_conf))


def _accounts(folder: Path, cluster_name: str, warn: Warnings) -> AccountTree:
    qos = read_qos_table(folder / QOS_FILE, warn) if (folder / QOS_FILE).is_file() else {}
    dumps = [folder / n for n in ACCOUNT_FILES if (folder / n).is_file()]
    dumps += sorted(folder.glob("*.cfg"))
    if not dumps:
        tree = AccountTree(cluster=cluster_name)
        tree.qos.update(qos)
        return tree
    if len(dumps) > 1:
        warn.add(dumps[0].name, None, "several account dumps ("
                 f"{', '.join(d.name for d in dumps)}); reading {dumps[0].name}")
    tree = read_sacctmgr_dump(dumps[0], warn, qos)
    if tree.cluster != cluster_name:
        warn.add(dumps[0].name, None, f"dump is for cluster {tree.cluster!r}, slurm.conf "
                 f"says ClusterName={cluster_name}")
    return tree


def bundled_names() -> list[str]:
    root = resources.files("tide").joinpath("data", "clusters")
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir()
                  if p.name.endswith(".yaml"))


def bundled_cluster(name: str) -> LoadedCluster:
    """A cluster shipped with tide: bundled_cluster('demo')."""
    if name not in bundled_names():
        raise ConfigError(name, None, "no bundled cluster of that name",
                          f"use one of {', '.join(bundled_names())}")
    text = resources.files("tide").joinpath("data", "clusters", f"{name}.yaml").read_text()
    loaded = load_yaml_text(text, f"{name}.yaml")
    loaded.source = f"bundled:{name}"
    loaded.warnings.extend(check_loaded(loaded))
    return loaded
