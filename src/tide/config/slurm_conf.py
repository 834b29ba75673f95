"""slurm.conf -> nodes, partitions and SchedulerConfig (unchanged Slurm files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tide.config.conf_lines import ConfLine, parse_conf_text, read_conf
from tide.config.errors import Warnings
from tide.config.slurm_nodes import GresDecl, NodeLines, apply_down_nodes
from tide.config.slurm_partitions import PartitionLines
from tide.config.slurm_sched import apply_global
from tide.model import Node, Partition
from tide.model.sched_config import SchedulerConfig


@dataclass(slots=True)
class SlurmConf:
    cluster_name: str
    nodes: list[Node]
    partitions: list[Partition]
    config: SchedulerConfig
    gres: dict[str, GresDecl]  # node -> its Gres=gpu:... from slurm.conf
    warnings: Warnings = field(default_factory=Warnings)


def read_slurm_conf(path: Path, warn: Warnings | None = None) -> SlurmConf:
    return parse_slurm_lines(read_conf(path), path.name, warn)


def parse_slurm_conf(text: str, file: str = "slurm.conf", base: Path | None = None,
                     warn: Warnings | None = None) -> SlurmConf:
    return parse_slurm_lines(parse_conf_text(text, file, base), file, warn)


def parse_slurm_lines(lines: list[ConfLine], file: str = "slurm.conf",
                      warn: Warnings | None = None) -> SlurmConf:
    warn = warn if warn is not None else Warnings()
    cfg = SchedulerConfig()
    nodes = NodeLines(warn)
    parts = PartitionLines(warn)
    down: list[ConfLine] = []
    name = ""
    for line in lines:
        head = line.head
        if head == "nodename":
            nodes.add(line.pairs, line.loc)
        elif head == "partitionname":
            parts.add(line.pairs, line.loc)
        elif head == "nodeset":
            parts.add_nodeset(line.pairs, line.loc)
        elif head == "downnodes":
            down.append(line)
        elif head in ("frontendname", "switchname"):
            warn.add(line.loc.file, line.loc.line, f"{line.pairs[0][0]} lines are not used "
                     "by tide (ignored)")
        else:
            for key, value in line.pairs:
                if key.lower() == "clustername":
                    name = value
                else:
                    apply_global(key, value, line.loc, cfg, warn)
    for line in down:
        apply_down_nodes(line.pairs, line.loc, nodes)
    partitions = parts.resolve(nodes.nodes)
    if not name:
        warn.add(file, None, "no ClusterName; using 'tide'")
        name = "tide"
    if not nodes.nodes:
        warn.add(file, None, "no NodeName lines: the cluster has no nodes")
    return SlurmConf(name, nodes.nodes, partitions, cfg, nodes.gres, warn)
