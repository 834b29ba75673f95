"""One self-contained HTML page comparing twin runs (one per policy).

Sections: the metrics table; utilization and queue length over time; the
wait-time CDF per size class; each account's share of the allocated GPUs
against its target; node occupancy by leaf switch. Every policy is drawn on
the same axes. Charts are inline SVG made here (tide.sim.svg): no script,
no network, a few hundred KB even for 300,000 jobs (series are binned).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from tide.hostlist import HostlistError, expand, parse_index_ranges
from tide.model import Cluster
from tide.sim.metrics import SIZE_CLASSES, JobResult, Sample, compute_metrics, size_classes
from tide.sim.report_table import metrics_table, natural_key, report_figures, top_accounts
from tide.sim.svg import PALETTE, Chart, Series, heat_strip, legend
from tide.sim.table import Placement, ResultTable, Timeline

try:
    from tide.sim import _countsim
except ImportError:  # not built: numpy computes the occupancy
    _countsim = None  # type: ignore[assignment]

SECTIONS = (
    ("metrics", "Metrics: queue phases, fragmentation, share, recovery, cost, efficiency"),
    ("utilization", "Utilization and queue length"),
    ("wait-cdf", "Wait time by job size"),
    ("shares", "Account shares against targets"),
    ("occupancy", "Node occupancy by leaf switch"),
)


@dataclass
class RunData:
    """One policy's run: per-job results, the engine's timeline (optional:
    rebuilt from the results when empty), metrics (computed when None).
    Results and timeline may be objects or columns (tide.sim.table)."""

    results: list[JobResult] | ResultTable
    capacity_gpus: int
    timeline: list[Sample] | Timeline = field(default_factory=list)
    metrics: dict[str, Any] | None = None
    target_shares: Mapping[str, float] | None = None
    cluster: Cluster | None = None


# ---------------------------------------------------------------- series


class StepGrid:
    """step_bins over one sample grid ts and bin edges, for many value series:
    `bins(pos, vals)` is step_bins(ts, v, edges) for v zero but at the rising
    indices pos, where v[pos] = vals. The same numbers (the zeros add nothing to
    the running sums) without building v."""

    def __init__(self, ts: np.ndarray, edges: np.ndarray) -> None:
        self.ts, self.edges = ts, edges
        self.d = np.diff(ts)
        self.k = np.searchsorted(ts, edges, side="right") - 1
        self.kk = np.clip(self.k, 0, None)
        self.span = edges - ts[self.kk] if len(ts) else edges
        self.width = np.diff(edges)

    def bins(self, pos: np.ndarray, vals: np.ndarray) -> np.ndarray:
        if len(self.ts) == 0:
            return np.zeros(len(self.edges) - 1)
        kk = self.kk
        inner = pos < len(self.ts) - 1  # step_bins weighs v[:-1]
        cum = np.concatenate([[0.0], np.cumsum(vals[inner] * self.d[pos[inner]])])
        before = cum[np.searchsorted(pos[inner], kk, side="left")]  # the dense cum at kk
        here = np.zeros(len(kk))  # the dense v at kk
        if len(pos):
            j = np.minimum(np.searchsorted(pos, kk, side="left"), len(pos) - 1)
            hit = pos[j] == kk
            here[hit] = vals[j[hit]]
        at = np.where(self.k < 0, 0.0, before + here * self.span)
        return np.diff(at) / self.width


def step_bins(ts: np.ndarray, vals: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin averages of the step function that is vals[i] from ts[i] to ts[i+1]
    (the last value holds on; 0 before the first time)."""
    if len(ts) == 0:
        return np.zeros(len(edges) - 1)
    cum = np.concatenate([[0.0], np.cumsum(vals[:-1] * np.diff(ts))])
    k = np.searchsorted(ts, edges, side="right") - 1
    kk = np.clip(k, 0, None)
    at = np.where(k < 0, 0.0, cum[kk] + vals[kk] * (edges - ts[kk]))
    return np.diff(at) / np.diff(edges)


def timeline_from_results(results: Sequence[JobResult]) -> list[Sample]:
    """Allocated GPUs, queue length and per-account GPUs from start/end times
    alone (no partial gangs, no restarts): for runs saved without a timeline."""
    ev: list[tuple[float, int, int, str]] = []  # (t, d_alloc, d_queue, account)
    for r in results:
        ev.append((r.submit, 0, 1, r.account))
        if r.start is not None:
            ev.append((r.start, r.gpus, -1, r.account))
            if r.end is not None:
                ev.append((r.end, -r.gpus, 0, r.account))
    ev.sort(key=lambda e: e[0])
    out: list[Sample] = []
    alloc = queue = 0
    acct: dict[str, int] = {}
    for i, (t, da, dq, a) in enumerate(ev):
        alloc, queue = alloc + da, queue + dq
        if da:
            acct[a] = acct.get(a, 0) + da
        if i + 1 == len(ev) or ev[i + 1][0] != t:
            out.append(Sample(t, alloc, 0, queue, {k: v for k, v in acct.items() if v}))
    return out


@dataclass
class _Run:
    name: str
    color: str
    data: RunData
    table: ResultTable
    timeline: Timeline
    metrics: dict[str, Any]


def _prepare(runs: Mapping[str, RunData]) -> list[_Run]:
    out = []
    for i, (name, d) in enumerate(runs.items()):
        table = d.results if isinstance(d.results, ResultTable) else ResultTable.from_results(
            d.results)  # fmt: skip
        if len(d.timeline):
            tl = d.timeline if isinstance(d.timeline, Timeline) else Timeline.from_samples(
                d.timeline)  # fmt: skip
        else:
            rs = d.results if isinstance(d.results, list) else table.to_results()
            tl = Timeline.from_samples(timeline_from_results(rs))
        m = d.metrics or compute_metrics(table, d.capacity_gpus, d.timeline, d.target_shares)
        out.append(_Run(name, PALETTE[i % len(PALETTE)], d, table, tl.in_time_order(), m))
    return out


def _time_unit(span: float) -> tuple[float, str]:
    if span <= 3 * 3600:
        return 60.0, "minutes"
    if span <= 4 * 86400:
        return 3600.0, "hours"
    return 86400.0, "days"


# ---------------------------------------------------------------- sections


def _metrics_table(runs: list[_Run], price: float | None, currency: str,
                   mfu: float | None) -> str:  # fmt: skip
    figures = [{**r.metrics, "report": report_figures(r.metrics, r.table, price, mfu)}
               for r in runs]  # fmt: skip
    return metrics_table([r.name for r in runs], [r.color for r in runs], figures, currency)


def _scenario(runs: list[_Run], scenario: Mapping[str, str] | None, t0: float, t1: float) -> str:
    """What was replayed: the caller's facts (scenario, workload, notes), then the
    cluster, the jobs, the window and the policies compared."""
    facts = dict(scenario or {})
    c = runs[0].data.cluster
    if c is not None:
        leaves = sum(1 for s in c.topology.switches if s.is_leaf)
        types = sorted({n.gpu_type() for n in c.nodes if n.gpu_count and n.gpu_type()})
        facts.setdefault("cluster", f"{c.name}: {len(c.nodes):,} nodes, {c.total_gpus:,} GPUs"
                         + (f" ({', '.join(types)})" if types else "")
                         + (f", {leaves} leaf switches" if leaves else ""))  # fmt: skip
    else:
        facts.setdefault("cluster", f"{runs[0].data.capacity_gpus:,} GPUs")
    facts.setdefault("jobs", f"{len(runs[0].table):,}")
    hours = (t1 - t0) / 3600
    facts.setdefault("window", f"{hours / 24:,.1f} days" if hours >= 48 else f"{hours:,.1f} hours")
    facts.setdefault("policies", ", ".join(r.name for r in runs))
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts.items())
    return f'<table class="scenario">{rows}</table>'


def _util_queue(runs: list[_Run], edges: np.ndarray, unit: float, uname: str) -> str:
    mids = ((edges[:-1] + edges[1:]) / 2 / unit).tolist()
    x0, x1 = edges[0] / unit, edges[-1] / unit
    util, queue = [], []
    for r in runs:
        ts, alloc = r.timeline.t, r.timeline.allocated.astype(float)
        q = r.timeline.queue.astype(float)
        cap = max(1, r.data.capacity_gpus)
        util.append(
            Series(r.name, r.color, mids, (100 * step_bins(ts, alloc, edges) / cap).tolist())
        )
        queue.append(Series(r.name, r.color, mids, step_bins(ts, q, edges).tolist()))
    qmax = max([y for s in queue for y in s.ys if y is not None] + [1.0]) * 1.05
    a = Chart("Allocated GPUs", f"time ({uname})", "% of GPUs", x0, x1, 0, 100, width=540,
              series=util)  # fmt: skip
    b = Chart("Queue length (bin average)", f"time ({uname})", "pending jobs", x0, x1, 0, qmax,
              width=540, series=queue)  # fmt: skip
    return f'<div class="row">{a.svg()}{b.svg()}</div>'


def _cdf_points(
    waits: Sequence[float] | np.ndarray, total: int, limit: int = 400
) -> tuple[list[float], list[float]]:
    """Step CDF of the waits over `total` jobs (never-started jobs keep it below 1)."""
    if len(waits) == 0:
        return [], []
    w = np.sort(np.maximum(np.asarray(waits, dtype=float), 1.0))
    rising = np.linspace(0, len(w) - 1, min(limit, len(w))).astype(int)
    idx = rising[np.concatenate(([True], rising[1:] != rising[:-1]))]  # np.unique, no numpy.ma
    xs, ys = [float(w[0])], [0.0]
    for i in idx.tolist():
        xs += [float(w[i]), float(w[i])]
        ys += [ys[-1], (i + 1) / total]
    return xs[1:], ys[1:]


def _wait_cdf(runs: list[_Run]) -> str:
    waits: dict[str, dict[str, np.ndarray]] = {}
    totals: dict[str, dict[str, int]] = {}
    for r in runs:
        cls = size_classes(r.table.gpus)
        started = r.table.started
        wait = r.table.wait
        waits[r.name], totals[r.name] = {}, {}
        for k, (c, _, _) in enumerate(SIZE_CLASSES):
            mine = cls == k
            totals[r.name][c] = int(mine.sum())
            waits[r.name][c] = wait[mine & started]
    top = max([float(v.max()) if len(v) else 1.0 for d in waits.values() for v in d.values()]
              + [10.0])  # fmt: skip
    x1 = 10 ** math.ceil(math.log10(top * 1.01))
    charts = []
    for c, _, _ in SIZE_CLASSES:
        series = []
        for r in runs:
            xs, ys = _cdf_points(waits[r.name][c], totals[r.name][c])
            series.append(Series(r.name, r.color, xs, ys))
        n = max(totals[r.name][c] for r in runs)
        charts.append(Chart(f"{c} GPUs ({n} jobs)", "wait (s, log; < 1 s drawn at 1 s)",
                            "fraction of jobs", 1.0, x1, 0, 1, xlog=True, width=360,
                            series=series).svg())  # fmt: skip
    return f'<div class="row">{"".join(charts)}</div>'


def _shares(runs: list[_Run], edges: np.ndarray, unit: float, uname: str) -> str:
    mids = ((edges[:-1] + edges[1:]) / 2 / unit).tolist()
    views = [_with_accounts(r.timeline) for r in runs]
    series_of = [_fold_others(series, set(top_accounts([r.metrics for r in runs])))
                 for _, _, series in views]  # fmt: skip
    accounts = sorted({a for s in series_of for a in s}, key=lambda a: (a == OTHERS,
                      natural_key(a)))  # fmt: skip
    targets = (runs[0].metrics.get("fairness") or {}).get("accounts") or {}
    den = [step_bins(t, alloc.astype(float), edges) for t, alloc, _ in views]
    grids = [StepGrid(t, edges) for t, _, _ in views]
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    charts = []
    for a in accounts:
        series = []
        for r, by_acct, d_all, grid in zip(runs, series_of, den, grids, strict=True):
            pos, gpus = by_acct.get(a, empty)
            num = grid.bins(pos, gpus.astype(float))
            share = np.divide(100 * num, d_all, out=np.zeros_like(num), where=d_all > 0)
            ys = [v if d > 0 else None for v, d in zip(share.tolist(), (d_all > 0).tolist(),
                                                       strict=True)]  # fmt: skip
            series.append(Series(r.name, r.color, mids, ys))
        tgt = (targets.get(a) or {}).get("target") if a != OTHERS else None
        lines = [(100 * tgt, "#333", f"target {100 * tgt:.0f} %")] if tgt else []
        name = a if a == OTHERS else f"account {a}"
        charts.append(Chart(name, f"time ({uname})", "% of allocated GPUs",
                            edges[0] / unit, edges[-1] / unit, 0, 100, width=360,
                            series=series, hlines=lines).svg())  # fmt: skip
    if not charts:
        return "<p>No per-account data.</p>"
    return f'<div class="row">{"".join(charts)}</div>'


_Series = dict[str, tuple[np.ndarray, np.ndarray]]
OTHERS = "others"


def _fold_others(series: _Series, keep: set[str]) -> _Series:
    """Accounts outside `keep` summed into one "others" series (same sample
    positions: rising indices and GPUs, added where they coincide)."""
    rest = [v for a, v in series.items() if a not in keep]
    out = {a: v for a, v in series.items() if a in keep}
    if rest:
        pos = np.concatenate([p for p, _ in rest])
        gpus = np.concatenate([g for _, g in rest])
        # sums per sample index, counted straight into a column of all indices (what
        # np.unique's sort and inverse gave, without the sort)
        listed = np.flatnonzero(np.bincount(pos)) if len(pos) else pos
        total = np.bincount(pos, weights=gpus)[listed] if len(pos) else gpus
        out[OTHERS] = (listed.astype(np.int64), total.astype(np.int64))
    return out


def _with_accounts(tl: Any) -> tuple[np.ndarray, np.ndarray, _Series]:
    """The samples that carry per-account figures (times, allocated GPUs, each
    account's series re-indexed onto them). The count driver records accounts
    only every PLOT_PERIOD; its other samples would count every account as 0
    (shares summing to well under 100 %), so they are left out, and each kept
    sample holds until the next kept one. The general engine keeps them all."""
    series = tl.account_series()
    keep = (np.diff(tl.first) > 0) | (tl.allocated == 0)
    if keep.all():
        return tl.t, tl.allocated, series
    new_pos = np.cumsum(keep) - 1
    moved = {a: (new_pos[pos], gpus) for a, (pos, gpus) in series.items()}
    return tl.t[keep], tl.allocated[keep], moved


def _gpus_by_node(r: JobResult) -> list[tuple[str, int]]:
    return _node_gpus(r.gpu_index, r.nodelist, r.gpus)


def _node_gpus(gpu_index: str, nodelist: str, gpus: int) -> list[tuple[str, int]]:
    """(node, GPUs held there) from a job's gpu_index, else its nodelist."""
    if gpu_index:
        out: list[tuple[str, int]] = []
        for part in gpu_index.split(";"):  # HOSTLIST:IDX groups (outputs.node_indices)
            hosts, _, idx = part.rpartition(":")
            count = len(parse_index_ranges(idx)) if idx else 0
            out.extend((node, count) for node in expand(hosts))
        return out
    try:
        nodes = expand(nodelist) if nodelist else []
    except HostlistError:
        return []
    return [(n, gpus // len(nodes)) for n in nodes] if nodes else []


def placements(table: ResultTable) -> Placement:
    """Where each job's GPUs were: the driver's own record, else parsed from
    gpu_index / nodelist (jobs that never started included, as written)."""
    if table.placement is not None:
        return table.placement
    index: dict[str, int] = {}
    node: list[int] = []
    gpus: list[int] = []
    bounds = [0]
    cache: dict[tuple[str, str, int], list[tuple[str, int]]] = {}
    for key in zip(table.gpu_index, table.nodelist, table.gpus.tolist(), strict=True):
        pairs = cache.get(key)
        if pairs is None:
            pairs = cache[key] = _node_gpus(*key)
        for name, g in pairs:
            node.append(index.setdefault(name, len(index)))
            gpus.append(g)
        bounds.append(len(node))
    return Placement(list(index), np.array(node, dtype=np.int64),
                     np.array(bounds, dtype=np.int64), np.array(gpus, dtype=np.int64))  # fmt: skip


def _groups(run: _Run) -> tuple[list[str], dict[str, int], list[int]]:
    """Row labels, node -> row, GPU capacity per row: leaf switches when the
    cluster has a tree, else blocks of consecutive nodes."""
    c = run.data.cluster
    if c is not None and c.topology.switches:
        leaves = [s for s in c.topology.switches if s.is_leaf]
        gpus = {n.name: n.gpu_count for n in c.nodes}
        row = {n: i for i, s in enumerate(leaves) for n in s.nodes}
        return [s.name for s in leaves], row, [sum(gpus.get(n, 0) for n in s.nodes) for s in leaves]
    if c is not None:
        names = [n.name for n in c.nodes]
        per = {n.name: n.gpu_count for n in c.nodes}
    else:
        p = placements(run.table)
        most = np.zeros(len(p.names), dtype=np.int64)
        np.maximum.at(most, p.node, p.gpus)
        seen = np.zeros(len(p.names), dtype=bool)
        seen[p.node] = True
        per = {p.names[k]: int(most[k]) for k in np.flatnonzero(seen).tolist()}
        names = sorted(per)
    size = max(1, math.ceil(len(names) / 32))
    blocks = [names[i : i + size] for i in range(0, len(names), size)]
    row = {n: i for i, b in enumerate(blocks) for n in b}
    labels = [b[0] if len(b) == 1 else f"{b[0]}…" for b in blocks]
    return labels, row, [max(1, sum(per.get(n, 0) for n in b)) for b in blocks]


def _job_rows(
    p: Placement, tab: ResultTable, row: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job, row, GPUs) for each row each started job holds GPUs in: its nodes'
    GPUs summed per row (the occupancy only sums them), nodes outside every row
    and entries without GPUs left out."""
    job = np.repeat(np.arange(len(tab)), np.diff(p.bounds))  # each entry's job
    row_of = np.array([row.get(n, -1) for n in p.names], dtype=np.int64)
    rows = row_of[p.node] if len(p.node) else np.zeros(0, dtype=np.int64)
    keep = (rows >= 0) & (p.gpus != 0) & tab.started[job]
    job, rows, g = job[keep], rows[keep], p.gpus[keep]
    if len(job) > 1:
        same = job[1:] == job[:-1]
        if (rows[1:][same] < rows[:-1][same]).any():  # rows not rising within each job
            order = np.lexsort((rows, job))
            job, rows, g = job[order], rows[order], g[order]
            same = job[1:] == job[:-1]
        first = np.flatnonzero(np.concatenate(([True], ~same | (rows[1:] != rows[:-1]))))
        job, rows, g = job[first], rows[first], np.add.reduceat(g, first)
    return job, rows, g


def _gpus_column(gpus: np.ndarray) -> np.ndarray:
    """Placement.gpus for the C occupancy: the count path's one value broadcast to
    every entry goes as that one value (30 million entries on an 80,000-node log
    would be 240 MB), where the kernel takes it (OCCUPANCY_ONE_GPUS)."""
    takes_one = bool(getattr(_countsim, "OCCUPANCY_ONE_GPUS", False))  # older builds: no
    if takes_one and len(gpus) > 1 and gpus.strides == (0,):
        return np.ascontiguousarray(gpus[:1], dtype=np.int64)
    return np.ascontiguousarray(gpus, dtype=np.int64)


def _occupancy_matrix(
    tab: ResultTable, row: dict[str, int], n_rows: int, cap: list[int], edges: np.ndarray,
    t1: float,
) -> list[list[float]]:
    """Per row, the bin averages of its allocated GPUs over its capacity (a job
    that never ended holds its GPUs until t1)."""
    p = placements(tab)
    end = np.where(np.isnan(tab.end), t1, tab.end)
    if _countsim is not None and not os.environ.get("TIDE_NO_C"):
        started = np.flatnonzero(tab.started)
        by_start = started[np.argsort(tab.start[started], kind="stable")]
        by_end = started[np.argsort(end[started], kind="stable")]
        row_of = np.array([row.get(n, -1) for n in p.names], dtype=np.int64)
        gpus = _gpus_column(p.gpus)
        cells = _countsim.occupancy(
            p.bounds, p.node, gpus, row_of, tab.start, end, by_start, by_end, n_rows,
            edges, np.asarray(cap, dtype=np.int64),
        )  # fmt: skip
        return np.frombuffer(cells, dtype=np.float64).reshape(n_rows, -1).tolist()
    job, rows, g = _job_rows(p, tab, row)
    # each (job, row) holds g GPUs of the row from the job's start to its end; events
    # at one time may come in any order (step_bins reads the level after the last)
    ev_t = np.concatenate([tab.start[job], end[job]])
    by_t = np.argsort(ev_t, kind="stable")
    small = np.int16 if n_rows < 2**15 else np.int64  # a radix sort for small ints
    ev_row = np.concatenate([rows, rows]).astype(small)[by_t]
    by_row = np.argsort(ev_row, kind="stable")
    ev_row, ev_t = ev_row[by_row], ev_t[by_t][by_row]
    ev_d = np.concatenate([g, -g])[by_t][by_row]
    cut = np.searchsorted(ev_row, np.arange(n_rows + 1))
    matrix = []
    for k in range(n_rows):
        ts = ev_t[cut[k] : cut[k + 1]]
        level = np.cumsum(ev_d[cut[k] : cut[k + 1]]).astype(float)
        matrix.append((step_bins(ts, level, edges) / max(1, cap[k])).tolist())
    return matrix


def _occupancy(runs: list[_Run], t0: float, t1: float, unit: float, uname: str) -> str:
    edges = np.linspace(t0, t1, 121)
    out = []
    for r in runs:
        labels, row, cap = _groups(r)
        if not labels:
            out.append(f"<p>{escape(r.name)}: no placement data.</p>")
            continue
        matrix = _occupancy_matrix(r.table, row, len(labels), cap, edges, t1)
        out.append(heat_strip(f"{r.name}: share of GPUs allocated", labels, matrix,
                              t0 / unit, t1 / unit, f"time ({uname})"))  # fmt: skip
    scale = ('<div class="legend">0 % <span class="ramp"></span> 100 % of the row\'s GPUs'
             "</div>")  # fmt: skip
    return scale + "".join(f'<div class="row">{s}</div>' for s in out)


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1120px;margin:24px auto;padding:0 16px;color:#222}
h1{font-size:22px}
h2{font-size:17px;margin-top:30px;border-bottom:1px solid #ddd;padding-bottom:4px}
.row{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}
.legend{margin:6px 0;font-size:13px} .key{margin-right:16px;white-space:nowrap}
.key i{display:inline-block;width:18px;height:3px;margin-right:5px;vertical-align:middle}
.key i.dash{height:0;border-top:2px dashed}
.ramp{display:inline-block;width:120px;height:10px;vertical-align:middle;
 background:linear-gradient(90deg,#f7fbff,#08306b)}
table.metrics{border-collapse:collapse;font-size:13px}
table.metrics td,table.metrics th{border:1px solid #ddd;padding:3px 10px;text-align:right}
table.metrics td:first-child,table.metrics th:first-child{text-align:left}
table.metrics tr.group th{text-align:left;background:#f0f3f8}
table.metrics td.best{font-weight:700;background:#eaf6ea}
table.scenario{border-collapse:collapse;font-size:13px;margin-bottom:8px}
table.scenario th{text-align:left;padding:2px 12px 2px 0;color:#555;font-weight:600}
p.note{font-size:13px;color:#555}
"""


def render_report(
    runs: Mapping[str, RunData],
    title: str = "tide twin report",
    scenario: Mapping[str, str] | None = None,
    price: float | None = None,
    currency: str = "",
    mfu: float | None = None,
) -> str:
    """The page. `scenario`: facts for the header (name, workload, notes...);
    `price` per GPU-hour (in `currency`) adds the cost rows; `mfu`, a steady
    MFU the workload's jobs reach, adds MFU including overheads."""
    if not runs:
        raise ValueError("write_report needs at least one run")
    rs = _prepare(runs)
    submits = [float(r.table.submit.min()) for r in rs if len(r.table)]
    t0 = min(submits, default=0.0)
    ends = [float(r.timeline.t.max()) for r in rs if len(r.timeline)]
    ends += [float(np.nanmax(r.table.end)) for r in rs if (~np.isnan(r.table.end)).any()]
    t1 = max([*ends, t0 + 1.0])
    if 0 <= t0 < 0.05 * (t1 - t0):
        t0 = 0.0  # start the time axis at the trace start when the first job is close to it
    unit, uname = _time_unit(t1 - t0)
    edges = np.linspace(t0, t1, 241)
    keys = legend([(r.name, r.color) for r in rs])
    body = {
        "metrics": _metrics_table(rs, price, currency, mfu)
        + '<p class="note">★ marks the best value of a row; every figure is defined in '
        "docs/twin-metrics.md.</p>",
        "utilization": keys + _util_queue(rs, edges, unit, uname),
        "wait-cdf": keys + _wait_cdf(rs) + '<p class="note">Share of all jobs of the class '
        "that started within the wait; a curve that ends below 1 means jobs never started.</p>",
        "shares": legend([(r.name, r.color) for r in rs], [("target", "#333")])
        + _shares(rs, edges, unit, uname),
        "occupancy": _occupancy(rs, t0, t1, unit, uname),
    }
    toc = " · ".join(f'<a href="#{k}">{escape(v)}</a>' for k, v in SECTIONS)
    parts = [f'<section id="{k}"><h2>{escape(v)}</h2>{body[k]}</section>' for k, v in SECTIONS]
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{_CSS}</style></head><body><h1>{escape(title)}</h1>"
        f"{_scenario(rs, scenario, t0, t1)}<p>{toc}</p>{''.join(parts)}</body></html>\n"
    )


def write_report(path: str | Path, runs: Mapping[str, RunData], title: str = "tide twin report",
                 **kw: Any) -> None:  # fmt: skip
    Path(path).write_text(render_report(runs, title, **kw), encoding="utf-8")
