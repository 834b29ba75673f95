"""LoadedCluster -> tide YAML text that loads back to an equal model.

Nodes with the same shape are grouped under one hostlist; GPUs use the
compact form (count, type, sockets or cores, files, a named NVLink pattern)
when that rebuilds them exactly, else a full device list.
"""

from __future__ import annotations

from typing import Any

import yaml

from tide.config.durations import format_duration
from tide.config.links import describe_links
from tide.config.loaded import LoadedCluster
from tide.config.yaml_nodes import build_gpus
from tide.config.yaml_pools import save_pools
from tide.config.yaml_quotas import save_quotas
from tide.config.yaml_schema import GpuSpec
from tide.hostlist import compress, expand, index_ranges
from tide.model import Account, AccountTree, Cluster, Gpu, Limits, Node, Qos, UserAssoc
from tide.model.account import FAIRSHARE_PARENT
from tide.model.sched_config import SchedulerConfig

HEADER = "# tide cluster description; schema: docs/cluster.md\n"


def save_yaml(loaded: LoadedCluster) -> str:
    c = loaded.cluster
    doc: dict[str, Any] = {"name": c.name, "nodes": _node_groups(c.nodes),
                           "partitions": _partitions(c), "topology": _topology(c),
                           "scheduler": _scheduler(loaded.config)}
    doc.update(_accounts(loaded.accounts, c.name))
    doc.update(save_quotas(loaded.quotas))
    doc.update(save_pools(loaded.pools))
    if c.gpu_peak_tflops:
        doc["gpu_peak_tflops"] = dict(c.gpu_peak_tflops)
    if c.user_map:
        doc["user_map"] = dict(c.user_map)
    return HEADER + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100,
                              allow_unicode=True)


class _Dumper(yaml.SafeDumper):
    """Short lists of scalars on one line ([0, 2, 1, 1])."""


def _repr_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(isinstance(x, int | float | str) and len(str(x)) < 30 for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _repr_list)


def names_expr(names: list[str] | tuple[str, ...]) -> str | list[str]:
    """A hostlist when it expands back to the same order, else the list."""
    if not names:
        return []
    expr = compress(names)
    return expr if expand(expr) == list(names) else list(names)


def _node_groups(nodes: list[Node]) -> list[dict[str, Any]]:
    groups: list[tuple[dict[str, Any], list[Node]]] = []
    for node in nodes:
        shape = _node_shape(node)
        if groups and groups[-1][0] == shape:
            groups[-1][1].append(node)
        else:
            groups.append((shape, [node]))
    out = []
    for shape, members in groups:
        entry: dict[str, Any] = {"names": names_expr([n.name for n in members])}
        entry.update(shape)
        if any(n.address for n in members):
            entry["addresses"] = [n.address for n in members]
        out.append(entry)
    return out


def _node_shape(n: Node) -> dict[str, Any]:
    shape: dict[str, Any] = {"cpus": n.cpus}
    if n.boards != 1:
        shape["boards"] = n.boards
    shape.update(sockets=n.sockets, cores_per_socket=n.cores_per_socket,
                 threads_per_core=n.threads_per_core, real_memory=n.real_memory)
    if n.gpus or n.links:
        shape["gpus"] = _gpus(n)
    if n.features:
        shape["features"] = list(n.features)
    if n.weight != 1:
        shape["weight"] = n.weight
    if n.state.value != "IDLE":
        shape["state"] = n.state.value
    if n.reason:
        shape["reason"] = n.reason
    return shape


def _gpus(node: Node) -> dict[str, Any]:
    compact = _compact_gpus(node.gpus, node)
    spec = compact if compact is not None else _device_list(node.gpus)
    link = describe_links(node.links, [g.socket for g in node.gpus])
    if link is not None:
        spec["nvlink"] = link
    return spec


def _compact_gpus(gpus: list[Gpu], node: Node) -> dict[str, Any] | None:
    types = {g.type for g in gpus}
    if len(types) > 1:
        return None
    spec: dict[str, Any] = {"count": len(gpus)}
    if types != {""}:
        spec["type"] = types.pop()
    if any(g.file for g in gpus):
        spec["files"] = names_expr([g.file for g in gpus])
    if any(g.cores for g in gpus) or any(g.socket is not None for g in gpus):
        full = all(g.socket is not None and g.cores == _socket_cores(node, g.socket)
                   for g in gpus)
        if full:
            spec["sockets"] = [g.socket for g in gpus]
        else:
            spec["cores"] = [index_ranges(g.cores) for g in gpus]
    try:
        rebuilt, _ = build_gpus(GpuSpec.model_validate(spec), node, [], _no_fail)
    except ValueError:
        return None
    return spec if rebuilt == gpus else None


def _no_fail(path: Any, problem: str, fix: str) -> Exception:
    return ValueError(problem)


def _socket_cores(node: Node, s: int) -> tuple[int, ...]:
    return tuple(range(s * node.cores_per_socket, (s + 1) * node.cores_per_socket))


def _device_list(gpus: list[Gpu]) -> dict[str, Any]:
    devices = []
    for g in gpus:
        d: dict[str, Any] = {"index": g.index}
        if g.type:
            d["type"] = g.type
        d["socket"] = g.socket
        if g.cores:
            d["cores"] = index_ranges(g.cores)
        if g.file:
            d["file"] = g.file
        devices.append(d)
    return {"devices": devices}


def _partitions(c: Cluster) -> list[dict[str, Any]]:
    all_names = tuple(n.name for n in c.nodes)
    out = []
    for p in c.partitions:
        d: dict[str, Any] = {"name": p.name,
                             "nodes": "ALL" if p.nodes == all_names else names_expr(p.nodes)}
        d.update(default=p.default, max_time=format_duration(p.max_time))
        if p.default_time is not None:
            d["default_time"] = format_duration(p.default_time)
        d.update(max_nodes=p.max_nodes, min_nodes=p.min_nodes, priority_tier=p.priority_tier,
                 priority_job_factor=p.priority_job_factor)
        for key in ("allow_accounts", "allow_qos", "deny_accounts", "deny_qos"):
            if getattr(p, key):
                d[key] = list(getattr(p, key))
        d.update(oversubscribe=p.oversubscribe, state=p.state)
        if p.preempt_mode:
            d["preempt_mode"] = p.preempt_mode
        if p.requeue is not None:
            d["requeue"] = p.requeue
        if p.grace_time:
            d["grace_time"] = format_duration(p.grace_time)
        out.append(d)
    return out


def _topology(c: Cluster) -> dict[str, Any]:
    t = c.topology
    d: dict[str, Any] = {"kind": t.kind.value}
    if t.switches:
        d["switches"] = []
        for s in t.switches:
            sw: dict[str, Any] = {"name": s.name}
            if s.nodes:
                sw["nodes"] = names_expr(s.nodes)
            if s.switches:
                sw["switches"] = names_expr(s.switches)
            if s.link_speed != 1:
                sw["link_speed"] = s.link_speed
            d["switches"].append(sw)
    if t.blocks:
        d["blocks"] = [{"name": b.name, "nodes": names_expr(b.nodes)} for b in t.blocks]
    if t.block_sizes:
        d["block_sizes"] = list(t.block_sizes)
    return d


def _scheduler(s: SchedulerConfig) -> dict[str, Any]:
    w = s.weights
    d: dict[str, Any] = {
        "backfill": s.backfill.value, "scheduler_type": s.scheduler_type, "order": s.order.value,
        "bf_window": format_duration(s.bf_window),
        "bf_resolution": format_duration(s.bf_resolution),
        "bf_max_job_test": s.bf_max_job_test, "bf_interval": format_duration(s.bf_interval),
        "bf_continue": s.bf_continue, "default_queue_depth": s.default_queue_depth,
        "priority_type": s.priority_type,
        "weights": {"age": w.age, "fairshare": w.fairshare, "job_size": w.job_size,
                    "partition": w.partition, "qos": w.qos, "assoc": w.assoc,
                    "tres": dict(w.tres)},
        "decay_half_life": format_duration(s.decay_half_life),
        "max_age": format_duration(s.max_age), "favor_small": s.favor_small,
        "priority_flags": list(s.priority_flags), "topology_plugin": s.topology_plugin,
        "select_type": s.select_type, "select_type_parameters": list(s.select_type_parameters),
        "max_switch_wait": format_duration(s.max_switch_wait),
        "priority_calc_period": format_duration(s.priority_calc_period),
        "will_run_batches": s.will_run_batches,
        "array_tasks_by_backfill": s.array_tasks_by_backfill,
        "preempt_type": s.preempt_type, "preempt_mode": s.preempt_mode,
    }
    if s.policy != "slurm":
        d["policy"] = s.policy
    if s.victim_order:
        d["victim_order"] = s.victim_order
    if s.billing_weights is not None:
        d["billing_weights"] = dict(s.billing_weights)
    if s.epoch:
        d["epoch"] = s.epoch
    if s.sched_min_interval:
        d["sched_min_interval"] = s.sched_min_interval
    if s.batch_sched_delay != 3:
        d["batch_sched_delay"] = s.batch_sched_delay
    if s.max_array_size != 1001:
        d["max_array_size"] = s.max_array_size
    if s.max_script_size != 4 * 1024 * 1024:
        d["max_script_size"] = s.max_script_size
    if s.extra:
        d["extra"] = dict(s.extra)
    return d


def _accounts(tree: AccountTree, cluster_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if tree.cluster != cluster_name:
        out["accounts_cluster"] = tree.cluster
    out["accounts"] = {a.name: _account(a) for a in tree.accounts.values()}
    out["users"] = [_user(u) for u in tree.users]
    out["qos"] = {q.name: _qos(q) for q in tree.qos.values()}
    return out


def _assoc_common(a: Account | UserAssoc) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if a.fairshare != 1:
        d["fairshare"] = "parent" if a.fairshare == FAIRSHARE_PARENT else a.fairshare
    if not a.limits.is_empty():
        d["limits"] = _limits(a.limits)
    if a.qos:
        d["qos"] = list(a.qos)
    if a.default_qos:
        d["default_qos"] = a.default_qos
    if a.priority is not None:
        d["priority"] = a.priority
    return d


def _account(a: Account) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if a.name == "root" or a.parent != "root":
        d["parent"] = a.parent
    d.update(_assoc_common(a))
    if a.description:
        d["description"] = a.description
    if a.organization:
        d["organization"] = a.organization
    return d


def _user(u: UserAssoc) -> dict[str, Any]:
    d: dict[str, Any] = {"user": u.user, "account": u.account}
    if u.default_account:
        d["default_account"] = True
    d.update(_assoc_common(u))
    if u.admin_level != "None":
        d["admin_level"] = u.admin_level
    return d


def _qos(q: Qos) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if q.priority:
        d["priority"] = q.priority
    if not q.limits.is_empty():
        d["limits"] = _limits(q.limits)
    if q.preempt:
        d["preempt"] = list(q.preempt)
    if q.preempt_mode:
        d["preempt_mode"] = q.preempt_mode
    if q.preempt_exempt_time is not None:
        d["preempt_exempt_time"] = format_duration(q.preempt_exempt_time)
    if q.grace_time:
        d["grace_time"] = format_duration(q.grace_time)
    if q.usage_factor != 1.0:
        d["usage_factor"] = q.usage_factor
    if q.flags:
        d["flags"] = list(q.flags)
    return d


def _limits(lim: Limits) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for key in ("grp_tres", "max_tres_per_job", "max_tres_per_user", "max_tres_per_node"):
        if getattr(lim, key):
            d[key] = dict(getattr(lim, key))
    for key in ("grp_jobs", "grp_submit_jobs", "max_jobs", "max_submit_jobs",
                "max_jobs_per_user", "max_submit_jobs_per_user"):
        if getattr(lim, key) is not None:
            d[key] = getattr(lim, key)
    if lim.max_wall is not None:
        d["max_wall"] = format_duration(lim.max_wall)
    return d
