"""Generator: determinism, preset shapes, estimate rules, model validation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.sim.workload import (
    PRESETS,
    Dist,
    Estimates,
    GeneratorModel,
    Stream,
    WorkloadError,
    generate,
    generate_iter,
    parse_shares,
    preset,
    write_preset,
)
from tide.sim.workload.generator import expected_jobs
from tide.sim.workload.scenarios import BUNDLED, read_scenario, scenario_path


def test_same_seed_same_jobs() -> None:
    assert generate("demo", 11) == generate("demo", 11)
    assert generate("demo", 11)[1] != generate("demo", 12)[1]


def test_presets_exist() -> None:
    assert sorted(PRESETS) == ["demo", "llm", "month1000", "seed000", "seed004"]
    with pytest.raises(WorkloadError, match="unknown generator preset 'nope'; choose one of"):
        generate("nope", 0)


def test_seed000_two_gangs_on_16_gpus() -> None:
    cluster, jobs = generate("seed000", 0)
    assert not isinstance(cluster, str) and cluster.total_gpus == 16 and len(cluster.nodes) == 2
    assert len(jobs) == 2 and jobs[0].submit == jobs[1].submit == 0
    for j in jobs:
        assert (j.request.nodes_min, j.request.nodes_max, j.request.gpus_per_node) == (2, 2, 8)
    assert {j.account for j in jobs} == {"team-a", "team-b"}


@pytest.mark.slow
def test_seed004_shape() -> None:
    model = preset("seed004")
    cluster, jobs = generate(model, 4)
    assert cluster == "seed004"
    big = [j for j in jobs if j.request.total_gpus(j.request.nodes_min) > 4]
    assert len(big) == 1
    b = big[0].request
    assert (b.nodes_min, b.gpus_per_node, big[0].submit, big[0].duration) == (100, 8, 3600, 43200)
    small = [j for j in jobs if j is not big[0]]
    gpus = np.array([j.request.gpus_per_node for j in small])
    dur = np.array([j.duration for j in small])
    assert set(gpus.tolist()) == {1, 2, 3, 4} and dur.min() >= 2 and dur.max() <= 10
    assert max(j.submit for j in small) < model.horizon
    load = float((gpus * dur).sum()) / (800 * model.horizon)
    assert 0.8 <= load <= 0.9
    assert all(j.request.nodes_min == 1 for j in small)


def test_demo_shape() -> None:
    cluster, jobs = generate("demo", 0)
    assert cluster == "demo"
    sizes = {j.request.total_gpus(j.request.nodes_min) for j in jobs}
    assert min(sizes) == 1 and max(sizes) == 64
    assert {j.account for j in jobs} == {"research", "prod", "students"}
    assert any(j.request.switches == 1 and j.request.nodes_min > 1 for j in jobs)
    assert all(j.request.switches is None for j in jobs if j.request.nodes_min == 1)
    assert all(j.submit < 86400 for j in jobs)
    assert [j.id for j in jobs] == list(range(1, len(jobs) + 1))
    assert [j.submit for j in jobs] == sorted(j.submit for j in jobs)


def test_month1000_size() -> None:
    model = preset("month1000")
    assert not isinstance(model.cluster, str)
    assert len(model.cluster.nodes) == 1000 and model.cluster.total_gpus == 8000
    leaves = [s for s in model.cluster.topology.switches if s.is_leaf]
    assert len(leaves) == 32 and sum(len(s.nodes) for s in leaves) == 1000
    assert 80_000 <= expected_jobs(model) <= 120_000


def test_estimates_round_up_and_never_below_run() -> None:
    _, jobs = generate("demo", 5)
    for j in jobs:
        limit = j.request.time_limit
        assert limit is not None and limit % 60 == 0 and j.duration <= limit <= 86400


def _model(**kw: object) -> GeneratorModel:
    s = Stream("s", rate=0.01, sizes=((1, 1.0), (16, 1.0)), duration=Dist("fixed", 100))
    base = GeneratorModel("t", cluster="x", gpus_per_node=8, horizon=10_000, streams=(s,))
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stream", "match"),
    [
        (Stream("bad", 1.0, ((12, 1.0),), Dist("fixed", 1)), "size 12 GPUs"),
        (Stream("bad", -1.0, ((1, 1.0),), Dist("fixed", 1)), "rate -1.0"),
        (Stream("bad", 1.0, ((1, 0.0),), Dist("fixed", 1)), "positive weights"),
        (Stream("bad", 1.0, ((1, 1.0),), Dist("fixed", 1), Estimates(p_exact=0.7, p_max=0.5)),
         "p_exact"),
    ],
)  # fmt: skip
def test_validation(stream: Stream, match: str) -> None:
    with pytest.raises(WorkloadError, match=f"stream 'bad'.*{match}"):
        list(generate_iter(_model(streams=(stream,)), 0))


def test_exact_and_max_estimates() -> None:
    exact = Stream("e", 0.05, ((1, 1.0),), Dist("uniform", 10, 500), Estimates(p_exact=1.0))
    maxed = Stream("m", 0.05, ((1, 1.0),), Dist("uniform", 10, 500),
                   Estimates(p_max=1.0, cap=7200))  # fmt: skip
    _, jobs = generate(_model(streams=(exact, maxed)), 1)
    for j in jobs:
        want = 7200 if j.name == "m" else -(-j.duration // 60) * 60
        assert j.request.time_limit == want


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_invariants(seed: int) -> None:
    _, jobs = generate(_model(), seed)
    assert [j.submit for j in jobs] == sorted(j.submit for j in jobs)
    for j in jobs:
        r = j.request
        assert r.total_gpus(r.nodes_min) in (1, 16) and r.nodes_min == r.nodes_max
        assert r.time_limit is not None and r.time_limit >= j.duration
        assert round(j.submit, 3) == j.submit


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_scenarios_are_current(name: str, tmp_path: Path) -> None:
    """If this fails after a generator change, regenerate the file with
    write_preset(preset, seed, scenario_path(name)) and review the diff."""
    p, seed = BUNDLED[name]
    out = tmp_path / f"{name}.jsonl"
    n = write_preset(p, seed, out)
    assert out.read_bytes() == scenario_path(name).read_bytes()
    w = read_scenario(name)
    assert len(w.jobs()) == n
    assert w.info.meta["preset"] == p and w.info.meta["seed"] == str(seed)
    assert parse_shares(w.info.meta["shares"]) == pytest.approx(dict(preset(p).shares))


def test_scenario_errors() -> None:
    with pytest.raises(WorkloadError, match="no bundled scenario 'x'; choose one of demo"):
        scenario_path("x")
    with pytest.raises(WorkloadError, match="account=weight"):
        parse_shares("a:1")
