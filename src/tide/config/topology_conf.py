"""topology.conf -> switches (topology/tree) and blocks (topology/block).

topology.conf(5): `SwitchName=s Nodes=hostlist` is a leaf, `SwitchName=s
Switches=hostlist` an upper switch, `LinkSpeed=` is kept for display.
`BlockName=b Nodes=hostlist` defines a block and `BlockSizes=4,16` the
aggregate sizes the block plugin may use. Topology.kind follows
TopologyPlugin: topology/tree, topology/block, else flat.
"""

from __future__ import annotations

from pathlib import Path

from tide.config.conf_lines import ConfLine, parse_conf_text, read_conf
from tide.config.errors import Warnings
from tide.config.slurm_keys import suggest
from tide.config.values import Loc, split_list, to_int
from tide.hostlist import HostlistError, compress, expand
from tide.model import Block, Node, Switch, Topology, TopologyKind

_KEYS = ["SwitchName", "Switches", "Nodes", "LinkSpeed", "BlockName", "BlockSizes"]


def kind_for_plugin(plugin: str) -> TopologyKind:
    p = plugin.lower()
    if p.endswith("/tree"):
        return TopologyKind.TREE
    if p.endswith("/block"):
        return TopologyKind.BLOCK
    return TopologyKind.FLAT


def read_topology_conf(path: Path, nodes: list[Node], plugin: str, warn: Warnings) -> Topology:
    return build_topology(read_conf(path), nodes, plugin, warn)


def parse_topology_conf(text: str, nodes: list[Node], plugin: str, warn: Warnings,
                        file: str = "topology.conf") -> Topology:
    return build_topology(parse_conf_text(text, file), nodes, plugin, warn)


def build_topology(lines: list[ConfLine], nodes: list[Node], plugin: str,
                   warn: Warnings) -> Topology:
    topo = Topology(kind=kind_for_plugin(plugin))
    where: dict[str, Loc] = {}
    known = {n.name for n in nodes}
    for line in lines:
        attrs = {k.lower(): (k, v) for k, v in line.pairs}
        for k, (orig, _) in attrs.items():
            if k not in {x.lower() for x in _KEYS}:
                warn.add(line.loc.file, line.loc.line,
                         f"unknown topology.conf key {orig!r} ignored{suggest(orig, _KEYS)}")
        head = line.head
        if head == "switchname":
            sw = _switch(attrs, line.loc, known, warn)
            if sw.name in where:
                raise line.loc.error(f"switch {sw.name} is already defined at line "
                                     f"{where[sw.name].line}", "define each switch once")
            where[sw.name] = line.loc
            topo.switches.append(sw)
        elif head == "blockname":
            topo.blocks.append(Block(line.head_value, tuple(
                _names("Nodes", attrs, line.loc, known, warn))))
        elif head == "blocksizes":
            topo.block_sizes = tuple(to_int("BlockSizes", s, line.loc, minimum=1)
                                     for s in split_list(line.head_value))
        else:
            raise line.loc.error(f"{line.pairs[0][0]} does not start a topology.conf line",
                                 "start lines with SwitchName=, BlockName= or BlockSizes=")
    check_tree(topo, where, nodes, warn)
    if topo.kind is TopologyKind.FLAT and (topo.switches or topo.blocks):
        warn.add(lines[0].loc.file, None, f"TopologyPlugin={plugin or 'none'}: Slurm ignores "
                 "topology.conf; tide keeps it for display but places jobs as on a flat network")
    return topo


def _names(key: str, attrs: dict[str, tuple[str, str]], loc: Loc, known: set[str],
           warn: Warnings) -> list[str]:
    expr = attrs.get(key.lower(), (key, ""))[1]
    try:
        names = expand(expr)
    except HostlistError as e:
        raise loc.error(f"{key}={expr!r}: {e}", f"write a hostlist such as {key}=node[01-04]"
                        ) from None
    if key == "Nodes":
        unknown = [n for n in names if n not in known]
        if unknown:
            warn.add(loc.file, loc.line, f"{compress(unknown)} not defined in slurm.conf "
                     "(ignored)")
            names = [n for n in names if n in known]
    return names


def _switch(attrs: dict[str, tuple[str, str]], loc: Loc, known: set[str],
            warn: Warnings) -> Switch:
    name = attrs["switchname"][1]
    nodes = _names("Nodes", attrs, loc, known, warn) if "nodes" in attrs else []
    children = _names("Switches", attrs, loc, known, warn) if "switches" in attrs else []
    if nodes and children:
        raise loc.error(f"switch {name} has both Nodes= and Switches=",
                        "a leaf switch lists Nodes=, an upper switch lists Switches=")
    speed = to_int("LinkSpeed", attrs["linkspeed"][1], loc, minimum=1) if (
        "linkspeed" in attrs) else 1
    return Switch(name, tuple(nodes), tuple(children), speed)


def check_tree(topo: Topology, where: dict[str, Loc], nodes: list[Node],
               warn: Warnings) -> None:
    """Every child switch defined, no loops; warn about nodes under no leaf."""
    by_name = {s.name: s for s in topo.switches}
    for sw in topo.switches:
        for child in sw.switches:
            if child not in by_name:
                raise where[sw.name].error(f"switch {sw.name} lists switch {child}, which is "
                                           "not defined", f"define switch {child} or fix the "
                                           f"switches of {sw.name}")
    _check_cycles(topo, where)
    if topo.kind is TopologyKind.TREE and topo.switches:
        in_leaf = {n for s in topo.switches for n in s.nodes}
        missing = [n.name for n in nodes if n.name not in in_leaf]
        if missing:
            first = next(iter(where.values()))
            warn.add(first.file, None, f"{compress(missing)} under no leaf switch "
                     "(Slurm cannot place multi-node jobs across them)")


def _check_cycles(topo: Topology, where: dict[str, Loc]) -> None:
    by_name = {s.name: s for s in topo.switches}
    state: dict[str, int] = {}  # 1 = visiting, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            loop = " -> ".join([*path[path.index(name):], name])
            raise where[name].error(f"switch loop {loop}", "a switch cannot contain itself")
        state[name] = 1
        for child in by_name[name].switches:
            visit(child, [*path, name])
        state[name] = 2

    for sw in topo.switches:
        visit(sw.name, [])
