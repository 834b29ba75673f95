"""slurm.conf NodeName / DownNodes lines -> Node objects.

A NodeName=DEFAULT line sets values for the NodeName lines after it (later
DEFAULT lines override single keys), as slurm.conf(5) describes. Sockets is
inferred from CPUs when omitted: CPUs / (Boards * CoresPerSocket *
ThreadsPerCore), the way slurmctld fills it in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tide.config.errors import Warnings
from tide.config.slurm_keys import suggest
from tide.config.values import Loc, split_list, to_int
from tide.hostlist import HostlistError, expand
from tide.model import Gpu, Node, NodeState

# Known node keys tide does not use (no warning).
_NODE_IGNORED = {
    "nodehostname", "port", "tmpdisk", "memspeclimit", "corespeccount", "cpuspeclist",
    "cpubind", "tresweights", "bcastaddr", "parameters", "restrictedcorespergpu",
    "features_active", "activefeatures", "availablefeatures", "resumetimeout",
    "suspendtime", "suspendtimeout", "extra", "comment", "reason",
}
_NODE_KEYS = {
    "nodename", "cpus", "procs", "boards", "sockets", "socketsperboard", "corespersocket",
    "threadspercore", "realmemory", "gres", "feature", "features", "weight", "state",
    "nodeaddr",
} | _NODE_IGNORED

_STATES = {
    "UNKNOWN": NodeState.IDLE, "IDLE": NodeState.IDLE, "CLOUD": NodeState.IDLE,
    "DOWN": NodeState.DOWN, "FAIL": NodeState.DOWN,
    "DRAIN": NodeState.DRAIN, "FAILING": NodeState.DRAIN,
    "FUTURE": NodeState.FUTURE,
}

_GRES_ITEM = re.compile(r"[^,(]+(?:\([^)]*\))?")


@dataclass(slots=True)
class GresDecl:
    """A node's Gres=gpu[:TYPE]:COUNT entries from slurm.conf, in order."""

    gpus: list[tuple[str, int]] = field(default_factory=list)  # (type, count)

    @property
    def count(self) -> int:
        return sum(c for _, c in self.gpus)

    def count_of(self, gpu_type: str) -> int:
        return sum(c for t, c in self.gpus if t == gpu_type)


@dataclass(slots=True)
class NodeLines:
    """Accumulates NodeName lines (with their DEFAULT values)."""

    warn: Warnings
    defaults: dict[str, tuple[str, str]] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    gres: dict[str, GresDecl] = field(default_factory=dict)
    lines: dict[str, Loc] = field(default_factory=dict)  # node -> where it was defined
    _other_gres: set[str] = field(default_factory=set)

    def add(self, pairs: tuple[tuple[str, str], ...], loc: Loc) -> None:
        attrs = {k.lower(): (k, v) for k, v in pairs}
        self._check_keys(attrs, loc)
        name_expr = pairs[0][1]
        if name_expr.upper() == "DEFAULT":
            attrs.pop("nodename")
            self.defaults.update(attrs)
            return
        merged = {**self.defaults, **attrs}
        for node, gres in self._build(name_expr, merged, loc):
            if node.name in self.lines:
                first = self.lines[node.name]
                raise loc.error(f"node {node.name} is already defined at line {first.line}",
                                "define each node once (use NodeName=DEFAULT for shared values)")
            self.lines[node.name] = loc
            self.nodes.append(node)
            self.gres[node.name] = gres

    def _check_keys(self, attrs: dict[str, tuple[str, str]], loc: Loc) -> None:
        for k, (orig, _) in attrs.items():
            if k not in _NODE_KEYS:
                known = ["CPUs", "Boards", "Sockets", "CoresPerSocket", "ThreadsPerCore",
                         "RealMemory", "Gres", "Features", "Weight", "State", "NodeAddr"]
                self.warn.add(loc.file, loc.line,
                              f"unknown NodeName key {orig!r} ignored{suggest(orig, known)}")

    def _build(self, expr: str, attrs: dict[str, tuple[str, str]], loc: Loc
               ) -> list[tuple[Node, GresDecl]]:
        names = _hostlist("NodeName", expr, loc)
        addrs = _addresses(attrs, names, loc)
        shape = _shape(attrs, loc)
        gres = self._gres(attrs, loc)
        state = _state(attrs, loc)
        features = split_list(_get(attrs, "features") or _get(attrs, "feature") or "")
        weight = to_int("Weight", _get(attrs, "weight") or "1", loc)
        memory = to_int("RealMemory", _get(attrs, "realmemory") or "1", loc, minimum=1)
        reason = _get(attrs, "reason") or ""
        out = []
        for i, name in enumerate(names):
            gpus = [Gpu(index=j, type=t) for j, t in enumerate(_gpu_types(gres))]
            node = Node(name=name, cpus=shape.cpus, boards=shape.boards, sockets=shape.sockets,
                        cores_per_socket=shape.cores_per_socket,
                        threads_per_core=shape.threads_per_core, real_memory=memory, gpus=gpus,
                        features=features, weight=weight, state=state, reason=reason,
                        address=addrs[i])
            out.append((node, GresDecl(list(gres.gpus))))
        return out

    def _gres(self, attrs: dict[str, tuple[str, str]], loc: Loc) -> GresDecl:
        decl = GresDecl()
        text = _get(attrs, "gres") or ""
        for item in _GRES_ITEM.findall(text):
            item = item.strip().strip(",")
            if not item:
                continue
            base = item.split("(", 1)[0]
            parts = [p for p in base.split(":") if p.lower() != "no_consume"]
            name = parts[0].strip()
            if name.lower() != "gpu":
                if name not in self._other_gres:
                    self._other_gres.add(name)
                    self.warn.add(loc.file, loc.line,
                                  f"Gres {name!r} is not modelled (tide tracks GPUs only)")
                continue
            count = 1
            if len(parts) > 1 and parts[-1].isdigit():
                count = int(parts.pop())
            elif len(parts) > 1 and re.fullmatch(r"\d+[KMG]", parts[-1]):
                raise loc.error(f"Gres={text!r}: GPU counts take no unit",
                                "write the count as a plain number, e.g. Gres=gpu:a100:8")
            gpu_type = parts[1].strip() if len(parts) > 1 else ""
            if len(parts) > 2:
                raise loc.error(f"Gres item {item!r} is not gpu[:TYPE][:COUNT]",
                                "write e.g. Gres=gpu:a100:8")
            decl.gpus.append((gpu_type, count))
        return decl


def _get(attrs: dict[str, tuple[str, str]], key: str) -> str | None:
    pair = attrs.get(key)
    return pair[1] if pair else None


def _hostlist(key: str, expr: str, loc: Loc) -> list[str]:
    try:
        names = expand(expr)
    except HostlistError as e:
        raise loc.error(f"{key}={expr!r}: {e}",
                        "write a hostlist such as node[01-16] or gpu[001-004,010]") from None
    if not names:
        raise loc.error(f"{key} is empty", f"write {key}=node[01-04]")
    return names


def _addresses(attrs: dict[str, tuple[str, str]], names: list[str], loc: Loc) -> list[str]:
    expr = _get(attrs, "nodeaddr")
    if not expr:
        return [""] * len(names)
    addrs = _hostlist("NodeAddr", expr, loc)
    if len(addrs) != len(names):
        raise loc.error(f"NodeAddr names {len(addrs)} addresses for {len(names)} nodes",
                        "give one address per node, in the same order as NodeName")
    return addrs


@dataclass(frozen=True, slots=True)
class _Shape:
    cpus: int
    boards: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int


def _shape(attrs: dict[str, tuple[str, str]], loc: Loc) -> _Shape:
    def num(key: str, lkey: str, default: int) -> int:
        v = _get(attrs, lkey)
        return default if v is None else to_int(key, v, loc, minimum=1)

    boards = num("Boards", "boards", 1)
    cps = num("CoresPerSocket", "corespersocket", 1)
    tpc = num("ThreadsPerCore", "threadspercore", 1)
    cpus_text = _get(attrs, "cpus") or _get(attrs, "procs")
    cpus = to_int("CPUs", cpus_text, loc, minimum=1) if cpus_text else None
    sockets_text = _get(attrs, "sockets") or _get(attrs, "socketsperboard")
    if sockets_text:
        sockets = to_int("Sockets", sockets_text, loc, minimum=1)
    elif cpus:
        sockets = max(1, cpus // (boards * cps * tpc))
    else:
        sockets = 1
    if cpus is None:
        cpus = boards * sockets * cps * tpc
    return _Shape(cpus, boards, sockets, cps, tpc)


def _state(attrs: dict[str, tuple[str, str]], loc: Loc) -> NodeState:
    text = (_get(attrs, "state") or "UNKNOWN").upper()
    return parse_state("State", text, loc)


def parse_state(key: str, text: str, loc: Loc) -> NodeState:
    base = text.upper().split("+", 1)[0]
    if base not in _STATES:
        raise loc.error(f"{key}={text!r} is not a node state",
                        "write UNKNOWN, IDLE, DOWN, DRAIN, FAIL, FAILING, FUTURE or CLOUD")
    return _STATES[base]


def _gpu_types(gres: GresDecl) -> list[str]:
    return [t for t, c in gres.gpus for _ in range(c)]


def apply_down_nodes(pairs: tuple[tuple[str, str], ...], loc: Loc, nodes: NodeLines) -> None:
    """DownNodes=hostlist State=DOWN|DRAIN|... Reason="..."."""
    attrs = {k.lower(): v for k, v in pairs}
    names = _hostlist("DownNodes", pairs[0][1], loc)
    state = parse_state("State", attrs.get("state", "DOWN"), loc)
    by_name = {n.name: n for n in nodes.nodes}
    for name in names:
        node = by_name.get(name)
        if node is None:
            raise loc.error(f"DownNodes names {name}, which no NodeName line defines",
                            "define the node first or remove it from DownNodes")
        node.state = state
        node.reason = attrs.get("reason", node.reason)
