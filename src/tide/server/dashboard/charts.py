"""Inline SVG for the dashboard: a job's phases timeline, and line charts
(tide.sim.svg.Chart, the twin report's, so both look alike). No script."""

from __future__ import annotations

import re
import time
from html import escape
from itertools import pairwise
from typing import Any

from tide.sim.svg import PALETTE, Chart, Series

FONT = 'font-family="system-ui,sans-serif" font-size="11"'
STATE_COLOR = {
    "COMPLETED": "#2ca02c",
    "RUNNING": "#1f77b4",
    "COMPLETING": "#1f77b4",
    "SUSPENDED": "#9467bd",
    "FAILED": "#d62728",
    "NODE_FAIL": "#d62728",
    "OUT_OF_MEMORY": "#d62728",
    "TIMEOUT": "#ff7f0e",
    "CANCELLED": "#7f7f7f",
    "PREEMPTED": "#8c564b",
    "REQUEUED": "#8c564b",
}
_CKPT = re.compile(r"^checkpoint (\d+)")


def _unit(span: float) -> tuple[float, str]:
    for size, name in ((86400.0, "d"), (3600.0, "h"), (60.0, "min")):
        if span >= 3 * size:
            return size, name
    return 1.0, "s"


def phases_timeline(j: dict[str, Any], now: float | None = None, width: int = 900) -> str:
    """submit -> eligible -> start -> checkpoints -> restarts -> end, on one time
    axis from the submit time: a 'queue' lane (waiting before each attempt) and
    a 'run' lane (one bar per attempt, coloured by how it ended, checkpoints
    as ticks), with the phase marks above."""
    now = time.time() if now is None else now
    t = j["phases"]["times"]
    t0 = t["submitted"]
    attempts = sorted(j.get("attempts") or [], key=lambda a: a["attempt"])
    end = t["ended"] or now
    checkpoints = [
        (h["time"], m.group(1)) for h in j["history"] if (m := _CKPT.match(h["reason"] or ""))
    ]
    span = max(end - t0, 1.0)
    unit, uname = _unit(span)
    left, right, top = 70, 20, 58
    w = width - left - right

    def x(v: float) -> float:
        return left + (min(max(v, t0), end) - t0) / span * w

    out: list[str] = []
    lane_q, lane_r = top, top + 34
    for label, y in (("queue", lane_q), ("run", lane_r)):
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" {FONT}>{label}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{w}" height="22" fill="#f4f4f4"/>')
    # waits: submit -> eligible (held, dependency, begin) then eligible -> each start
    marks = [("submit", t0)]
    if t["eligible"] and t["eligible"] > t0:
        out.append(_bar(x(t0), x(t["eligible"]), lane_q, "#c7c7c7", "not yet eligible"))
        marks.append(("eligible", t["eligible"]))
    wait_from = t["eligible"] or t0
    for a in attempts:
        out.append(_bar(x(wait_from), x(a["start"]), lane_q, "#f2b04c",
                        f"waiting for attempt {a['attempt']}"))  # fmt: skip
        a_end = a["end"] or now
        color = STATE_COLOR.get(a["state"], "#1f77b4")
        out.append(_bar(x(a["start"]), x(a_end), lane_r, color,
                        f"attempt {a['attempt']}: {a['state']} on {a['nodelist']}"))  # fmt: skip
        marks.append(("start" if a["attempt"] == attempts[0]["attempt"] else "restart", a["start"]))
        wait_from = a_end
    if not attempts and j["state"] == "PENDING":
        out.append(_bar(x(wait_from), x(now), lane_q, "#f2b04c", "waiting"))
    for when, step in checkpoints:
        px = x(when)
        out.append(f'<line x1="{px:.1f}" y1="{lane_r - 3}" x2="{px:.1f}" y2="{lane_r + 25}" '
                   f'stroke="#222" stroke-width="2"><title>checkpoint {escape(step)}</title>'
                   "</line>")  # fmt: skip
    if t["first_step"]:
        marks.append(("first step", t["first_step"]))
    if t["ended"]:
        marks.append(("end", t["ended"]))
    for k, (label, when) in enumerate(marks):
        px, py = x(when), 16 + (k % 3) * 13
        out.append(f'<line x1="{px:.1f}" y1="{py + 3}" x2="{px:.1f}" y2="{lane_r + 22}" '
                   'stroke="#555" stroke-dasharray="2 3"/>')  # fmt: skip
        out.append(f'<text x="{px:.1f}" y="{py}" text-anchor="middle" {FONT}>'
                   f"{escape(label)}</text>")  # fmt: skip
    axis_y = lane_r + 40
    for k in range(6):
        v = span * k / 5
        px = left + v / span * w
        out.append(f'<text x="{px:.1f}" y="{axis_y}" text-anchor="middle" {FONT}>'
                   f"{v / unit:.3g}</text>")  # fmt: skip
    out.append(f'<text x="{left + w / 2:.0f}" y="{axis_y + 16}" text-anchor="middle" {FONT}>'
               f"time since submit ({uname}); checkpoints as black ticks</text>")  # fmt: skip
    height = axis_y + 24
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 {width} '
            f'{height}" width="{width}" height="{height}" role="img" '
            f'aria-label="phases timeline">{"".join(out)}</svg>')  # fmt: skip


def _bar(x0: float, x1: float, y: float, color: str, title: str) -> str:
    return (f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.5):.1f}" height="22" '
            f'fill="{color}"><title>{escape(title)}</title></rect>')  # fmt: skip


def tokens_chart(series: list[list[float]], width: int = 900) -> str:
    """Tokens/s over time from a job's cumulative series (rates between points)."""
    if len(series) < 2:
        return ""
    t0 = series[0][0]
    xs, ys = [], []
    for (ta, ca, _), (tb, cb, _) in pairwise(series):
        if tb > ta:
            xs.append(((ta + tb) / 2 - t0) / 60)
            ys.append((cb - ca) / (tb - ta))
    if not xs:
        return ""
    top = max(ys) * 1.1 or 1.0
    chart = Chart("Useful tokens/s", "minutes since the first report", "tokens/s",
                  0, max(xs[-1], 1e-3), 0, top, width=width, height=220,
                  series=[Series("tokens/s", PALETTE[0], xs, ys)])  # fmt: skip
    return chart.svg()


def accounts_chart(
    series: dict[str, list[float]], start: float, end: float, width: int = 900
) -> str:
    """GPUs held per account over the window (bin means), one line per account."""
    if not series:
        return ""
    bins = len(next(iter(series.values())))
    hours = (end - start) / 3600
    xs = [(k + 0.5) * hours / bins - hours for k in range(bins)]
    top = max(max(v) for v in series.values()) * 1.1 or 1.0
    lines = [
        Series(a, PALETTE[i % len(PALETTE)], xs, ys)
        for i, (a, ys) in enumerate(sorted(series.items()))
    ]
    return Chart("GPUs allocated per account", "hours (0 = now)", "GPUs", -hours, 0, 0, top,
                 width=width, height=260, series=lines).svg()  # fmt: skip


def palette(names: list[str]) -> dict[str, str]:
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(names))}


SHARE_LINES = 10  # associations drawn per fair-share chart (the most used)
_UNIT_NAMES = {"s": "seconds", "min": "minutes", "h": "hours", "d": "days"}


def share_charts(
    hist: dict[str, Any], start: float, end: float, width: int = 900
) -> list[tuple[str, dict[str, str]]]:
    """Fair-share over the window (services.share_history), as (svg, legend:
    name -> colour): each account's decayed usage, its usage share (solid)
    against its normalized shares (dashed), and each user's Fair Tree factor;
    the SHARE_LINES most used of each."""
    times = hist["times"]
    if not times:
        return []
    first = max(start, times[0])  # a history shorter than the window: drawn whole
    size, unit = _unit(end - first)
    xs = [(t - end) / size for t in times]
    accts = _most_used(hist["accounts"])
    users = _most_used(hist["users"])
    color = palette(accts)
    usage = [Series(a, color[a], xs, _scaled(hist["accounts"][a]["raw_usage"], 1 / 3600))
             for a in accts]  # fmt: skip
    top = max((y for s in usage for y in s.ys if y is not None), default=0.0) * 1.1 or 1.0
    shares = []
    for a in accts:
        row = hist["accounts"][a]
        shares.append(Series(f"{a} usage share", color[a], xs, row["eff_usage"]))
        shares.append(Series(f"{a} shares", color[a], xs, row["norm_shares"], dash="5 4"))
    ucolor = palette(users)
    factors = [Series(u, ucolor[u], xs, hist["users"][u]["fairshare"]) for u in users]

    def chart(title: str, ylabel: str, y1: float, series: list[Series]) -> str:
        return Chart(title, f"{_UNIT_NAMES[unit]} (0 = now)", ylabel, (first - end) / size, 0,
                     0, y1, width=width, height=220, series=series).svg()  # fmt: skip

    return [
        (chart("Decayed usage per account", "GPU-hours", top, usage), color),
        (chart("Usage share (solid) against shares (dashed)", "share of parent", 1.0, shares),
         color),
        (chart("Fair-share factor per user", "factor", 1.0, factors), ucolor),
    ]  # fmt: skip


def _most_used(rows: dict[str, dict[str, list[float | None]]]) -> list[str]:
    peak = {k: max((v for v in r["raw_usage"] if v is not None), default=0.0)
            for k, r in rows.items()}  # fmt: skip
    return sorted(sorted(peak, key=lambda k: (-peak[k], k))[:SHARE_LINES])


def _scaled(ys: list[float | None], k: float) -> list[float | None]:
    return [None if y is None else y * k for y in ys]
