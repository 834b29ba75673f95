"""Request traces for the twin: the Azure LLM inference trace (Splitwise,
ISCA'24: `TIMESTAMP,ContextTokens,GeneratedTokens`, one hour each of a code
and a conversation service) and the days built from it.

The trace covers one hour (2023-11-16 18:15-19:14 UTC). A day is built by
replaying that hour 24 times with its arrival rate scaled by a daily profile
(DAILY_PROFILE: the hour's share of the peak), thinning where the profile is
below 1 and overlaying time-shifted copies where above; weekends are scaled
by WEEKEND. The profile is an assumption, shaped after the diurnal curves
published for production LLM services (a night trough near 10-15% of the
peak, a morning ramp, a day plateau, an evening decline): the trace itself
says nothing about the other 23 hours, and reports built on it say so.
The trace's own hour is taken as the peak (share 1.0). Everything is drawn
from one seeded generator: the same seed gives the same requests.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# share of the peak rate in each hour of the day (local time), hour 0 first
DAILY_PROFILE: tuple[float, ...] = (
    0.20, 0.15, 0.12, 0.10, 0.10, 0.12, 0.20, 0.35, 0.60, 0.85, 1.00, 1.00,
    0.90, 0.95, 1.00, 1.00, 0.90, 0.75, 0.60, 0.50, 0.45, 0.40, 0.30, 0.25,
)  # fmt: skip
WEEKEND = 0.6  # Saturday and Sunday, times the profile
HOUR = 3600.0


class TraceError(ValueError):
    """A trace file tide cannot read; the message names the line and the fix."""


@dataclass(slots=True)
class RequestTrace:
    """Requests in arrival order: seconds from the start, context and generated tokens."""

    t: np.ndarray  # float64
    ctx: np.ndarray  # int32
    gen: np.ndarray  # int32
    source: str = ""

    def __len__(self) -> int:
        return len(self.t)

    @property
    def span(self) -> float:
        return float(self.t[-1] - self.t[0]) if len(self.t) else 0.0

    def rate(self) -> float:
        return len(self) / self.span if self.span > 0 else 0.0

    def scaled(self, factor: float, seed: int = 0) -> RequestTrace:
        """The same span with `factor` times the requests (thinned or overlaid)."""
        return _rescale(self, np.full(1, factor), self.span or HOUR, seed)


def read_azure(path: str | Path) -> RequestTrace:
    """One Azure LLM trace CSV; times become seconds from its first request."""
    from datetime import datetime

    path = Path(path)
    times: list[float] = []
    ctx: list[int] = []
    gen: list[int] = []
    try:
        with path.open(newline="") as f:
            rows = csv.reader(f)
            header = next(rows, None)
            if header is None or [h.strip() for h in header[:3]] != [
                "TIMESTAMP", "ContextTokens", "GeneratedTokens"
            ]:  # fmt: skip
                raise TraceError(f"{path}:1: expected the header TIMESTAMP,ContextTokens,"
                                 "GeneratedTokens (Azure LLM inference trace 2023)")  # fmt: skip
            for line, row in enumerate(rows, start=2):
                try:
                    stamp = datetime.fromisoformat(row[0].strip()[:26])
                    times.append(stamp.timestamp())
                    ctx.append(int(row[1]))
                    gen.append(int(row[2]))
                except (ValueError, IndexError):
                    raise TraceError(f"{path}:{line}: {row!r} is not 'time,context,generated'; "
                                     "fix or remove the line") from None  # fmt: skip
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror}") from None
    if not times:
        raise TraceError(f"{path}: no requests")
    t = np.asarray(times, dtype=np.float64)
    order = np.argsort(t, kind="stable")
    t = t[order] - t[order][0]
    return RequestTrace(t, np.asarray(ctx, np.int32)[order], np.asarray(gen, np.int32)[order],
                        str(path))  # fmt: skip


def build_days(
    hour: RequestTrace,
    days: float,
    profile: tuple[float, ...] = DAILY_PROFILE,
    weekend: float = WEEKEND,
    scale: float = 1.0,
    seed: int = 0,
    start_weekday: int = 0,
) -> RequestTrace:
    """`days` of traffic from a one-hour trace: hour h of day d has the trace's
    rate x scale x profile[h] (x weekend on days 5 and 6 of the week)."""
    hours = math.ceil(days * 24)
    shares = np.empty(hours)
    for k in range(hours):
        d, h = divmod(k, 24)
        share = profile[h % len(profile)] * scale
        if (start_weekday + d) % 7 >= 5:
            share *= weekend
        shares[k] = share
    out = _rescale(hour, shares, HOUR, seed)
    keep = out.t < days * 86400.0
    what = f"{hour.source} x {days:g} days (daily profile, scale {scale:g})"
    return RequestTrace(out.t[keep], out.ctx[keep], out.gen[keep], what)


def _rescale(src: RequestTrace, shares: np.ndarray, length: float, seed: int) -> RequestTrace:
    """Repeat the first `length` seconds of `src` once per share: each copy keeps
    a request with probability `share` (whole copies, shifted by a random
    offset within the window, for the part above 1)."""
    rng = np.random.default_rng(seed)
    base = src.t < length
    t0, c0, g0 = src.t[base], src.ctx[base], src.gen[base]
    ts, cs, gs = [], [], []
    for k, share in enumerate(shares):
        whole, frac = int(share), share - int(share)
        for copy in range(whole + (1 if frac > 0 else 0)):
            keep = np.ones(len(t0), bool) if copy < whole else rng.random(len(t0)) < frac
            shift = 0.0 if copy == 0 else float(rng.uniform(0, length))
            tt = (t0[keep] + shift) % length + k * length
            ts.append(tt)
            cs.append(c0[keep])
            gs.append(g0[keep])
    if not ts:
        return RequestTrace(np.empty(0), np.empty(0, np.int32), np.empty(0, np.int32), src.source)
    t = np.concatenate(ts)
    order = np.argsort(t, kind="stable")
    return RequestTrace(t[order], np.concatenate(cs)[order], np.concatenate(gs)[order],
                        src.source)  # fmt: skip
