"""Node membership from the executor (the Ray executor): a node whose Ray node
died goes DOWN, through the same path as `tide node down` (its jobs end
NODE_FAIL, or wait again with --requeue); one that is back (same tide name, a
new Ray node) is resumed. Only nodes tide itself set DOWN this way are
resumed: an operator's DOWN stays until an operator resumes it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from tide.server.auth import Principal

log = logging.getLogger("tide.server")

CHECK_EVERY = 1.0  # seconds between looks at the executor's membership
REASON = "ray: node died"  # tide.exec.ray.cluster.DIED; "ray:" marks tide's own DOWNs
_ACTOR = Principal(user="tide", role="admin")
_last = [0.0]


def sync(ctl: Any, force: bool = False) -> None:
    """Mark DOWN / resume nodes as the executor's membership says (the loop
    calls this before collecting exits, so a dead node's jobs are requeued)."""
    changes = getattr(ctl.executor, "node_changes", None)
    if changes is None or (not force and time.monotonic() - _last[0] < CHECK_EVERY):
        return
    _last[0] = time.monotonic()
    from tide.server.services import nodes

    changes()  # re-reads membership; the executor ends the jobs of dead nodes
    alive = ctl.executor.alive_nodes()
    with ctl.lock:
        states = dict(ctl.node_states)
    for n in ctl.cluster.nodes:
        state, reason = states.get(n.name, (str(n.state), n.reason))
        if n.name not in alive and state not in ("DOWN", "FUTURE"):
            log.warning("node %s left the Ray cluster: DOWN, its jobs end", n.name)
            nodes.set_state(ctl, _ACTOR, n.name, "DOWN", REASON)
        elif n.name in alive and state == "DOWN" and reason.startswith("ray:"):
            log.info("node %s is back in the Ray cluster: resumed", n.name)
            nodes.set_state(ctl, _ACTOR, n.name, "IDLE", "")
