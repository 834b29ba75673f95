"""The report's metrics table: every policy side by side, grouped by what a
platform evaluation asks (seed 000: queue phases, fragmentation, share,
recovery, cost, efficiency), one unit per row, the best value of each row
marked, and accounts beyond the top ten folded into "others".

Figures are defined in docs/twin-metrics.md (the report-only ones in its
"Report" section).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np

from tide.display import seconds_short, si
from tide.sim.metrics import SIZE_CLASSES, percentiles

TOP_ACCOUNTS = 10
LOW, HIGH = "low", "high"  # which way a row is better


@dataclass(frozen=True)
class Row:
    label: str
    value: Callable[[Mapping[str, Any]], float | None]  # from a run's figures
    kind: str  # count, pct, time, num, gpuh, money, si, rate, step
    better: str | None = None
    optional: bool = False  # left out when no run has a value (cost, training)


def _get(path: str) -> Callable[[Mapping[str, Any]], float | None]:
    def read(m: Mapping[str, Any]) -> float | None:
        cur: Any = m
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, Mapping) else None
        return cur if isinstance(cur, int | float) and not isinstance(cur, bool) else None

    return read


SECTIONS: list[tuple[str, list[Row]]] = [
    ("Jobs", [
        Row("jobs", _get("jobs"), "count"),
        Row("jobs completed", _get("jobs_completed"), "count", HIGH),
        Row("jobs never started", _get("jobs_never_started"), "count", LOW),
        Row("jobs deadlocked", _get("jobs_deadlocked"), "count", LOW),
    ]),
    ("Queue phases", [
        Row("mean wait for eligibility (submit → eligible)", _get("report.mean_eligible_wait"),
            "time", LOW),
        Row("p95 wait for eligibility", _get("report.p95_eligible_wait"), "time", LOW),
        Row("mean wait for resources (eligible → start)", _get("mean_wait"), "time", LOW),
        Row("p50 wait", _get("p50_wait"), "time", LOW),
        Row("p95 wait", _get("p95_wait"), "time", LOW),
        Row("p99 wait", _get("p99_wait"), "time", LOW),
        Row("max wait", _get("max_wait"), "time", LOW),
        *[Row(f"mean wait, {c} GPUs", _get(f"wait_by_size.{c}.mean"), "time", LOW)
          for c, _, _ in SIZE_CLASSES],
        Row("mean bounded slowdown", _get("mean_bsld"), "num", LOW),
        Row("mean flow time", _get("mean_flow"), "time", LOW),
        Row("makespan", _get("makespan"), "time", LOW),
    ]),
    ("Utilization and fragmentation", [
        Row("utilization", _get("utilization"), "pct", HIGH),
        Row("effective utilization", _get("effective_utilization"), "pct", HIGH),
        Row("fragmentation (free GPUs while the head job waits)", _get("fragmentation"), "pct",
            LOW),
        Row("leaf switches per multi-node job", _get("topology.mean_leaf_switches"), "num", LOW),
        Row("multi-node jobs on fewest leaves", _get("topology.on_fewest_leaves"), "pct", HIGH),
    ]),
    ("Share", [Row("fairness (Jain)", _get("fairness.jain"), "num", HIGH)]),
    ("Recovery", [
        Row("restarts", _get("report.restarts"), "count", LOW),
        Row("preemptions", _get("preemptions"), "count", LOW),
        Row("GPU-hours lost (work since the last checkpoint)", _get("lost_gpu_hours"), "gpuh",
            LOW),
        Row("GPU-hours held idle (partial gangs)", _get("held_idle_gpu_hours"), "gpuh", LOW),
        Row("p95 reclaim latency", _get("reclaim_latency.p95"), "time", LOW),
    ]),
    ("Cost", [
        Row("GPU-hours allocated", _get("report.allocated_gpu_hours"), "gpuh"),
        Row("cost", _get("report.cost"), "money", LOW, True),
        Row("cost per completed job", _get("report.cost_per_job"), "money", LOW, True),
    ]),
    ("Efficiency", [
        Row("goodput (useful / allocated GPU-time)", _get("report.goodput"), "pct", HIGH),
        Row("training jobs (declaring a model)", _get("training.all.jobs"), "count", None, True),
        Row("useful tokens", _get("training.all.tokens"), "si", HIGH, True),
        Row("tokens/s per job, steady", _get("training.all.tokens_per_s"), "rate", HIGH, True),
        Row("tokens/s per job incl. recovery", _get("training.all.tokens_per_s_with_recovery"),
            "rate", HIGH, True),
        Row("step time p50", _get("training.all.step_p50"), "step", LOW, True),
        Row("step time p95", _get("training.all.step_p95"), "step", LOW, True),
        Row("MFU, steady", _get("training.all.mfu"), "pct", HIGH, True),
        Row("MFU incl. overheads (checkpoints, recompute, suspension)",
            _get("report.mfu_effective"), "pct", HIGH, True),
        Row("paid GPU-time recomputed after failures", _get("training.all.recompute_share"),
            "pct", LOW, True),
    ]),
]  # fmt: skip


def _p95(x: np.ndarray) -> float:
    """np.percentile(x, 95), without the numpy.ma import its own path costs
    (tide.sim.metrics.percentiles, bit for bit) unless x holds a NaN."""
    return percentiles(x, (95,))[0] if not np.isnan(x).any() else float(np.percentile(x, 95))


def report_figures(
    metrics: Mapping[str, Any], table: Any, price: float | None, mfu: float | None
) -> dict[str, float | None]:
    """The report-only figures of one run (docs/twin-metrics.md, "Report")."""
    started = np.asarray(table.started, dtype=bool)
    ready = table.ready[started] - table.submit[started]
    util, eff = metrics.get("utilization"), metrics.get("effective_utilization")
    span, cap = metrics.get("makespan") or 0.0, metrics.get("capacity_gpus") or 0
    alloc_h = util * cap * span / 3600 if util is not None else None
    goodput = eff / util if util and eff is not None else None
    cost = alloc_h * price if alloc_h is not None and price is not None else None
    done = metrics.get("jobs_completed") or 0
    trained = ((metrics.get("training") or {}).get("all") or {}).get("mfu_effective")
    return {
        "mean_eligible_wait": float(ready.mean()) if len(ready) else None,
        "p95_eligible_wait": _p95(ready) if len(ready) else None,
        "restarts": int(np.asarray(table.restarts).sum()),
        "allocated_gpu_hours": alloc_h,
        "cost": cost,
        "cost_per_job": cost / done if cost is not None and done else None,
        "goodput": goodput,
        # the training jobs' own figure when the workload declares models, else
        # the declared steady MFU scaled by the GPU-time that counted
        "mfu_effective": trained if trained is not None
        else mfu * goodput if mfu is not None and goodput is not None else None,
    }


# ---------------------------------------------------------------- formatting


def _time_unit(values: Sequence[float]) -> tuple[float, str]:
    """One unit for a row: the one that suits its largest value."""
    top = max((abs(v) for v in values), default=0.0)
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if top >= 2 * size:
            return size, unit
    return 1.0, "s"


def _cells(kind: str, values: list[float | None], currency: str) -> list[str]:
    known = [v for v in values if v is not None]
    if kind == "time":
        size, unit = _time_unit(known)
        return ["–" if v is None else f"{v / size:,.1f} {unit}" for v in values]
    if kind == "pct":
        return ["–" if v is None else f"{100 * v:.1f} %" for v in values]
    if kind == "count":
        return ["–" if v is None else f"{int(v):,}" for v in values]
    if kind == "gpuh":
        return ["–" if v is None else f"{v:,.1f} GPU-h" for v in values]
    if kind == "money":
        return ["–" if v is None else f"{v:,.2f} {currency}".rstrip() for v in values]
    if kind in ("si", "rate", "step"):
        show = {"si": si, "rate": lambda v: f"{si(v)}/s", "step": seconds_short}[kind]
        return ["–" if v is None else show(v) for v in values]
    return ["–" if v is None else f"{v:,.3f}" for v in values]


def _best(values: list[float | None], cells: list[str], better: str | None) -> set[int]:
    """Cells showing the row's best value, as printed (0.976 and 0.9761 tie);
    none when every cell shows the same or there is one run."""
    known = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if better is None or len(known) < 2 or len({cells[i] for i, _ in known}) < 2:
        return set()
    pick = min if better == LOW else max
    shown = cells[pick(known, key=lambda iv: iv[1])[0]]
    return {i for i, _ in known if cells[i] == shown}


def _tr(label: str, cells: list[str], best: set[int], section: str = "") -> str:
    tds = "".join(
        f'<td class="best">{escape(c)} ★</td>' if i in best else f"<td>{escape(c)}</td>"
        for i, c in enumerate(cells)
    )
    return f'<tr data-section="{escape(section)}"><td>{escape(label)}</td>{tds}</tr>'


def metrics_table(
    names: list[str], colors: list[str], figures: Sequence[Mapping[str, Any]], currency: str = ""
) -> str:
    head = "".join(f'<th style="color:{c}">{escape(n)}</th>' for n, c in zip(names, colors,
                   strict=True))  # fmt: skip
    rows = [f"<tr><th>metric</th>{head}</tr>"]
    span = len(names) + 1
    for section, section_rows in SECTIONS:
        rows.append(f'<tr class="group"><th colspan="{span}">{escape(section)}</th></tr>')
        for row in section_rows:
            values = [row.value(f) for f in figures]
            if row.optional and all(v is None for v in values):
                continue  # no price given, no training jobs: nothing to show
            cells = _cells(row.kind, values, currency)
            rows.append(_tr(row.label, cells, _best(values, cells, row.better), section))
        if section == "Share":
            rows += _share_rows(figures)
        if section == "Efficiency":
            rows += _training_rows(figures)
    return '<table class="metrics">' + "".join(rows) + "</table>"


def natural_key(name: str) -> list[Any]:
    """'g10' after 'g9': digits compare as numbers."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def top_accounts(figures: Sequence[Mapping[str, Any]], k: int = TOP_ACCOUNTS) -> list[str]:
    """The k accounts with the most GPU-time in any run (ties by name, naturally)."""
    best: dict[str, float] = {}
    for f in figures:
        for a, s in ((f.get("fairness") or {}).get("accounts") or {}).items():
            best[a] = max(best.get(a, 0.0), s.get("achieved") or 0.0)
    ranked = sorted(best, key=lambda a: (-best[a], natural_key(a)))
    return ranked[:k]


def _share_rows(figures: Sequence[Mapping[str, Any]]) -> list[str]:
    every = sorted({a for f in figures for a in ((f.get("fairness") or {}).get("accounts") or {})},
                   key=natural_key)  # fmt: skip
    top = set(top_accounts(figures))
    shown = [a for a in every if a in top]
    rest = [a for a in every if a not in top]
    out = []
    for a in sorted(shown, key=natural_key):
        cells = []
        for f in figures:
            s = ((f.get("fairness") or {}).get("accounts") or {}).get(a) or {}
            cells.append(f"{_pct(s.get('achieved'))} / {_pct(s.get('target'))}")
        out.append(_tr(f"share {a} (achieved / target)", cells, set(), "Share"))
    if rest:
        cells = []
        for f in figures:
            accts = (f.get("fairness") or {}).get("accounts") or {}
            got = sum((accts.get(a) or {}).get("achieved") or 0.0 for a in rest)
            tgt = [(accts.get(a) or {}).get("target") for a in rest]
            tsum = sum(t for t in tgt if t is not None) if any(t is not None for t in tgt) else None
            cells.append(f"{_pct(got)} / {_pct(tsum)}")
        out.append(_tr(f"share others ({len(rest)} accounts) (achieved / target)", cells, set(),
                       "Share"))  # fmt: skip
    return out


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f} %"


def _training_rows(figures: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per account with training jobs: steady tokens/s, step time p50 and MFU
    incl. overheads (recompute counted as paid), and the share of its paid
    GPU-time recomputed; the TOP_ACCOUNTS with the most useful tokens, the rest
    as one row of their tokens and recompute share."""
    per = [((f.get("training") or {}).get("accounts") or {}) for f in figures]
    tokens: dict[str, float] = {}
    for accts in per:
        for a, x in accts.items():
            tokens[a] = max(tokens.get(a, 0.0), x.get("tokens") or 0.0)
    top = sorted(sorted(tokens, key=lambda a: (-tokens[a], natural_key(a)))[:TOP_ACCOUNTS],
                 key=natural_key)  # fmt: skip
    rest = [a for a in tokens if a not in top]
    out = []
    for a in top:
        cells = [_training_cell(accts.get(a)) for accts in per]
        out.append(_tr(f"training {a} (tokens/s · step p50 · MFU incl. overheads · "
                       "recomputed)", cells, set(), "Efficiency"))  # fmt: skip
    if rest:
        cells = []
        for accts in per:
            group = [accts[a] for a in rest if a in accts]
            paid = sum(x["paid_gpu_hours"] for x in group)
            lost = sum(x["recompute_gpu_hours"] for x in group)
            cells.append(f"{si(sum(x['tokens'] for x in group))} tokens · "
                         f"{_pct(lost / paid if paid else None)} recomputed")  # fmt: skip
        out.append(_tr(f"training others ({len(rest)} accounts) (tokens · recomputed)", cells,
                       set(), "Efficiency"))  # fmt: skip
    return out


def _training_cell(x: Mapping[str, Any] | None) -> str:
    if not x:
        return "–"
    rate = "–" if x.get("tokens_per_s") is None else f"{si(x['tokens_per_s'])}/s"
    step = "–" if x.get("step_p50") is None else seconds_short(x["step_p50"])
    return (f"{rate} · {step} · {_pct(x.get('mfu_effective'))} · "
            f"{_pct(x.get('recompute_share'))}")  # fmt: skip
