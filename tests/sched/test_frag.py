"""Fragmentation-aware placement (tide.sched.frag): the measure on hand-made
nodes, FGD against best fit where they differ, and invariants of both over
random clusters and task streams (never a GPU share given twice, never
more than a node has)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide.sched.frag import (
    MILLI,
    Task,
    TaskMix,
    best_fit,
    fgd,
    fgd_score,
    fits,
    frag_amount,
    frag_amount_unique,
)
from tide.sim.inflate import Pool, inflate, placer


def arrays(rows: list[list[int]], cpu: list[int]) -> tuple[np.ndarray, ...]:
    width = max(len(r) for r in rows)
    left = np.array([r + [0] * (width - len(r)) for r in rows], dtype=np.int64)
    n = len(rows)
    return (left, np.array(cpu, dtype=np.int64), np.full(n, 10**6, dtype=np.int64),
            np.zeros(n, dtype=np.int64))  # fmt: skip


def mix(*types: tuple[int, int, int, float]) -> TaskMix:
    a = np.array(types, dtype=float)
    return TaskMix(a[:, 0].astype(np.int64), a[:, 1].astype(np.int64),
                   a[:, 2].astype(np.int64), a[:, 3] / a[:, 3].sum())  # fmt: skip


def test_frag_amount_by_hand() -> None:
    m = mix((1000, 1, 1000, 1), (1000, 1, 500, 1), (1000, 2, 1000, 2))
    left, cpu, _, _ = arrays([[1000, 190], [1000, 190], [1000, 1000], [300, 300]],
                             [4000, 500, 4000, 4000])  # fmt: skip
    f = frag_amount(left, cpu, m)
    # node 0: the 1-GPU types fit and leave the 190 GPU unusable; the 2-GPU
    # type does not fit, all 1190 free are lost to it: (190 + 190 + 2 x 1190) / 4
    assert f[0] == pytest.approx((190 + 190 + 2 * 1190) / 4)
    # node 1: no CPU for any type: everything free is a fragment
    assert f[1] == pytest.approx(1190)
    # node 2: two whole free GPUs serve every type
    assert f[2] == 0
    # node 3: only 300 milli per GPU: no type fits anywhere
    assert f[3] == pytest.approx(600)
    assert np.allclose(frag_amount_unique(left, cpu, m), f)


def test_mix_from_tasks() -> None:
    tasks = [(1000, 1, 500)] * 6 + [(2000, 2, 1000)] * 3 + [(1000, 0, 1000)] * 5 + [(9, 8, 1000)]
    m = TaskMix.of(tasks)
    assert list(m.gpus) == [1, 2, 8] and np.allclose(m.weight, [0.6, 0.3, 0.1])
    top = TaskMix.of(tasks, popular=0.6)  # the most popular types covering 60 %
    assert list(top.gpus) == [1] and list(top.weight) == [1.0]
    assert len(TaskMix.of([(1000, 0, 1000)])) == 0


def test_fgd_keeps_the_gpus_a_type_needs() -> None:
    """2-GPU tasks are all the cluster sees: a 1-GPU task goes where two
    GPUs stay free together, not to the best-fitting 2-GPU node."""
    left, cpu, mem, model = arrays([[1000, 1000], [1000, 1000, 1000]], [8000, 8000])
    task, m = Task(1000, 0, 1), mix((1000, 2, 1000, 1))
    assert best_fit(left, cpu, mem, model, task).node == 0
    got = fgd(left, cpu, mem, model, task, m)
    assert got is not None and got.node == 1 and got.delta == 0 and len(got.gpus) == 1


def test_fgd_picks_the_gpu_inside_a_node() -> None:
    """A 300-milli share: best fit fills the fullest GPU (400 free, 100 left
    that no 400-milli task can use); FGD takes the whole GPU instead."""
    left, cpu, mem, model = arrays([[400, 1000], [1000, 1000]], [8000, 8000])
    task, m = Task(1000, 0, 1, 300), mix((1000, 1, 400, 1))
    assert best_fit(left, cpu, mem, model, task).gpus == (0,)
    got = fgd(left, cpu, mem, model, task, m)
    assert got is not None and (got.node, got.gpus) == (0, (1,))


def test_fgd_score_ties_small_changes() -> None:
    s = fgd_score(np.array([-1000.0, -20.0, 0.0, 10.0, 100.0, 1e9]))
    assert list(s) == [73, 50, 50, 49, 47, 0]


def test_nothing_fits() -> None:
    left, cpu, mem, model = arrays([[500, 0]], [8000])
    for task in (Task(1000, 0, 1), Task(1000, 0, 1, 600), Task(9000, 0, 0)):
        assert best_fit(left, cpu, mem, model, task) is None
        assert fgd(left, cpu, mem, model, task, mix((1000, 1, 1000, 1))) is None


def test_bad_tasks_are_named() -> None:
    with pytest.raises(ValueError, match="milli=1500"):
        Task(1000, 0, 1, 1500)
    with pytest.raises(ValueError, match="gpus=2"):
        Task(1000, 0, 2, 500)
    with pytest.raises(ValueError, match="placement 'worst'"):
        placer("worst", mix((1000, 1, 1000, 1)))


def test_gpu_model_constraint() -> None:
    left, cpu, mem, _ = arrays([[1000], [1000]], [8000, 8000])
    model = np.array([0, 1])
    task = Task(1000, 0, 1, models=frozenset({1}))
    assert list(fits(left, cpu, mem, model, task)) == [False, True]
    assert fgd(left, cpu, mem, model, task, mix((1000, 1, 1000, 1))).node == 1


# --------------------------------------------------------------------------
# invariants over random clusters and task streams

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TASKS = st.builds(
    lambda cpu, gpus, milli: Task(cpu, cpu, gpus, milli if gpus == 1 else MILLI),
    st.sampled_from([0, 1000, 4000, 12000]),
    st.sampled_from([0, 1, 1, 1, 2, 4, 8]),
    st.sampled_from([100, 250, 470, 810, 1000]),
)


@st.composite
def pools(draw) -> Pool:  # type: ignore[no-untyped-def]
    sizes = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=1, max_size=8))
    width = max(1, max(sizes))
    left = np.zeros((len(sizes), width), dtype=np.int64)
    for i, g in enumerate(sizes):
        for k in range(g):  # some GPUs already partly or wholly used
            left[i, k] = draw(st.sampled_from([0, 190, 530, 1000, 1000]))
    cpu = np.array([draw(st.sampled_from([8000, 32000, 96000])) for _ in sizes])
    model = np.array([0 if g else -1 for g in sizes])
    return Pool(left, cpu, cpu.copy(), model, ["G"], int(MILLI * sum(sizes)))


@SETTINGS
@given(pools(), st.lists(TASKS, min_size=1, max_size=40), st.sampled_from(["bestfit", "fgd"]),
       st.integers(0, 3))  # fmt: skip
def test_placements_never_overcommit(pool: Pool, tasks: list[Task], name: str, seed: int) -> None:
    sizes = (pool.left > 0).sum(axis=1)  # GPUs that exist (none starts at 0 here)
    exists = np.arange(pool.left.shape[1])[None, :] < np.maximum(sizes, 0)[:, None]
    given_out = pool.left.copy()
    start_cpu, start_mem = pool.cpu.copy(), pool.mem.copy()
    place = placer(name, TaskMix.of((t.cpu, t.gpus, t.milli) for t in tasks))
    placed_milli = placed_cpu = 0
    for task in tasks:
        before = pool.left.copy()
        able = fits(pool.left, pool.cpu, pool.mem, pool.model, task)
        choice = place(pool, task)
        if choice is None:  # refused only when no node can take it
            assert not able.any()
            continue
        assert able[choice.node]
        assert len(set(choice.gpus)) == len(choice.gpus) == task.gpus
        for g in choice.gpus:
            assert exists[choice.node, g] or before[choice.node, g] > 0
            # a whole GPU only when wholly free; a share only where it fits
            assert before[choice.node, g] >= (MILLI if not task.shared else task.milli)
        pool.take(task, choice)
        placed_milli += task.gpu_milli
        placed_cpu += task.cpu
        assert (pool.left >= 0).all() and (pool.cpu >= 0).all() and (pool.mem >= 0).all()
    assert int(given_out.sum() - pool.left.sum()) == placed_milli
    assert int(start_cpu.sum() - pool.cpu.sum()) == placed_cpu
    assert (pool.left <= given_out).all() and int((start_mem - pool.mem).sum()) == placed_cpu


@SETTINGS
@given(pools(), st.lists(TASKS, min_size=1, max_size=10))
def test_kept_fragmentation_matches_recomputed(pool: Pool, tasks: list[Task]) -> None:
    """The FGD placer keeps every node's F_n(M) and updates only the node it
    changed: after any stream, the kept values equal a full recomputation,
    and a task's chosen change equals the difference of the recomputations."""
    m = TaskMix.of((t.cpu, t.gpus, t.milli) for t in tasks)
    if not any(t.gpus for t in tasks):
        with pytest.raises(ValueError, match="no task asks for a GPU"):
            inflate(pool, tasks, placer("fgd", m), seed=1)
        return
    curve = inflate(pool, tasks * 3, placer("fgd", m), seed=1, tune=10.0)
    assert curve.placed + curve.failed == len(curve.arrived)
    for task in tasks:
        before = frag_amount(pool.left, pool.cpu, m)
        choice = fgd(pool.left, pool.cpu, pool.mem, pool.model, task, m)
        if choice is None:
            continue
        pool.take(task, choice)
        after = frag_amount(pool.left, pool.cpu, m)
        assert after[choice.node] - before[choice.node] == pytest.approx(choice.delta, abs=1e-6)


def test_inflation_stops_at_tune_and_reports_curve() -> None:
    left, cpu, mem, model = arrays([[1000] * 8, [1000] * 2], [96000, 16000])
    pool = Pool(left, cpu, mem, model, ["G"], 10 * MILLI)
    tasks = [Task(4000, 1000, 1), Task(2000, 1000, 1, 500)]
    curve = inflate(pool, tasks, placer("fgd", TaskMix.of([(4000, 1, 1000), (2000, 1, 500)])),
                    seed=3, tune=1.3)  # fmt: skip
    assert curve.arrived[-1] >= 130 and curve.arrived[-2] < 130
    assert curve.allocated == sorted(curve.allocated) and curve.allocated[-1] <= 100
    assert curve.at(100) == curve.allocated[int(np.searchsorted(curve.arrived, 100 - 1e-9))]
    assert curve.allocated[-1] == pytest.approx(100 * pool.allocated / pool.capacity)
    # a 16-CPU node with 2 GPUs: the 4-CPU tasks fill its CPUs before its GPUs
    assert curve.failed > 0 and curve.first_failure is not None
