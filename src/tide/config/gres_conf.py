"""gres.conf -> each node's GPUs (index, type, cores, socket, file) and NVLink matrix.

Follows gres.conf(5): `NodeName=` limits a line to some nodes; a line
without it applies to every node whose slurm.conf Gres has that GRES (and
Type, when given). `File=/dev/nvidia[0-3]` names one device per file; the
number in the file name is the device index. `Cores=` lists the cores close
to the device; the socket is derived from them and the node's
CoresPerSocket. `Links=` (one device per line) lists NVLink counts to every
GPU of the node in index order, -1 for the device itself; tide stores the
matrix with 0 on the diagonal.

As slurmctld does, the GPU count comes from slurm.conf: extra gres.conf
devices are dropped, and a node with fewer devices than configured is
drained (Slurm: "gres/gpu count reported lower than configured").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tide.config.conf_lines import ConfLine, parse_conf_text, read_conf
from tide.config.errors import Warnings
from tide.config.slurm_keys import suggest
from tide.config.slurm_nodes import GresDecl
from tide.config.values import Loc, to_int
from tide.hostlist import HostlistError, compress, expand, parse_index_ranges
from tide.model import Gpu, Node, NodeState

_KEYS = ["NodeName", "Name", "Type", "File", "Cores", "CPUs", "Count", "Links", "AutoDetect",
         "Flags", "MultipleFiles"]
_KNOWN = {k.lower() for k in _KEYS}
_TRAILING_NUM = re.compile(r"(\d+)$")


@dataclass(slots=True)
class Device:
    index: int
    type: str
    file: str
    cores: tuple[int, ...]
    links: list[int] | None
    loc: Loc


@dataclass(slots=True)
class GresLine:
    loc: Loc
    nodes: list[str] | None  # None = every node with this GRES
    type: str
    files: list[str]
    count: int | None
    cores: tuple[int, ...]
    links: list[int] | None


def read_gres_conf(path: Path, nodes: list[Node], gres: dict[str, GresDecl],
                   warn: Warnings) -> None:
    apply_gres_lines(read_conf(path), nodes, gres, warn)


def parse_gres_conf(text: str, nodes: list[Node], gres: dict[str, GresDecl],
                    warn: Warnings, file: str = "gres.conf") -> None:
    apply_gres_lines(parse_conf_text(text, file), nodes, gres, warn)


def apply_gres_lines(lines: list[ConfLine], nodes: list[Node], gres: dict[str, GresDecl],
                     warn: Warnings) -> None:
    """Replace the GPUs slurm.conf implied with what gres.conf describes."""
    parsed, autodetect = _parse_lines(lines, warn)
    devices: dict[str, list[Device]] = {}
    for gl in parsed:
        for node in _targets(gl, nodes, gres):
            devices.setdefault(node.name, []).extend(_devices(gl, devices.get(node.name, [])))
    mismatch: dict[str, list[str]] = {}  # problem -> nodes, reported once per problem
    for node in nodes:
        devs = devices.get(node.name)
        if devs:
            _apply_node(node, devs, gres.get(node.name, GresDecl()), warn, mismatch)
    for problem, names in mismatch.items():
        warn.add(lines[0].loc.file if lines else "gres.conf", None,
                 f"{compress(names)}: {problem}")
    missing = [n.name for n in nodes if n.gpus and n.name not in devices]
    if missing and (autodetect or parsed):
        why = "AutoDetect finds them at run time" if autodetect else "no gres.conf line matches"
        warn.add(lines[0].loc.file, None,
                 f"{compress(missing)}: GPU cores and NVLinks unknown ({why}); "
                 "using the counts in slurm.conf")


def _parse_lines(lines: list[ConfLine], warn: Warnings) -> tuple[list[GresLine], bool]:
    out: list[GresLine] = []
    autodetect = False
    other: set[str] = set()
    for line in lines:
        attrs = {k.lower(): (k, v) for k, v in line.pairs}
        loc = line.loc
        for k, (orig, _) in attrs.items():
            if k not in _KNOWN:
                warn.add(loc.file, loc.line,
                         f"unknown gres.conf key {orig!r} ignored{suggest(orig, _KEYS)}")
        if "autodetect" in attrs:
            autodetect = autodetect or attrs["autodetect"][1].lower() not in ("off", "")
        if "name" not in attrs:
            if "autodetect" not in attrs:
                raise loc.error("gres.conf line has no Name=", "write Name=gpu on every line")
            continue
        name = attrs["name"][1]
        if name.lower() != "gpu":
            if name not in other:
                other.add(name)
                warn.add(loc.file, loc.line, f"GRES {name!r} is not modelled (tide tracks GPUs)")
            continue
        out.append(_gres_line(attrs, loc))
    return out, autodetect


def _gres_line(attrs: dict[str, tuple[str, str]], loc: Loc) -> GresLine:
    def get(k: str) -> str | None:
        return attrs[k][1] if k in attrs else None

    nodes = _expand("NodeName", get("nodename"), loc) if get("nodename") else None
    files = _expand("File", get("file") or get("multiplefiles"), loc) if (
        get("file") or get("multiplefiles")) else []
    count_text = get("count")
    count = to_int("Count", count_text, loc, minimum=1) if count_text else None
    cores_text = get("cores") or get("cpus")
    try:
        cores = tuple(parse_index_ranges(cores_text)) if cores_text else ()
    except Exception:
        raise loc.error(f"Cores={cores_text!r} is not a core list",
                        "write core ids as ranges, e.g. Cores=0-15 or Cores=0-7,16-23") from None
    links_text = get("links")
    links = _links(links_text, loc) if links_text else None
    if links is not None and len(files) != 1:
        raise loc.error("Links= needs exactly one device on its line",
                        "write one line per GPU, e.g. File=/dev/nvidia0 Links=-1,2,0,0")
    if count is not None and files and count != len(files):
        raise loc.error(f"Count={count} but File names {len(files)} devices",
                        "drop Count= or make it match the number of files")
    return GresLine(loc, nodes, get("type") or "", files, count, cores, links)


def _expand(key: str, expr: str | None, loc: Loc) -> list[str]:
    try:
        return expand(expr or "")
    except HostlistError as e:
        raise loc.error(f"{key}={expr!r}: {e}",
                        f"write a range such as {key}=/dev/nvidia[0-3]" if key == "File"
                        else f"write a hostlist such as {key}=node[01-04]") from None


def _links(text: str, loc: Loc) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise loc.error(f"Links={text!r} is not a list of numbers",
                        "write one count per GPU, -1 for the device itself: Links=-1,2,0,0"
                        ) from None


def _targets(gl: GresLine, nodes: list[Node], gres: dict[str, GresDecl]) -> list[Node]:
    if gl.nodes is not None:
        wanted = set(gl.nodes)
        found = [n for n in nodes if n.name in wanted]
        unknown = wanted - {n.name for n in found}
        if unknown:
            raise gl.loc.error(f"NodeName names {compress(unknown)}, not defined in slurm.conf",
                               "define the nodes in slurm.conf or fix the hostlist")
        return found
    out = []
    for n in nodes:
        decl = gres.get(n.name)
        if decl and decl.count and (not gl.type or any(t in ("", gl.type) for t, _ in decl.gpus)):
            out.append(n)
    return out


def _devices(gl: GresLine, existing: list[Device]) -> list[Device]:
    out: list[Device] = []
    if gl.files:
        for f in gl.files:
            m = _TRAILING_NUM.search(f)
            idx = int(m.group(1)) if m else _next_index(existing, out)
            out.append(Device(idx, gl.type, f, gl.cores, gl.links, gl.loc))
        return out
    for _ in range(gl.count or 1):
        out.append(Device(_next_index(existing, out), gl.type, "", gl.cores, None, gl.loc))
    return out


def _next_index(*lists: list[Device]) -> int:
    used = {d.index for lst in lists for d in lst}
    return max(used, default=-1) + 1


def _apply_node(node: Node, devs: list[Device], decl: GresDecl, warn: Warnings,
                mismatch: dict[str, list[str]]) -> None:
    seen: dict[int, Device] = {}
    for d in devs:
        if d.index in seen:
            raise d.loc.error(f"node {node.name}: GPU {d.index} is already described at "
                              f"line {seen[d.index].loc.line}", "list each device once per node")
        seen[d.index] = d
    ordered = sorted(devs, key=lambda d: d.index)
    matrix = _matrix(node, ordered)
    conf = decl.count
    if conf != len(ordered):
        what = "drained, as Slurm does" if len(ordered) < conf else "extra devices ignored"
        mismatch.setdefault(f"slurm.conf Gres has {conf} GPUs but gres.conf describes "
                            f"{len(ordered)} ({what})", []).append(node.name)
    keep = ordered[:conf]
    only_type = decl.gpus[0][0] if len({t for t, _ in decl.gpus}) == 1 and decl.gpus else ""
    node.gpus = [Gpu(index=d.index, type=d.type or only_type, socket=_socket(node, d.cores),
                     cores=d.cores, file=d.file) for d in keep]
    declared, found = _type_counts(decl.gpus), _type_counts([(g.type, 1) for g in node.gpus])
    if conf == len(ordered) and any(t for t, _ in decl.gpus) and declared != found:
        mismatch.setdefault(f"GPU types differ: slurm.conf Gres={_gres_text(declared)}, "
                            f"gres.conf {_gres_text(found)}", []).append(node.name)
    node.links = [row[: len(keep)] for row in matrix[: len(keep)]] if matrix else []
    if len(ordered) < conf:
        node.state = NodeState.DRAIN
        node.reason = "gres/gpu count reported lower than configured"


def _type_counts(pairs: list[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t, c in pairs:
        out[t] = out.get(t, 0) + c
    return out


def _gres_text(counts: dict[str, int]) -> str:
    return ",".join(f"gpu:{t}:{c}" if t else f"gpu:{c}" for t, c in sorted(counts.items()))


def _socket(node: Node, cores: tuple[int, ...]) -> int | None:
    sockets = {node.socket_of_core(c) for c in cores}
    return sockets.pop() if len(sockets) == 1 else None


def _matrix(node: Node, devs: list[Device]) -> list[list[int]]:
    if not any(d.links is not None for d in devs):
        return []
    n = len(devs)
    rows: list[list[int]] = []
    for i, d in enumerate(devs):
        if d.links is None:
            rows.append([0] * n)
            continue
        if len(d.links) != n:
            raise d.loc.error(f"node {node.name}: Links has {len(d.links)} values but the node "
                              f"has {n} GPUs", "give one count per GPU, in index order")
        rows.append([0 if j == i else max(0, v) for j, v in enumerate(d.links)])
    return rows
