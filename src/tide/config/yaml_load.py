"""tide's cluster YAML -> LoadedCluster (the same model objects Slurm files give)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from tide.config.errors import ConfigError, Warnings
from tide.config.loaded import LoadedCluster
from tide.config.slurm_keys import suggest
from tide.config.slurm_partitions import split_top
from tide.config.topology_conf import check_tree, kind_for_plugin
from tide.config.values import Loc
from tide.config.yaml_accounts import build_accounts
from tide.config.yaml_locate import Locator, key_line
from tide.config.yaml_nodes import build_nodes
from tide.config.yaml_pools import build_pools
from tide.config.yaml_quotas import build_quotas
from tide.config.yaml_schema import ClusterSpec, PartitionSpec, SchedulerSpec, TopologySpec
from tide.hostlist import HostlistError, expand
from tide.model import Block, Cluster, Node, Partition, Switch, Topology, TopologyKind
from tide.model.sched_config import BackfillMode, PriorityWeights, SchedulerConfig


def load_yaml(path: Path) -> LoadedCluster:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(path.name, None, f"cannot read {path}: {e.strerror or e}",
                          "check the path and its permissions") from None
    loaded = load_yaml_text(text, path.name)
    loaded.source = str(path)
    return loaded


def load_yaml_text(text: str, file: str = "cluster.yaml") -> LoadedCluster:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(file, mark.line + 1 if mark else None, f"not valid YAML: {problem}",
                          "check indentation and quoting on that line") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(file, 1, "the file is not a mapping",
                          "start with keys such as name:, nodes:, partitions:")
    where = Locator(text)
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as e:
        raise _schema_error(e, file, where) from None
    warn = Warnings()
    _unknown_keys(spec, [], file, where, warn)
    return _Builder(spec, file, where, warn).build()


def _schema_error(e: ValidationError, file: str, where: Locator) -> ConfigError:
    err = e.errors()[0]
    path = [p for p in err["loc"] if isinstance(p, str | int)]
    # pydantic adds the union member tried ('str', 'list[...]'); drop those
    path = [p for p in path if not (isinstance(p, str) and ("[" in p or p in _TYPE_NAMES))]
    dotted = ".".join(str(p) for p in path) or "(top)"
    msg = err["msg"].removeprefix("Value error, ")
    fix = "" if "write" in msg else "see docs/cluster.md for the schema"
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return ConfigError(file, where.line(path), f"{dotted}: {msg}{more}", fix)


_TYPE_NAMES = {"str", "int", "float", "bool", "list", "dict", "function-after", "constrained-int"}


def _unknown_keys(obj: object, path: list[str | int], file: str, where: Locator,
                  warn: Warnings) -> None:
    if isinstance(obj, BaseModel):
        for key in obj.model_extra or {}:
            line = key_line(where, path, key)
            dotted = ".".join(str(p) for p in [*path, key])
            hint = suggest(key, list(type(obj).model_fields))
            warn.add(file, line, f"unknown key {dotted!r} ignored{hint}")
        for name in type(obj).model_fields:
            _unknown_keys(getattr(obj, name), [*path, name], file, where, warn)
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            _unknown_keys(item, [*path, i], file, where, warn)
    elif isinstance(obj, dict):
        for k, item in obj.items():
            _unknown_keys(item, [*path, k], file, where, warn)


class _Builder:
    def __init__(self, spec: ClusterSpec, file: str, where: Locator, warn: Warnings) -> None:
        self.spec, self.file, self.where, self.warn = spec, file, where, warn

    def fail(self, path: Sequence[str | int], problem: str, fix: str) -> ConfigError:
        return ConfigError(self.file, self.where.line(path), problem, fix)

    def build(self) -> LoadedCluster:
        nodes = build_nodes(self.spec.nodes, self.fail)
        partitions = self._partitions(nodes)
        config = _scheduler(self.spec.scheduler)
        topology = self._topology(self.spec.topology, config, nodes)
        cluster = Cluster(self.spec.name, nodes, partitions, topology)
        cluster.gpu_peak_tflops = dict(self.spec.gpu_peak_tflops)
        cluster.user_map = dict(self.spec.user_map)
        accounts = build_accounts(self.spec, self.fail)
        quotas = build_quotas(self.spec.quotas, accounts, self.fail)
        pools = build_pools(self.spec.pools, cluster, self.fail)
        return LoadedCluster(cluster, config, accounts, list(self.warn), self.file, quotas, pools)

    def _partitions(self, nodes: list[Node]) -> list[Partition]:
        known = {n.name for n in nodes}
        out: list[Partition] = []
        for i, p in enumerate(self.spec.partitions):
            if any(q.name == p.name for q in out):
                raise self.fail(["partitions", i, "name"], f"partition {p.name} is defined "
                                "twice", "give each partition one entry")
            out.append(_partition(p, self._members(p, i, nodes, known)))
        defaults = [p for p in out if p.default]
        if len(defaults) > 1:
            self.warn.add(self.file, self.where.line(["partitions"]),
                          f"several default partitions ({', '.join(p.name for p in defaults)});"
                          f" using the last, {defaults[-1].name}")
            for extra in defaults[:-1]:
                extra.default = False
        for node in nodes:
            node.partitions = tuple(p.name for p in out if node.name in p.nodes)
        return out

    def _members(self, p: PartitionSpec, i: int, nodes: list[Node], known: set[str]
                 ) -> tuple[str, ...]:
        items = split_top(p.nodes) if isinstance(p.nodes, str) else p.nodes
        names: list[str] = []
        for item in items:
            if item.upper() == "ALL":
                names.extend(n.name for n in nodes)
                continue
            try:
                names.extend(expand(item))
            except HostlistError as e:
                raise self.fail(["partitions", i, "nodes"], str(e),
                                "write a hostlist such as node[01-16] or ALL") from None
        unknown = [n for n in names if n not in known]
        if unknown:
            raise self.fail(["partitions", i, "nodes"], f"partition {p.name}: node "
                            f"{unknown[0]} is not defined under nodes", "define it or fix nodes")
        return tuple(dict.fromkeys(names))

    def _topology(self, t: TopologySpec, cfg: SchedulerConfig, nodes: list[Node]) -> Topology:
        kind = self._kind(t, cfg)
        known = {n.name for n in nodes}
        topo = Topology(kind=kind, block_sizes=tuple(t.block_sizes))
        where: dict[str, Loc] = {}
        for i, s in enumerate(t.switches):
            path: list[str | int] = ["topology", "switches", i]
            if s.name in where:
                raise self.fail(path, f"switch {s.name} is defined twice", "define it once")
            if s.nodes and s.switches:
                raise self.fail(path, f"switch {s.name} has both nodes and switches",
                                "a leaf lists nodes, an upper switch lists switches")
            where[s.name] = Loc(self.file, self.where.line(path))
            topo.switches.append(Switch(s.name, tuple(self._known(s.nodes, known, path)),
                                        tuple(s.switches), s.link_speed))
        for i, b in enumerate(t.blocks):
            path = ["topology", "blocks", i]
            topo.blocks.append(Block(b.name, tuple(self._known(b.nodes, known, path))))
        if topo.switches:
            check_tree(topo, where, nodes, self.warn)
        return topo

    def _kind(self, t: TopologySpec, cfg: SchedulerConfig) -> TopologyKind:
        plugin_given = self.spec.scheduler.topology_plugin is not None
        if t.kind is None:
            kind = (kind_for_plugin(cfg.topology_plugin) if plugin_given else
                    TopologyKind.TREE if t.switches else
                    TopologyKind.BLOCK if t.blocks else TopologyKind.FLAT)
        else:
            kind = t.kind
        if not plugin_given:
            cfg.topology_plugin = f"topology/{kind.value}"
        elif kind_for_plugin(cfg.topology_plugin) is not kind:
            raise self.fail(["topology", "kind"], f"topology kind {kind.value} but "
                            f"topology_plugin is {cfg.topology_plugin}",
                            f"set scheduler.topology_plugin: topology/{kind.value} or drop one")
        return kind

    def _known(self, names: list[str], known: set[str], path: list[str | int]) -> list[str]:
        unknown = [n for n in names if n not in known]
        if unknown:
            self.warn.add(self.file, self.where.line([*path, "nodes"]),
                          f"{', '.join(unknown[:3])}{'...' if len(unknown) > 3 else ''} "
                          "not defined under nodes (ignored)")
        return [n for n in names if n in known]


def _partition(p: PartitionSpec, members: tuple[str, ...]) -> Partition:
    return Partition(
        name=p.name, nodes=members, default=p.default, max_time=p.max_time,
        default_time=p.default_time, max_nodes=p.max_nodes, min_nodes=p.min_nodes,
        priority_tier=p.priority_tier, priority_job_factor=p.priority_job_factor,
        allow_accounts=tuple(p.allow_accounts), allow_qos=tuple(p.allow_qos),
        deny_accounts=tuple(p.deny_accounts), deny_qos=tuple(p.deny_qos),
        oversubscribe=p.oversubscribe.upper(), state=p.state.upper(),
        preempt_mode=p.preempt_mode.upper(), requeue=p.requeue, grace_time=p.grace_time,
    )


def _scheduler(s: SchedulerSpec) -> SchedulerConfig:
    default_type = "sched/builtin" if s.backfill is BackfillMode.NONE else "sched/backfill"
    w = s.weights
    return SchedulerConfig(
        policy=s.policy, victim_order=s.victim_order,
        scheduler_type=s.scheduler_type or default_type, backfill=s.backfill, order=s.order,
        bf_window=s.bf_window, bf_resolution=s.bf_resolution,
        bf_max_job_test=s.bf_max_job_test, bf_interval=s.bf_interval,
        bf_continue=s.bf_continue, default_queue_depth=s.default_queue_depth,
        sched_min_interval=s.sched_min_interval, batch_sched_delay=s.batch_sched_delay,
        priority_type=s.priority_type,
        weights=PriorityWeights(w.age, w.fairshare, w.job_size, w.partition, w.qos, w.assoc,
                                {k.lower(): float(v) for k, v in w.tres.items()}),
        decay_half_life=s.decay_half_life, max_age=s.max_age, favor_small=s.favor_small,
        priority_flags=tuple(s.priority_flags), topology_plugin=s.topology_plugin or "",
        select_type=s.select_type, select_type_parameters=tuple(s.select_type_parameters),
        max_switch_wait=s.max_switch_wait, priority_calc_period=s.priority_calc_period,
        will_run_batches=s.will_run_batches, epoch=s.epoch,
        array_tasks_by_backfill=s.array_tasks_by_backfill,
        billing_weights=dict(s.billing_weights) if s.billing_weights is not None else None,
        preempt_type=s.preempt_type,
        preempt_mode=s.preempt_mode, extra=dict(s.extra),
        max_array_size=s.max_array_size, max_script_size=s.max_script_size,
    )
