"""tide.server.batching.drain: what one batch takes off the queue."""

from __future__ import annotations

import queue

from tide.server.batching import drain


def test_a_batch_takes_what_is_queued_up_to_its_limit() -> None:
    q: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    for i in range(2, 6):
        q.put(i)
    assert drain(q, 1, 3) == ([1, 2, 3], False)
    assert drain(q, 0, 10) == ([0, 4, 5], False)


def test_sizes_count_toward_the_limit_and_the_end_stops_the_batch() -> None:
    q: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    for item in (4, None, 7):
        q.put(item)
    assert drain(q, 5, 100, size=lambda n: n) == ([5, 4], True)
    assert drain(q, 60, 50, size=lambda n: n) == ([60], False)  # over the limit alone
    assert q.get_nowait() == 7
