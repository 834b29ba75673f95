"""Node membership from the executor (the Ray executor): a node whose Ray node
died goes DOWN, through the same path as `tide node down` (its jobs end
NODE_FAIL, or wait again with --requeue); one that is back (same tide name, a
new Ray node) is resumed. Only nodes tide itself set DOWN this way are
resumed: an operator's DOWN stays until an operator resumes it. A Ray node
with a name tide has not seen joins the cluster, when the cluster was built
from Ray (with a cluster file, the file is the list of nodes).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from tide.server.auth import Principal
from tide.server.ports import Ctl

log = logging.getLogger("tide.server")

CHECK_EVERY = 1.0  # seconds between looks at the executor's membership
REASON = "ray: node died"  # tide.exec.ray.cluster.DIED; "ray:" marks tide's own DOWNs
_ACTOR = Principal(user="tide", role="admin")
_last = [0.0]
_ignored: set[str] = set()  # names logged once as not in the cluster file


@runtime_checkable
class Membership(Protocol):
    """An executor that follows a cluster's membership (the Ray executor)."""

    def node_changes(self) -> tuple[list[str], list[str]]: ...
    def alive_nodes(self) -> set[str]: ...
    def ray_node_table(self) -> dict[str, Any]: ...


def sync(ctl: Ctl, force: bool = False) -> None:
    """Mark DOWN / resume / add nodes as the executor's membership says (the
    loop calls this before collecting exits, so a dead node's jobs requeue)."""
    ex = ctl.executor
    if not isinstance(ex, Membership) or (not force and time.monotonic() - _last[0] < CHECK_EVERY):
        return
    _last[0] = time.monotonic()
    from tide.server.services import nodes

    ex.node_changes()  # re-reads membership; the executor ends the jobs of dead nodes
    alive = ex.alive_nodes()
    with ctl.lock:
        states = dict(ctl.node_states)
    known = {n.name for n in ctl.cluster.nodes}
    if alive - known:
        _grow(ctl, ex, sorted(alive - known))
    for n in ctl.cluster.nodes:
        state, reason = states.get(n.name, (str(n.state), n.reason))
        if n.name not in alive and state not in ("DOWN", "FUTURE"):
            log.warning("node %s left the Ray cluster: DOWN, its jobs end", n.name)
            nodes.set_state(ctl, _ACTOR, n.name, "DOWN", REASON)
        elif n.name in alive and state == "DOWN" and reason.startswith("ray:"):
            log.info("node %s is back in the Ray cluster: resumed", n.name)
            nodes.set_state(ctl, _ACTOR, n.name, "IDLE", "")


def _grow(ctl: Ctl, ex: Membership, names: list[str]) -> None:
    """New Ray nodes become tide nodes at the end of the list (allocations
    name nodes by index, so existing ones keep theirs), in partition 'ray'."""
    from tide.exec.ray.cluster import PARTITION, tide_node, topology
    from tide.store import nodes as noderepo

    cl = ctl.cluster
    if cl.partition(PARTITION) is None or not ctl.origin.startswith("Ray cluster"):
        for name in set(names) - _ignored:
            log.warning("Ray node %s is not in the cluster file; add it there to use it", name)
        _ignored.update(names)
        return
    table = ex.ray_node_table()
    new = [tide_node(name, table[name]) for name in names]
    nodes = [*cl.nodes, *new]
    parts = [
        replace(p, nodes=(*p.nodes, *names)) if p.name == PARTITION else p for p in cl.partitions
    ]
    topo = topology({n.name: table[n.name] for n in nodes if n.name in table})
    with ctl.sessions.begin() as s:
        noderepo.ensure(s, names, {})
        rows = noderepo.load(s)  # a name seen in an earlier run keeps its stored state
        stored = {n: (rows[n].state, rows[n].reason) for n in names if n in rows}
    with ctl.loop.cycle_lock:
        ctl.cluster = replace(cl, nodes=nodes, partitions=parts, topology=topo)
        ctl.feasible_cache.clear()
        for name in names:
            ctl.set_node_state(name, *stored.get(name, ("IDLE", "")))
        ctl.loop.cluster_changed()
    log.info("Ray node(s) %s joined: now tide nodes in partition %s", ", ".join(names), PARTITION)
