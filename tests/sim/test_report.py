"""The HTML report: one self-contained page with every section and policy."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tide.sim.metrics import JobResult, Sample
from tide.sim.report import (
    SECTIONS,
    RunData,
    render_report,
    step_bins,
    timeline_from_results,
    write_report,
)
from tide.sim.workload.clusters import tree_cluster


def _run(shift: float) -> RunData:
    cluster = tree_cluster("t", nodes=4, nodes_per_leaf=2)
    res = [
        JobResult(1, "a", "u1", "research", gpus=16, nodes=2, submit=0, start=shift,
                  end=shift + 3600, state="COMPLETED", leaf_switches=1, min_leaf_switches=1,
                  nodelist="gpu[01-02]", gpu_index="gpu01:0-7;gpu02:0-7"),
        JobResult(2, "b", "u2", "prod", gpus=1, nodes=1, submit=60, start=60 + shift,
                  end=600 + shift, state="COMPLETED", gpu_index="gpu03:0"),
        JobResult(3, "c", "u2", "prod", gpus=64, nodes=8, submit=100),  # never starts
    ]  # fmt: skip
    return RunData(res, cluster.total_gpus, target_shares={"research": 0.6, "prod": 0.4},
                   cluster=cluster)  # fmt: skip


def test_sections_policies_and_no_network(tmp_path: Path) -> None:
    p = tmp_path / "report.html"
    write_report(p, {"slurm": _run(0), "k8s-default": _run(300)}, title="mini <twin>")
    html = p.read_text()
    for key, title in SECTIONS:
        assert f'<section id="{key}"><h2>{title}</h2>' in html
    assert "slurm" in html and "k8s-default" in html and "mini &lt;twin&gt;" in html
    assert html.count("<svg") >= 2 + 3 + 2 + 2  # util+queue, 3 CDFs, 2 accounts, 2 strips
    assert "<script" not in html and not re.search(r'(src|href)="https?:', html)
    assert "share research (achieved / target)" in html and "60.0 %" in html
    assert html.startswith("<!DOCTYPE html>") and html.endswith("</html>\n")


def test_deterministic() -> None:
    runs = {"a": _run(0), "b": _run(10)}
    assert render_report(runs) == render_report(runs)


def test_engine_timeline_and_no_cluster() -> None:
    run = _run(0)
    run.cluster = None
    run.timeline = [Sample(0, 16, 0, 1, {"research": 16}), Sample(3600, 0, 0, 1, {})]
    html = render_report({"only": run})
    assert "gpu01…" in html or "gpu01" in html
    with pytest.raises(ValueError, match="at least one run"):
        render_report({})


def test_step_bins() -> None:
    ts = np.array([0.0, 10.0, 30.0])
    vals = np.array([1.0, 3.0, 0.0])
    out = step_bins(ts, vals, np.array([-10.0, 0.0, 20.0, 40.0]))
    assert out.tolist() == pytest.approx([0.0, (10 + 30) / 20, 30 / 20])


def test_timeline_from_results() -> None:
    s = timeline_from_results(_run(0).results)
    assert [(x.t, x.allocated_gpus, x.queue_len) for x in s] == [
        (0, 16, 0), (60, 17, 0), (100, 17, 1), (600, 16, 1), (3600, 0, 1)]  # fmt: skip
    assert s[1].by_account == {"research": 16, "prod": 1}


def test_account_shares_use_only_samples_with_account_figures() -> None:
    # The count driver lists accounts only every PLOT_PERIOD; samples in between
    # carry none. Shares must come from the samples that do: here research holds
    # 8 of 8 allocated GPUs from t=0, and a sample at t=10 (allocated 16, no
    # accounts) must not turn into "research 0 %" nor shrink its share.
    from tide.sim.report import _with_accounts
    from tide.sim.table import Timeline

    tl = Timeline.from_samples([
        Sample(0.0, 8, 0, 0, {"research": 8}),
        Sample(10.0, 16, 0, 0, {}),
        Sample(900.0, 16, 0, 0, {"research": 8, "prod": 8}),
        Sample(1800.0, 0, 0, 0, {}),
    ])  # fmt: skip
    t, alloc, series = _with_accounts(tl)
    assert t.tolist() == [0.0, 900.0, 1800.0] and alloc.tolist() == [8, 16, 0]
    edges = np.array([0.0, 900.0, 1800.0])
    den = step_bins(t, alloc.astype(float), edges)
    share = {a: 100 * step_bins(t, np.bincount(p, g, len(t)), edges) / den
             for a, (p, g) in series.items()}  # fmt: skip
    assert share["research"].tolist() == [100.0, 50.0]
    assert share["prod"].tolist() == [0.0, 50.0]


def _many_accounts(n: int, shift: float) -> RunData:
    """n accounts g1..gn, account gk running one k-GPU job (so g1 is the smallest)."""
    res = [
        JobResult(k, f"j{k}", "u", f"g{k}", gpus=k, nodes=1, submit=0, start=shift,
                  end=shift + 100 * k, state="COMPLETED")
        for k in range(1, n + 1)
    ]  # fmt: skip
    return RunData(res, capacity_gpus=sum(range(1, n + 1)))


def test_accounts_beyond_the_top_ten_fold_into_others() -> None:
    html = render_report({"a": _many_accounts(252, 0), "b": _many_accounts(252, 50)})
    labels = re.findall(r"<td>share (.+?) \(achieved / target\)", html)
    # the biggest 10, in natural order (g243 ... g252), then the 242 others in one row
    assert labels == [f"g{k}" for k in range(243, 253)] + ["others (242 accounts)"]
    assert html.count("account g") == 10 and ">others</text>" in html  # one chart for the rest


def test_one_unit_per_row_best_marked_and_a_scenario_header() -> None:
    fast, slow = _run(0), _run(7200)  # slow waits two hours longer
    html = render_report({"fast": fast, "slow": slow}, scenario={"scenario": "mini"},
                         price=2.0, mfu=0.5)  # fmt: skip
    row = re.search(r"<td>max wait</td>(.*?)</tr>", html).group(1)  # type: ignore[union-attr]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    assert cells == ["0.0 h ★", "2.0 h"]  # the same unit in every cell of the row
    util = re.search(r"<td>utilization</td>(.*?)</tr>", html).group(1)  # type: ignore[union-attr]
    assert util.count("★") == 1
    jobs = re.search(r"<td>jobs</td>(.*?)</tr>", html).group(1)  # type: ignore[union-attr]
    assert "★" not in jobs  # no better or worse
    assert '<table class="scenario"><tr><th>scenario</th><td>mini</td></tr>' in html
    assert "<th>cluster</th><td>t: 4 nodes, 32 GPUs" in html and "<th>jobs</th><td>3</td>" in html
    for section in ("Queue phases", "Utilization and fragmentation", "Share", "Recovery", "Cost",
                    "Efficiency"):  # fmt: skip
        assert f'<tr class="group"><th colspan="3">{section}</th></tr>' in html
    cost = re.search(r"<td>cost</td>(.*?)</tr>", html).group(1)  # type: ignore[union-attr]
    assert "GPU" not in cost and re.search(r"\d+\.\d\d", cost)
    assert "MFU incl. overheads" in html and "goodput" in html
    plain = render_report({"fast": fast, "slow": slow})
    assert "<td>cost</td>" not in plain  # no price, no cost rows (GPU-hours only)


def _heat_strip_rows_one_by_one(rows: list[str], matrix: list[list[float]]) -> list[str]:
    """The rects of heat_strip as it drew them before, a row at a time (reference)."""
    from tide.sim.svg import heat_codes

    left, top, cell_h = 70, 24, 12 if len(rows) <= 40 else max(3, 480 // max(1, len(rows)))
    cw = (1060 - left - 10) / len(matrix[0])
    out = []
    for r, row in enumerate(matrix):
        y = top + r * cell_h
        codes = heat_codes(row)
        starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))).tolist()
        for start, stop in zip(starts, [*starts[1:], len(codes)], strict=True):
            x, w = left + start * cw, (stop - start) * cw
            out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{cell_h}" '
                       f'fill="#{int(codes[start]):06x}"/>')  # fmt: skip
    return out


def test_heat_strip_rects_as_drawn_row_by_row() -> None:
    """heat_strip's colours and runs for the whole matrix at once: the same rects."""
    import random
    import re

    from tide.sim.svg import heat_strip

    rng = random.Random(6)
    for n_rows, bins in ((1, 1), (3, 7), (45, 120), (130, 240)):
        levels = [0.0, 0.5, 1.0, float("nan"), 1.7, -0.2]
        matrix = [[rng.choice(levels) if rng.random() < 0.6 else rng.random()
                   for _ in range(bins)] for _ in range(n_rows)]  # fmt: skip
        labels = [f"n{k}" for k in range(n_rows)]
        got = re.findall(r"<rect [^>]*/>", heat_strip("t", labels, matrix, 0.0, 10.0, "x"))
        assert got == _heat_strip_rows_one_by_one(labels, matrix)


def test_fold_others_sums_as_unique_and_bincount() -> None:
    """_fold_others: the accounts outside `keep` summed per sample index, as
    np.unique's sorted indices and a bincount over its inverse give them."""
    import random

    from tide.sim.report import OTHERS, _fold_others

    rng = random.Random(8)
    for _ in range(30):
        series = {}
        for a in range(rng.randint(0, 8)):
            pos = np.array(sorted(rng.sample(range(300), rng.randint(0, 40))), dtype=np.int64)
            series[f"a{a}"] = (pos, np.array([rng.randint(1, 64) for _ in pos], dtype=np.int64))
        keep = {a for a in series if rng.random() < 0.4}
        got = _fold_others(series, keep)
        rest = [v for a, v in series.items() if a not in keep]
        assert {a: v for a, v in got.items() if a != OTHERS} == {a: series[a] for a in keep}
        if not rest:
            assert OTHERS not in got
            continue
        pos = np.concatenate([p for p, _ in rest])
        uniq, inv = np.unique(pos, return_inverse=True)
        want = np.bincount(inv, weights=np.concatenate([g for _, g in rest])).astype(np.int64)
        assert got[OTHERS][0].tolist() == uniq.tolist()
        assert got[OTHERS][1].tolist() == want.tolist()
