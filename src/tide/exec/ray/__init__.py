"""The Ray executor: tide's decisions carried out on the nodes of a Ray cluster.

Ray is an optional dependency (`pip install 'tide[ray]'`). Importing this
package never imports ray; `require_ray()` does, and says how to install it
when it is missing. docs/ray.md describes the design and how to run it.
"""

from __future__ import annotations

from types import ModuleType

NAMESPACE = "tide"  # Ray namespace of tide's named node agents
AGENT_PREFIX = "tide-node-"  # agent actor name: tide-node-<tide node name>


def agent_name(node: str) -> str:
    return f"{AGENT_PREFIX}{node}"


def require_ray() -> ModuleType:
    """`import ray`, or a RuntimeError that says how to get it."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "the Ray executor needs the ray package, which is not installed; "
            "install it with: pip install 'tide[ray]'"
        ) from None
    return ray
