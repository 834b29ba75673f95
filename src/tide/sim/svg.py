"""Small hand-made SVG charts for the twin report (no plotting library, no
network): line/step charts with shared axes, and heat strips."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape

import numpy as np

try:
    from tide.sim import _countsim
except ImportError:  # not built: Python formats
    _countsim = None  # type: ignore[assignment]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")  # fmt: skip
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About n round-numbered ticks covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, t = [], first
    while t <= hi + step * 1e-9:
        out.append(round(t, 10))
        t += step
    return out


def tick_label(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


@dataclass
class Series:
    label: str
    color: str
    xs: Sequence[float]
    ys: Sequence[float | None]  # None breaks the line
    dash: str = ""
    width: float = 1.6


@dataclass
class Chart:
    """One plot panel. x/y domains are fixed by the caller so that every
    policy shares the same axes."""

    title: str
    xlabel: str
    ylabel: str
    x0: float
    x1: float
    y0: float
    y1: float
    xlog: bool = False
    width: int = 520
    height: int = 240
    series: list[Series] = field(default_factory=list)
    hlines: list[tuple[float, str, str]] = field(default_factory=list)  # (y, color, label)
    margin: tuple[int, int, int, int] = (28, 14, 40, 56)  # top, right, bottom, left

    @property
    def _plot(self) -> tuple[int, int, int, int]:
        """(left, top, plot width, plot height)."""
        top, right, bottom, left = self.margin
        return left, top, self.width - left - right, self.height - top - bottom

    def _x(self, v: float) -> float:
        left, _, w, _ = self._plot
        if self.xlog:
            a, b, v = math.log10(self.x0), math.log10(self.x1), math.log10(max(v, self.x0))
        else:
            a, b = self.x0, self.x1
        return left + (v - a) / ((b - a) or 1) * w

    def _y(self, v: float) -> float:
        _, top, _, h = self._plot
        return top + h - (v - self.y0) / ((self.y1 - self.y0) or 1) * h

    def _xticks(self) -> list[float]:
        if not self.xlog:
            return nice_ticks(self.x0, self.x1)
        lo, hi = math.floor(math.log10(self.x0)), math.ceil(math.log10(self.x1))
        return [10.0**k for k in range(lo, hi + 1) if self.x0 <= 10.0**k <= self.x1]

    def _axes(self) -> list[str]:
        top, _, _, left = self.margin
        frame = _frame(self.x0, self.x1, self.y0, self.y1, self.xlog, self.width, self.height,
                       self.margin, self.xlabel, self.ylabel)  # fmt: skip
        return [frame, f'<text x="{left}" y="{top - 10}" {FONT} font-weight="600">'
                       f"{escape(self.title)}</text>"]  # fmt: skip

    def _frame(self) -> str:
        """The plot box, grid, tick labels and axis labels: all but the title."""
        top, right, bottom, left = self.margin
        out = [f'<rect x="{left}" y="{top}" width="{self.width - left - right}" '
               f'height="{self.height - top - bottom}" fill="#fff" stroke="#999"/>']  # fmt: skip
        for t in self._xticks():
            x = self._x(t)
            out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" '
                       f'y2="{self.height - bottom}" stroke="#eee"/>')  # fmt: skip
            out.append(f'<text x="{x:.1f}" y="{self.height - bottom + 14}" '
                       f'text-anchor="middle" {FONT}>{tick_label(t)}</text>')  # fmt: skip
        for t in nice_ticks(self.y0, self.y1, 5):
            y = self._y(t)
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{self.width - right}" '
                       f'y2="{y:.1f}" stroke="#eee"/>')  # fmt: skip
            out.append(f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end" {FONT}>'
                       f"{tick_label(t)}</text>")  # fmt: skip
        out.append(f'<text x="{left + (self.width - left - right) / 2:.0f}" '
                   f'y="{self.height - 6}" text-anchor="middle" {FONT}>'
                   f"{escape(self.xlabel)}</text>")  # fmt: skip
        out.append(
            f'<text transform="translate(13,{top + (self.height - top - bottom) / 2:.0f}) '
            f'rotate(-90)" text-anchor="middle" {FONT}>{escape(self.ylabel)}</text>'
        )
        return "".join(out)

    def _path(self, s: Series) -> str:
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        return (
            f'<path d="{self._path_data(s)}" fill="none" stroke="{s.color}" '
            f'stroke-width="{s.width}" stroke-opacity="0.85"{dash}>'
            f"<title>{escape(s.label)}</title></path>"
        )

    def _path_data(self, s: Series) -> str:
        """'M x,y L x,y ...' in pixels; a missing y (None, NaN) lifts the pen."""
        if not len(s.xs):
            return ""
        ys = np.array([np.nan if y is None else y for y in s.ys], dtype=np.float64)
        ok = ~np.isnan(ys)
        # as _x and _y compute them, operation for operation, on every point at once
        left, top, w, h = self._plot
        if self.xlog:  # math.log10, as _x takes it
            x0 = self.x0
            a, b = math.log10(x0), math.log10(self.x1)
            xs = np.array([math.log10(max(v, x0)) for v in s.xs], dtype=np.float64)
        else:
            a, b = self.x0, self.x1
            xs = np.asarray(s.xs, dtype=np.float64)
        px = left + (xs - a) / ((b - a) or 1) * w
        yc = np.minimum(np.maximum(ys, self.y0), self.y1)
        py = (top + h) - (yc - self.y0) / ((self.y1 - self.y0) or 1) * h
        move = ok & np.concatenate(([True], ~ok[:-1]))
        return path_text(px[ok], py[ok], move[ok])

    def svg(self) -> str:
        body = self._axes()
        for y, color, label in self.hlines:
            py = self._y(y)
            left, _, w, _ = self._plot
            body.append(f'<line x1="{left}" y1="{py:.1f}" x2="{left + w}" y2="{py:.1f}" '
                        f'stroke="{color}" stroke-dasharray="5 4" stroke-width="1.3">'
                        f"<title>{escape(label)}</title></line>")  # fmt: skip
        body += [self._path(s) for s in self.series]
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} '
                f'{self.height}" width="{self.width}" height="{self.height}">'
                + "".join(body) + "</svg>")  # fmt: skip


@lru_cache(maxsize=64)
def _frame(x0: float, x1: float, y0: float, y1: float, xlog: bool, width: int, height: int,
           margin: tuple[int, int, int, int], xlabel: str, ylabel: str) -> str:  # fmt: skip
    """Chart._frame, once per set of axes (every account's share chart has the same)."""
    return Chart("", xlabel, ylabel, x0, x1, y0, y1, xlog=xlog, width=width, height=height,
                 margin=margin)._frame()  # fmt: skip


def path_text(px: np.ndarray, py: np.ndarray, move: np.ndarray) -> str:
    """' '.join(f"{'M' if m else 'L'}{x:.1f},{y:.1f}") over the points (in C when built)."""
    if _countsim is not None and not os.environ.get("TIDE_NO_C"):
        x, y = (np.ascontiguousarray(v, dtype=np.float64) for v in (px, py))
        return _countsim.svg_path(x, y, np.ascontiguousarray(move, dtype=np.int64))
    points = zip(move.tolist(), px.tolist(), py.tolist(), strict=True)
    return " ".join(f"{'M' if m else 'L'}{x:.1f},{y:.1f}" for m, x, y in points)


def heat_color(v: float) -> str:
    """0 -> pale, 1 -> dark blue (a single-hue ramp readable in print)."""
    v = min(1.0, max(0.0, v))
    r, g, b = (int(247 + (8 - 247) * v), int(251 + (48 - 251) * v), int(255 + (107 - 255) * v))
    return f"#{r:02x}{g:02x}{b:02x}"


def heat_codes(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """heat_color of each value as the integer 0xRRGGBB, all at once (any shape)."""
    v = np.asarray(values, dtype=np.float64)
    v = np.minimum(1.0, np.maximum(0.0, np.where(np.isnan(v), 0.0, v)))  # max(0.0, nan) is 0.0
    r, g, b = ((lo + (hi - lo) * v).astype(np.int64)  # int() truncates; all positive here
               for lo, hi in ((247, 8), (251, 48), (255, 107)))  # fmt: skip
    return (r << 16) | (g << 8) | b


def heat_strip(title: str, rows: Sequence[str], matrix: Sequence[Sequence[float]],
               x0: float, x1: float, xlabel: str, width: int = 1060) -> str:  # fmt: skip
    """One row per label, one cell per time bin, colour = occupancy 0..1."""
    left, top, cell_h = 70, 24, 12 if len(rows) <= 40 else max(3, 480 // max(1, len(rows)))
    h = top + cell_h * len(rows) + 34
    bins = len(matrix[0]) if matrix else 1
    cw = (width - left - 10) / bins
    out = [f'<text x="{left}" y="14" {FONT} font-weight="600">{escape(title)}</text>']
    # every row's colours and runs of equal colours at once (one rect per run: smaller,
    # no seams); a row at a time cost a dozen numpy calls per row
    codes = heat_codes(np.asarray(matrix, dtype=np.float64).reshape(len(matrix), bins))
    new_run = np.ones(codes.shape, dtype=bool)
    new_run[:, 1:] = codes[:, 1:] != codes[:, :-1]
    # a rect's x and width text by its first bin and length, formatted once each
    xs = [f"{left + k * cw:.2f}" for k in range(bins)]
    ws = [f"{k * cw:.2f}" for k in range(bins + 1)]
    for r, (label, row, runs) in enumerate(zip(rows, codes.tolist(), new_run, strict=True)):
        y = top + r * cell_h
        if cell_h >= 9 or r % max(1, 10 // cell_h) == 0:
            out.append(f'<text x="{left - 4}" y="{y + cell_h - 2}" text-anchor="end" {FONT}>'
                       f"{escape(label)}</text>")  # fmt: skip
        starts = np.flatnonzero(runs).tolist()
        for start, stop in zip(starts, [*starts[1:], len(row)], strict=True):
            out.append(f'<rect x="{xs[start]}" y="{y}" width="{ws[stop - start]}" '
                       f'height="{cell_h}" fill="#{row[start]:06x}"/>')  # fmt: skip
    axis = Chart("", xlabel, "", x0, x1, 0, 1, width=width, margin=(0, 10, 0, left))
    for t in nice_ticks(x0, x1, 10):
        x = axis._x(t)
        y = top + cell_h * len(rows)
        out.append(f'<text x="{x:.1f}" y="{y + 13}" text-anchor="middle" {FONT}>'
                   f"{tick_label(t)}</text>")  # fmt: skip
    out.append(f'<text x="{left + (width - left) / 2:.0f}" y="{h - 4}" text-anchor="middle" '
               f"{FONT}>{escape(xlabel)}</text>")  # fmt: skip
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" '
            f'width="{width}" height="{h}" shape-rendering="crispEdges">'
            + "".join(out) + "</svg>")  # fmt: skip


def legend(items: Sequence[tuple[str, str]], dashed: Sequence[tuple[str, str]] = ()) -> str:
    """An HTML legend line: solid swatches, then dashed ones."""
    spans = [f'<span class="key"><i style="background:{c}"></i>{escape(t)}</span>'
             for t, c in items]  # fmt: skip
    spans += [f'<span class="key"><i class="dash" style="border-color:{c}"></i>{escape(t)}</span>'
              for t, c in dashed]  # fmt: skip
    return '<div class="legend">' + "".join(spans) + "</div>"
