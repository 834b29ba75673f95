"""Node agents from one controller to the next (tide.exec.agent): a controller that
starts while the last one's agent is still leaving on its `stop` replaces it. Before,
it adopted the leaving agent, which exited a moment later: the node looked dead
(the controller marks it DOWN and fences it, killing its jobs). Real agent processes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tide.exec.agent import STOP, AgentPool


def _up(pool: AgentPool, name: str) -> int:
    deadline = time.time() + 30
    while (pid := pool.pid(name)) is None and time.time() < deadline:
        time.sleep(0.05)
    assert pid is not None, f"agent {name} did not start"
    return pid


def test_a_controller_starting_while_an_agent_leaves_replaces_it(tmp_path: Path) -> None:
    first = AgentPool(tmp_path, sys.executable)
    first.start(["n1"])
    old = _up(first, "n1")
    # the last controller asked it to stop and did not wait (it had adopted the agent,
    # or the machine was slow): the next one starts at once, the agent still there
    (tmp_path / "n1" / STOP).write_text("stop\n")
    nxt = AgentPool(tmp_path, sys.executable)
    try:
        nxt.start(["n1"])
        new = _up(nxt, "n1")
        assert new != old
        time.sleep(2.5)  # past two of the old agent's heartbeats: it would have left by now
        assert nxt.pid("n1") == new and nxt.health("n1", time.time()).alive
    finally:
        nxt.stop()
