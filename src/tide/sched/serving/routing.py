"""Request routing rule shared by the live router and the twin. Pure.

Least outstanding requests (Envoy's LEAST_REQUEST with all candidates,
Ray Serve's and SkyServe's default): a request goes to the ready replica
with the fewest requests in flight; among equals, the first one at or after
a rotating start, so ties spread round robin instead of piling on replica 0.
"""

from __future__ import annotations

from collections.abc import Sequence


def least_outstanding(outstanding: Sequence[int], start: int = 0) -> int:
    """Index of the replica to use (outstanding must not be empty)."""
    n = len(outstanding)
    best, best_load = -1, 0
    for k in range(n):
        i = (start + k) % n
        load = outstanding[i]
        if best < 0 or load < best_load:
            best, best_load = i, load
            if load == 0:
                break
    return best
