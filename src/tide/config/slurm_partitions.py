"""slurm.conf PartitionName / NodeSet lines -> Partition objects.

PartitionName=DEFAULT sets values for the lines after it. Nodes= takes
hostlists, NodeSet names and ALL; they are resolved once every node is
known. Priority= (pre-16.05 spelling) sets PriorityTier and
PriorityJobFactor, Shared= is the old name of OverSubscribe. `Requeue` is a
tide extension: the partition's default for --requeue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tide.config.errors import Warnings
from tide.config.slurm_keys import suggest
from tide.config.slurm_sched import check_preempt_mode
from tide.config.values import (
    Loc,
    split_list,
    to_bool,
    to_int,
    to_int_or_unlimited,
    to_time,
)
from tide.hostlist import HostlistError, expand
from tide.model import Node, Partition

_KNOWN = {
    "partitionname", "nodes", "default", "maxtime", "defaulttime", "maxnodes", "minnodes",
    "prioritytier", "priorityjobfactor", "priority", "allowaccounts", "allowqos",
    "denyaccounts", "denyqos",
    "oversubscribe", "shared", "state", "preemptmode", "requeue", "gracetime",
}
_NOT_MODELLED = {
    "allocnodes", "allowgroups", "alternate", "cpubind", "defcpupergpu", "defmempercpu",
    "defmempergpu", "defmempernode", "disablerootjobs",
    "exclusiveuser", "exclusivetopo", "hidden", "lln", "maxcpuspernode",
    "maxcpuspersocket", "maxmempercpu", "maxmempernode", "overtimelimit", "powerdownonidle",
    "qos", "reqresv", "resumetimeout", "rootonly", "selecttypeparameters", "suspendtime",
    "suspendtimeout", "tresbillingweights",
}
_STATES = {"UP", "DOWN", "DRAIN", "INACTIVE"}
_OVERSUB = {"NO", "YES", "FORCE", "EXCLUSIVE"}


@dataclass(slots=True)
class PartitionLines:
    warn: Warnings
    defaults: dict[str, tuple[str, str]] = field(default_factory=dict)
    pending: list[tuple[Partition, str, Loc]] = field(default_factory=list)
    nodesets: dict[str, tuple[str, str, Loc]] = field(default_factory=dict)  # name->(nodes, feat)
    _warned: set[str] = field(default_factory=set)

    def add(self, pairs: tuple[tuple[str, str], ...], loc: Loc) -> None:
        attrs = {k.lower(): (k, v) for k, v in pairs}
        self._check_keys(attrs, loc)
        name = pairs[0][1]
        if name.upper() == "DEFAULT":
            attrs.pop("partitionname")
            self.defaults.update(attrs)
            return
        for other, _, first in self.pending:
            if other.name == name:
                raise loc.error(f"partition {name} is already defined at line {first.line}",
                                "give each partition one PartitionName line")
        merged = {**self.defaults, **attrs}
        nodes_expr = merged.get("nodes", ("Nodes", ""))[1]
        self.pending.append((_build(name, merged, loc), nodes_expr, loc))

    def add_nodeset(self, pairs: tuple[tuple[str, str], ...], loc: Loc) -> None:
        attrs = {k.lower(): v for k, v in pairs}
        self.nodesets[pairs[0][1]] = (attrs.get("nodes", ""), attrs.get("feature", ""), loc)

    def _check_keys(self, attrs: dict[str, tuple[str, str]], loc: Loc) -> None:
        for k, (orig, _) in attrs.items():
            if k in _KNOWN or k in self._warned:
                continue
            self._warned.add(k)
            if k in _NOT_MODELLED:
                self.warn.add(loc.file, loc.line,
                              f"partition key {orig} is not modelled by tide (ignored)")
            else:
                known = ["Nodes", "Default", "MaxTime", "DefaultTime", "MaxNodes", "MinNodes",
                         "PriorityTier", "PriorityJobFactor", "AllowAccounts", "AllowQos",
                         "DenyAccounts", "DenyQos",
                         "OverSubscribe", "State", "PreemptMode"]
                self.warn.add(loc.file, loc.line,
                              f"unknown PartitionName key {orig!r} ignored{suggest(orig, known)}")

    def resolve(self, nodes: list[Node]) -> list[Partition]:
        """Expand every partition's Nodes= and record membership on the nodes."""
        by_name = {n.name: n for n in nodes}
        out: list[Partition] = []
        for part, expr, loc in self.pending:
            part.nodes = tuple(self._members(part.name, expr, nodes, by_name, loc))
            out.append(part)
        _one_default(out, self.pending, self.warn)
        for node in nodes:
            node.partitions = tuple(p.name for p in out if node.name in set(p.nodes))
        return out

    def _members(self, part: str, expr: str, nodes: list[Node], by_name: dict[str, Node],
                 loc: Loc) -> list[str]:
        names: list[str] = []
        for item in split_top(expr):
            if item.upper() == "ALL":
                names.extend(n.name for n in nodes)
            elif item in self.nodesets:
                names.extend(self._nodeset(item, nodes))
            else:
                names.extend(_expand(item, loc))
        for name in names:
            if name not in by_name:
                raise loc.error(f"partition {part} lists node {name}, which no NodeName "
                                "line defines", "define the node or remove it from Nodes=")
        return list(dict.fromkeys(names))

    def _nodeset(self, name: str, nodes: list[Node]) -> list[str]:
        expr, feature, loc = self.nodesets[name]
        out = [n.name for n in nodes if feature and feature in n.features]
        for item in split_top(expr):
            if item.upper() == "ALL":
                out.extend(n.name for n in nodes)
            else:
                out.extend(_expand(item, loc))
        return out


def split_top(expr: str) -> list[str]:
    """Split on commas outside brackets: 'a[1-2,4],b' -> ['a[1-2,4]', 'b']."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in expr:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand(expr: str, loc: Loc) -> list[str]:
    try:
        return expand(expr)
    except HostlistError as e:
        raise loc.error(f"Nodes={expr!r}: {e}", "write a hostlist such as node[01-16]") from None


def _one_default(parts: list[Partition], pending: list[tuple[Partition, str, Loc]],
                 warn: Warnings) -> None:
    defaults = [(p, loc) for p, _, loc in pending if p.default]
    if len(defaults) > 1:
        keep, loc = defaults[-1]
        names = ", ".join(p.name for p, _ in defaults)
        warn.add(loc.file, loc.line,
                 f"several partitions have Default=YES ({names}); using the last, {keep.name}")
        for p, _ in defaults[:-1]:
            p.default = False


def _build(name: str, attrs: dict[str, tuple[str, str]], loc: Loc) -> Partition:
    def get(key: str) -> str | None:
        pair = attrs.get(key)
        return pair[1] if pair else None

    part = Partition(name=name)
    if (v := get("default")) is not None:
        part.default = to_bool("Default", v, loc)
    if (v := get("maxtime")) is not None:
        part.max_time = to_time("MaxTime", v, loc)
    if (v := get("defaulttime")) is not None:
        part.default_time = to_time("DefaultTime", v, loc)
    if (v := get("maxnodes")) is not None:
        part.max_nodes = to_int_or_unlimited("MaxNodes", v, loc, minimum=1)
    if (v := get("minnodes")) is not None:
        part.min_nodes = to_int("MinNodes", v, loc)
    if (v := get("priority")) is not None:
        part.priority_tier = part.priority_job_factor = to_int("Priority", v, loc)
    if (v := get("prioritytier")) is not None:
        part.priority_tier = to_int("PriorityTier", v, loc)
    if (v := get("priorityjobfactor")) is not None:
        part.priority_job_factor = to_int("PriorityJobFactor", v, loc)
    part.allow_accounts = _allow(get("allowaccounts"))
    part.allow_qos = _allow(get("allowqos"))
    part.deny_accounts = split_list(get("denyaccounts") or "")
    part.deny_qos = split_list(get("denyqos") or "")
    if (v := get("oversubscribe") or get("shared")) is not None:
        part.oversubscribe = _oversubscribe(v, loc)
    if (v := get("state")) is not None:
        part.state = v.upper()
        if part.state not in _STATES:
            raise loc.error(f"State={v!r} is not a partition state",
                            "write State=UP, DOWN, DRAIN or INACTIVE")
    if (v := get("preemptmode")) is not None:
        part.preempt_mode = check_preempt_mode("PreemptMode", v, loc)
    if (v := get("requeue")) is not None:
        part.requeue = to_bool("Requeue", v, loc)
    if (v := get("gracetime")) is not None:  # slurm.conf(5): seconds
        part.grace_time = to_int("GraceTime", v, loc)
    return part


def _allow(value: str | None) -> tuple[str, ...]:
    if value is None or value.strip().upper() == "ALL":
        return ()
    return split_list(value)


def _oversubscribe(value: str, loc: Loc) -> str:
    v = value.upper()
    if v.split(":", 1)[0] not in _OVERSUB:
        raise loc.error(f"OverSubscribe={value!r} is not valid",
                        "write NO, YES[:N], FORCE[:N] or EXCLUSIVE")
    return v
