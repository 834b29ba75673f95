"""Taking work off a queue in batches (the submission intake and writer)."""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def drain(
    q: queue.SimpleQueue[T | None], first: T, limit: int, size: Callable[[T], int] = lambda _: 1
) -> tuple[list[T], bool]:
    """`first` and what else is queued now, up to `limit` in size: (batch,
    stop), stop being True when the queue's None (the end) was taken."""
    batch, total = [first], size(first)
    while total < limit:
        try:
            nxt = q.get_nowait()
        except queue.Empty:
            break
        if nxt is None:
            return batch, True
        batch.append(nxt)
        total += size(nxt)
    return batch, False
