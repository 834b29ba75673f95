"""The count path's memory savings give the same numbers: the held node ids
taken whole when every job started, and the report's occupancy given the
count path's one GPU count per entry as one value."""

from __future__ import annotations

import numpy as np
import pytest

from tide.sim.count_fast import _held

_countsim = pytest.importorskip("tide.sim._countsim", reason="the C kernel is not built")


def _masked(ids: np.ndarray, need: np.ndarray, started: np.ndarray) -> tuple[list, list]:  # type: ignore[type-arg]
    flat = ids[np.repeat(started, need)].astype(np.int64)
    bounds = np.concatenate(([0], np.cumsum(np.where(started, need, 0))))
    return flat.tolist(), bounds.tolist()


def test_held_ids_whole_or_masked_are_the_same() -> None:
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(0, 40))
        need = rng.integers(1, 6, n)
        ids = rng.integers(0, 100, int(need.sum())).astype(np.int32)
        started = rng.random(n) < (1.0 if trial % 2 else 0.7)
        flat, bounds = _held(ids, need, started)
        assert flat.dtype == np.int64
        assert (flat.tolist(), bounds.tolist()) == _masked(ids, need, started)


def test_occupancy_with_one_gpus_value_equals_the_full_column() -> None:
    if not getattr(_countsim, "OCCUPANCY_ONE_GPUS", 0):
        pytest.skip("the C kernel was built before OCCUPANCY_ONE_GPUS: rebuild it")
    rng = np.random.default_rng(8)
    for _ in range(100):
        jobs, nodes, rows = int(rng.integers(1, 30)), int(rng.integers(2, 50)), 4
        need = rng.integers(1, 5, jobs)
        bounds = np.concatenate(([0], np.cumsum(need))).astype(np.int64)
        node = rng.integers(0, nodes, int(need.sum())).astype(np.int64)
        row_of = rng.integers(-1, rows, nodes).astype(np.int64)
        start = rng.random(jobs) * 100
        end = start + rng.random(jobs) * 50
        by_start, by_end = np.argsort(start, kind="stable"), np.argsort(end, kind="stable")
        edges, cap = np.linspace(0, 160, 13), np.full(rows, 16, dtype=np.int64)
        g = int(rng.integers(0, 9))
        full = np.full(len(node), g, dtype=np.int64)
        args = (row_of, start, end, by_start, by_end, rows, edges, cap)
        got = [
            _countsim.occupancy(bounds, node, gpus, *args)
            for gpus in (np.array([g], dtype=np.int64), full)
        ]
        assert got[0] == got[1]
