"""YAML node groups -> Node objects (GPUs, sockets, cores, NVLink matrix)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tide.config.links import build_links
from tide.config.yaml_schema import GpuSpec, NodeGroupSpec
from tide.model import Gpu, Node

Fail = Callable[[Sequence[str | int], str, str], Exception]  # (path, problem, fix) -> error
_TRAILING_NUM = re.compile(r"(\d+)$")


def build_nodes(groups: list[NodeGroupSpec], fail: Fail) -> list[Node]:
    nodes: list[Node] = []
    seen: dict[str, int] = {}
    for gi, g in enumerate(groups):
        path: list[str | int] = ["nodes", gi]
        addrs = g.addresses or [""] * len(g.names)
        if len(addrs) != len(g.names):
            raise fail([*path, "addresses"], f"{len(addrs)} addresses for {len(g.names)} nodes",
                       "give one address per node, in the order of names")
        cpus = g.cpus or g.boards * g.sockets * g.cores_per_socket * g.threads_per_core
        for name, addr in zip(g.names, addrs, strict=True):
            if name in seen:
                raise fail([*path, "names"], f"node {name} is already in node group {seen[name]}",
                            "list each node in one group")
            seen[name] = gi
            node = Node(name=name, cpus=cpus, boards=g.boards, sockets=g.sockets,
                        cores_per_socket=g.cores_per_socket, threads_per_core=g.threads_per_core,
                        real_memory=g.real_memory, features=tuple(g.features), weight=g.weight,
                        state=g.state, reason=g.reason, address=addr)
            if g.gpus is not None:
                node.gpus, node.links = build_gpus(g.gpus, node, [*path, "gpus"], fail)
            nodes.append(node)
    return nodes


def build_gpus(spec: GpuSpec, node: Node, path: list[str | int], fail: Fail
               ) -> tuple[list[Gpu], list[list[int]]]:
    gpus = _devices(spec, node, path, fail) if spec.devices is not None else _compact(
        spec, node, path, fail)
    links: list[list[int]] = []
    if spec.nvlink is not None:
        try:
            links = build_links(spec.nvlink, len(gpus), [g.socket for g in gpus])
        except ValueError as e:
            raise fail([*path, "nvlink"], str(e), "see docs/cluster.md, 'NVLink'") from None
    return gpus, links


def _devices(spec: GpuSpec, node: Node, path: list[str | int], fail: Fail) -> list[Gpu]:
    devs = spec.devices or []
    if spec.count is not None and spec.count != len(devs):
        raise fail([*path, "count"], f"count is {spec.count} but {len(devs)} devices are listed",
                   "drop count or make it match devices")
    out = []
    for d in devs:
        socket = d.socket if "socket" in d.model_fields_set else _socket(node, d.cores)
        out.append(Gpu(index=d.index, type=d.type or spec.type, socket=socket, cores=d.cores,
                       file=d.file))
    if len({g.index for g in out}) != len(out):
        raise fail([*path, "devices"], "two devices have the same index", "give each its own")
    return out


def _compact(spec: GpuSpec, node: Node, path: list[str | int], fail: Fail) -> list[Gpu]:
    lists = {"sockets": spec.sockets if isinstance(spec.sockets, list) else None,
             "cores": spec.cores, "files": spec.files}
    n = spec.count
    if n is None:
        n = next((len(v) for v in lists.values() if v is not None), None)
        if n is None:
            raise fail(path, "no GPU count", "write count: 8 (and type: a100)")
    for key, value in lists.items():
        if value is not None and len(value) != n:
            raise fail([*path, key], f"{key} has {len(value)} entries for {n} GPUs",
                       f"give one {key[:-1]} per GPU")
    sockets = _sockets(spec, node, n, path, fail)
    out = []
    for i in range(n):
        file = spec.files[i] if spec.files else ""
        m = _TRAILING_NUM.search(file)
        index = int(m.group(1)) if m else i
        if spec.cores is not None:
            cores = spec.cores[i]
            socket = sockets[i] if sockets is not None else _socket(node, cores)
        elif sockets is not None:
            s = sockets[i]
            cores = tuple(range(s * node.cores_per_socket, (s + 1) * node.cores_per_socket))
            socket = s
        else:
            cores, socket = (), None
        out.append(Gpu(index=index, type=spec.type, socket=socket, cores=cores, file=file))
    return out


def _sockets(spec: GpuSpec, node: Node, n: int, path: list[str | int], fail: Fail
             ) -> list[int] | None:
    total = node.boards * node.sockets
    if spec.sockets is None:
        return None
    if spec.sockets == "spread":
        return [i * total // max(1, n) for i in range(n)]
    if isinstance(spec.sockets, str):
        raise fail([*path, "sockets"], f"sockets: {spec.sockets!r} is not valid",
                   "write a socket per GPU such as [0, 0, 1, 1] or 'spread'")
    bad = [s for s in spec.sockets if not 0 <= s < total]
    if bad:
        raise fail([*path, "sockets"], f"socket {bad[0]} does not exist (the node has {total})",
                   f"use sockets 0..{total - 1}")
    return list(spec.sockets)


def _socket(node: Node, cores: tuple[int, ...]) -> int | None:
    sockets = {node.socket_of_core(c) for c in cores}
    return sockets.pop() if len(sockets) == 1 else None
