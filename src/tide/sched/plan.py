"""The availability plan used by backfill (Slurm's node_space_map, per node).

What a node has free at time t = free now + what running jobs release by t
(their time limits: the plan never assumes a job ends early) - what holds
take during the job's window. Releases are kept per node in padded arrays
sorted by time, so "free at t" is one vectorised pass; holds are a flat list
checked by overlap. Two kinds of hold:
- whole-node holds: the reservations the plan gives pending jobs, and
  advance reservations. Like Slurm's backfill map (node_space_map's
  avail_bitmap), a reserved node is unavailable to others for the window;
- amount holds: jobs started by this very backfill pass (they hold exactly
  what they took) and GPU-count advance reservations.
Summing every hold that overlaps the window, whether or not the holds
overlap each other, is conservative: a backfilled job can never delay a
hold, at worst it waits a little longer than needed.

Example: node n has 2 free GPUs now and a 6-GPU job ending at t=100. A
4-GPU job of 50 s fits n at t=100; if a hold takes 4 GPUs of n in
[120, 200), the 4-GPU job cannot start at 100 (its window overlaps) and
looks for the next candidate time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from tide.sched.index import ClusterIndex
from tide.sched.placement import Free, node_cores
from tide.sched.shape import Shape
from tide.sched.state import Usage
from tide.sched.types import Allocation

INF = float("inf")


class Holds:
    """Holds in growable numpy columns (appends are amortised O(1), and the
    plan reads them as arrays on every query)."""

    _COLS = (
        ("node", np.int64), ("start", np.float64), ("end", np.float64), ("gpus", np.int64),
        ("cores", np.int64), ("mem", np.int64), ("whole", bool), ("tag", object),
    )  # fmt: skip

    def __init__(self) -> None:
        self._n = 0
        self._data = {name: _column(dt, 16) for name, dt in self._COLS}
        self._data["plain"] = _column(bool, 16, True)  # tag == "", kept as holds come
        self._views: tuple[np.ndarray, ...] | None = None  # `arrays` until the next add
        self.grown = 0  # times the columns were replaced by larger ones (a C binding rebinds)

    def add(
        self,
        node: int,
        start: float,
        end: float,
        gpus: int,
        cores: int,
        mem: int,
        whole: bool,
        tag: str = "",
    ) -> None:
        self.make_room(1)
        d, k = self._data, self._n  # one store per column (a pass adds hundreds)
        d["node"][k] = node
        d["start"][k] = start
        d["end"][k] = end
        d["gpus"][k] = gpus
        d["cores"][k] = cores
        d["mem"][k] = mem
        d["whole"][k] = whole
        d["tag"][k] = tag
        d["plain"][k] = tag == ""
        self._n += 1
        self._views = None

    def make_room(self, rows: int) -> None:
        """Room for `rows` more holds (the columns doubled as needed). Rows not
        yet added read as untagged holds ("", plain): the C kernel writes a
        reservation's holds into them (tide.sched.reserve.earliest_c), then
        `taken` counts them."""
        size = len(self._data["node"])
        if self._n + rows <= size:
            return
        while self._n + rows > size:
            size *= 2
        for name, col in self._data.items():
            grown = _column(col.dtype, size, name == "plain")
            grown[: self._n] = col[: self._n]
            self._data[name] = grown
        self.grown += 1

    def taken(self, rows: int) -> None:
        """The next `rows` holds were written into the columns in place."""
        self._n += rows
        self._views = None

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The columns, as views (read-only use: a pass reads them many times
        between two holds)."""
        if self._views is None:
            self._views = tuple(self._data[name][: self._n] for name, _ in self._COLS)
        return self._views

    def columns(self) -> tuple[np.ndarray, ...]:
        """node, start, end, GPUs, cores, memory, whole: the whole columns, rows
        past len(self) unused (a C binding reads them in place until `grown`
        changes)."""
        d = self._data
        return d["node"], d["start"], d["end"], d["gpus"], d["cores"], d["mem"], d["whole"]

    def untagged(self) -> np.ndarray:
        """Per hold, whether it has no tag: the tag column compared with "" (an
        object column costs a Python comparison per hold on every read)."""
        return self._data["plain"][: self._n]

    def __len__(self) -> int:
        return self._n


def _column(dtype: object, size: int, plain: bool = False) -> np.ndarray:
    """A hold column; a tag column of "" (untagged) and `plain` filled True."""
    if np.dtype(dtype) == object:  # type: ignore[call-overload]
        return np.full(size, "", dtype=object)
    return np.full(size, plain, dtype=dtype) if plain else np.zeros(size, dtype=dtype)  # type: ignore[call-overload]


@dataclass(slots=True)
class Plan:
    ix: ClusterIndex
    now: float
    free_gpus: np.ndarray
    free_cores: np.ndarray
    free_mem: np.ndarray
    # releases per node: times (N x K, +inf padded) and cumulative amounts
    rel_t: np.ndarray
    rel_g: np.ndarray
    rel_c: np.ndarray
    rel_m: np.ndarray
    all_times: np.ndarray  # every distinct release time, sorted
    holds: Holds = field(default_factory=Holds)
    _ready: dict[tuple, np.ndarray] = field(default_factory=dict)
    batch_epoch: float | None = None  # set: plan like Slurm's will-run batches
    # the free amounts and releases change only in `start` (counted here) unless
    # the plan reads usage's arrays live (share=True): what a C binding rebinds on
    version: int = 0
    live: bool = False
    kernel: object = None  # a C binding of this plan (tide.sched.reserve), or None

    @classmethod
    def build(
        cls,
        ix: ClusterIndex,
        usage: Usage,
        running: list[tuple[Allocation, float]],
        now: float,
        share: bool = False,
    ) -> Plan:
        """share=True reads usage's arrays live (for the main pass, where
        starts update usage); otherwise the plan keeps its own copy."""
        rows = [
            (na.node, end, len(na.gpus), len(na.cores), na.mem)
            for alloc, end in running
            for na in alloc.nodes
        ]
        rel_t, rel_g, rel_c, rel_m = release_table(rows, ix.n, now)
        times = np.unique(rel_t[np.isfinite(rel_t)])
        return cls(ix, now, *_free_arrays(usage, share), rel_t, rel_g, rel_c, rel_m, times,
                   live=share)  # fmt: skip

    # -- queries ------------------------------------------------------------

    def free_at(self, t: float, duration: float, skip: str | None = None) -> Free:
        """Free capacity per node for a window [t, t + duration)."""
        g, c, m = self.base_at(t)
        if len(self.holds):
            return self._minus_holds(t, duration, g, c, m, skip)
        return Free(g, c, m)

    def hold(
        self,
        node: int,
        start: float,
        end: float,
        gpus: int = 0,
        cores: int = 0,
        mem: int = 0,
        whole: bool = True,
        tag: str = "",
    ) -> None:
        self.holds.add(node, start, end, gpus, cores, mem, whole, tag)

    def base_at(
        self, t: float, nodes: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free GPUs, cores and memory at t from running jobs' releases alone,
        for every node or for `nodes` only."""
        rows = np.arange(self.ix.n) if nodes is None else nodes
        g, c, m = self.free_gpus[rows], self.free_cores[rows], self.free_mem[rows]
        if t <= self.now:
            return g.copy(), c.copy(), m.copy()
        idx = (self.rel_t[rows] <= t).sum(axis=1)
        has = idx > 0
        take = np.maximum(idx - 1, 0)
        g = g + np.where(has, self.rel_g[rows, take], 0)
        c = c + np.where(has, self.rel_c[rows, take], 0)
        m = m + np.where(has, self.rel_m[rows, take], 0)
        return g, c, m

    def _minus_holds(
        self,
        t: float,
        duration: float,
        g: np.ndarray,
        c: np.ndarray,
        m: np.ndarray,
        skip: str | None,
    ) -> Free:
        hn, hs, he, hg, hc, hm, hw, tags = self.holds.arrays()
        hit = (hs < t + duration) & (he > t)
        if skip:
            hit &= tags != skip
        if not hit.any():
            return Free(g, c, m)
        n = self.ix.n
        nodes = hn[hit]
        g = g - np.bincount(nodes, weights=hg[hit], minlength=n).astype(np.int64)
        c = c - np.bincount(nodes, weights=hc[hit], minlength=n).astype(np.int64)
        m = m - np.bincount(nodes, weights=hm[hit], minlength=n).astype(np.int64)
        whole = hn[hit & hw]
        g[whole] = -1  # a whole-node hold leaves nothing, not even for 0-GPU jobs
        c[whole] = -1
        untouched = np.ones(n, dtype=bool)
        untouched[nodes] = False
        return Free(g, c, m, untouched)

    def earliest_bound(self, shape: Shape, eligible: np.ndarray) -> float:
        """A lower bound on the start time: holds and topology ignored."""
        need_nodes = shape.nodes_min if not shape.spread else 1
        if shape.spread:
            return self._spread_bound(shape, eligible)
        e = self.node_ready(shape)
        e = e[eligible]
        if e.size < need_nodes:
            return INF
        return float(np.partition(e, need_nodes - 1)[need_nodes - 1])

    def node_ready(self, shape: Shape) -> np.ndarray:
        """Per node, when running jobs will have released enough for one node's
        share (memoised per shape: running jobs do not change within a pass)."""
        key = (shape.gpus_per_node, shape.cpus_per_node, shape.mem_per_node, shape.exclusive)
        if key not in self._ready:
            self._ready[key] = self._node_ready(shape)
        return self._ready[key]

    def _node_ready(self, shape: Shape, rows: np.ndarray | None = None) -> np.ndarray:
        """Ready times for every node, or for `rows` only."""
        ix = self.ix
        rows = np.arange(ix.n) if rows is None else rows
        rel_t = self.rel_t[rows]
        if shape.exclusive:
            busy = (self.free_gpus[rows] < ix.gpus[rows]) | (self.free_cores[rows] < ix.cores[rows])
            last = np.where(np.isfinite(rel_t), rel_t, -INF).max(axis=1)
            return np.where(busy, np.maximum(last, self.now), self.now)
        need = (
            (self.rel_g, self.free_gpus, shape.gpus_per_node),
            (self.rel_c, self.free_cores, node_cores(ix, shape.cpus_per_node)),
            (self.rel_m, self.free_mem, shape.mem_per_node),
        )
        ready = np.full(len(rows), self.now)
        for cum, free_all, amount_all in need:
            amount = np.broadcast_to(np.asarray(amount_all), (ix.n,))[rows]
            free = free_all[rows]
            short = free < amount
            if not short.any():
                continue
            enough = (free[:, None] + cum[rows]) >= amount[:, None]
            first = enough.argmax(axis=1)
            t = np.where(enough.any(axis=1), rel_t[np.arange(len(rows)), first], INF)
            ready = np.where(short, np.maximum(ready, t), ready)
        return ready

    def start(self, alloc: Allocation, end: float) -> None:
        """A job this pass started now: it takes its share from the free
        amounts and gives it back at `end` (its time limit), like any running job."""
        self.version += 1
        for na in alloc.nodes:
            self._insert_release(na.node, end, len(na.gpus), len(na.cores), na.mem)
            self.free_gpus[na.node] -= len(na.gpus)
            self.free_cores[na.node] -= len(na.cores)
            self.free_mem[na.node] -= na.mem
        nodes = np.array(sorted({na.node for na in alloc.nodes}))
        for key, ready in self._ready.items():
            ready[nodes] = self._node_ready(_key_shape(key), nodes)
        if end not in self.all_times:
            self.all_times = np.sort(np.append(self.all_times, end))

    def _insert_release(self, node: int, end: float, g: int, c: int, m: int) -> None:
        row = self.rel_t[node]
        if np.isfinite(row[-1]):  # the row is full: one more column for everyone
            self.rel_t = np.hstack([self.rel_t, np.full((self.ix.n, 1), INF)])
            for name in ("rel_g", "rel_c", "rel_m"):
                cum = getattr(self, name)
                setattr(self, name, np.hstack([cum, cum[:, -1:]]))
            row = self.rel_t[node]
        at = int(np.searchsorted(row, end, side="right"))
        row[at + 1 :] = row[at:-1].copy()
        row[at] = end
        for name, amount in (("rel_g", g), ("rel_c", c), ("rel_m", m)):
            cum = getattr(self, name)[node]  # cumulative: shift, then add from `at` on
            before = cum[at - 1] if at > 0 else 0
            cum[at + 1 :] = cum[at:-1].copy()
            cum[at] = before
            cum[at:] += amount

    def _spread_bound(self, shape: Shape, eligible: np.ndarray) -> float:
        total_now = int(self.free_gpus[eligible].sum())
        if total_now >= shape.total_gpus:
            return self.now
        ev_nodes, ev_cols = np.nonzero(np.isfinite(self.rel_t) & eligible[:, None])
        if ev_nodes.size == 0:
            return INF
        times = self.rel_t[ev_nodes, ev_cols]
        step = np.diff(self.rel_g, axis=1, prepend=0)[ev_nodes, ev_cols]
        order = np.argsort(times, kind="stable")
        cum = total_now + np.cumsum(step[order])
        hit = np.flatnonzero(cum >= shape.total_gpus)
        return float(times[order][hit[0]]) if hit.size else INF

    def hold_aware_ready(
        self, ready: np.ndarray, duration: float, skip: str | None = None
    ) -> np.ndarray:
        """Push each node's ready time past the whole-node holds its window
        would overlap: the first time >= ready outside every (hold start -
        duration, hold end) of the node."""
        hn, hs, he, _, _, _, hw, tags = self.holds.arrays()
        sel = hw if not skip else hw & (tags != skip)
        return past_holds(ready, hn[sel], hs[sel] - duration, he[sel])

    def reservation_candidates(
        self, shape: Shape, eligible: np.ndarray, skip: str | None, horizon: float, res: int
    ) -> tuple[Iterable[float], np.ndarray]:
        """Start times worth testing for a job, earliest first (rounded up to
        bf_resolution; at most MAX_CANDIDATES), and each node's hold-aware
        ready time. The times come lazily: most jobs fit at the first."""
        ready = self.node_ready(shape)
        if len(self.holds):
            ready = self.hold_aware_ready(ready, shape.time_limit, skip)
        if shape.spread:
            bound = self._spread_bound(shape, eligible)
            times = self.candidates(max(bound, self.now), horizon) if bound < INF else []
            return times, ready
        e = ready[eligible]
        need = shape.nodes_min
        if e.size < need:
            return [], ready
        bound = float(np.partition(e, need - 1)[need - 1])
        later = e[(e >= bound) & (e <= horizon)]
        if len(self.holds):  # amount holds end: capacity comes back there too
            ends = self.holds.arrays()[2]
            later = np.concatenate([later, ends[(ends > bound) & (ends <= horizon)]])
        if self.batch_epoch is not None:  # Slurm's will-run test: batch ends only
            ends = self._batch_ends(eligible)
            ready = _to_batches(ready, ends, self.now)
            return self._times(later, res, ends), ready
        return _Candidates(self, later, res), ready

    def _times(self, later: np.ndarray, res: int, batches: np.ndarray | None) -> list[float]:
        """The candidate times from the raw ones: rounded up to bf_resolution,
        moved to batch ends (will-run), the first MAX_CANDIDATES distinct."""
        later = _round_up(later, self.now, res)
        if batches is not None:
            later = _to_batches(later, batches, self.now)
        if later.size > 4 * MAX_CANDIDATES:
            later = np.partition(later, 4 * MAX_CANDIDATES)[: 4 * MAX_CANDIDATES]
        return _sorted_distinct(later)[:MAX_CANDIDATES].tolist()  # type: ignore[no-any-return]

    def _batch_ends(self, eligible: np.ndarray) -> np.ndarray:
        """Slurm 22.05's select/cons_tres will-run test (cons_common/job_test.c,
        _will_run_test) removes the running jobs on the candidate nodes in end
        order, in batches: the first batch ends 30 s past the first end rounded
        up to a multiple of 30 s of the epoch, and the window doubles after
        each failed test; the planned start is the end of the batch's last job.
        Returns those batch ends."""
        ends = self.rel_t[eligible]
        ends = np.unique(ends[np.isfinite(ends) & (ends > self.now)])
        if not ends.size:
            return ends
        first = ends[0]
        barrier = first + WILL_RUN_WINDOW - (first + self.batch_epoch) % WILL_RUN_WINDOW
        steps = max(1, int(np.ceil(np.log2(max(1.0, (ends[-1] - barrier) / WILL_RUN_WINDOW)))) + 2)
        windows = barrier + WILL_RUN_WINDOW * (2.0 ** np.arange(steps))
        last = np.searchsorted(ends, windows, side="right") - 1
        return np.unique(ends[last[last >= 0]])

    def fit_at(
        self, t: float, shape: Shape, eligible: np.ndarray, ready: np.ndarray, skip: str | None
    ) -> np.ndarray:
        """1/0 per node: can it take one node's share of a fixed-shape job for
        [t, t + limit)? Ready by t (releases), no whole-node hold in the window,
        and room left beside the amount holds that overlap it."""
        ok = eligible & (ready <= t)
        if not len(self.holds):
            return ok.astype(np.int64)
        nodes, starts, ends, hg, hc, hm, whole, tags = self.holds.arrays()
        hit = (starts < t + shape.time_limit) & (ends > t)
        if skip:
            hit &= tags != skip
        # an exclusive job wants nodes nothing else touches in its window
        ok[nodes[hit if shape.exclusive else hit & whole]] = False
        part = hit & ~whole
        if part.any() and not shape.exclusive:
            touched = np.unique(nodes[part])
            g, c, m = self.base_at(t, touched)
            where = np.searchsorted(touched, nodes[part])
            g -= np.bincount(where, weights=hg[part], minlength=len(touched)).astype(np.int64)
            c -= np.bincount(where, weights=hc[part], minlength=len(touched)).astype(np.int64)
            m -= np.bincount(where, weights=hm[part], minlength=len(touched)).astype(np.int64)
            cores = node_cores(self.ix, shape.cpus_per_node)[touched]
            room = (g >= shape.gpus_per_node) & (c >= cores) & (m >= shape.mem_per_node)
            ok[touched] &= room
        return ok.astype(np.int64)

    def candidates(self, start: float, horizon: float) -> list[float]:
        """Times worth testing from `start`: release times and hold ends."""
        times = [start]
        rel = self.all_times[(self.all_times > start) & (self.all_times <= horizon)]
        times.extend(rel.tolist())
        if len(self.holds):
            ends = self.holds.arrays()[2]
            times.extend(ends[(ends > start) & (ends <= horizon)].tolist())
        return sorted(set(times))


MAX_CANDIDATES = 64  # start times tested per job before it goes without a hold
FIRST_CANDIDATES = 8  # the raw times rounded first (most jobs fit at the first time)


class _Candidates:
    """Plan._times of `later`, built in two steps: the first distinct times
    from the FIRST_CANDIDATES smallest raw ones, then, only when those are
    used up, all of them. Rounding is monotone, so every raw time left out of
    the first step rounds to at least the largest in it: the first step's
    times are the full list's first ones, and the second step goes on after
    them."""

    def __init__(self, plan: Plan, later: np.ndarray, res: int) -> None:
        self.plan, self.later, self.res = plan, later, res

    def __iter__(self) -> Iterator[float]:
        later, k = self.later, FIRST_CANDIDATES
        if later.size <= k:
            yield from self.plan._times(later, self.res, None)
            return
        first = self.plan._times(np.partition(later, k - 1)[:k], self.res, None)
        yield from first
        yield from self.plan._times(later, self.res, None)[len(first) :]


WILL_RUN_WINDOW = 30.0  # seconds: the first batch window of Slurm's will-run test


def past_holds(
    ready: np.ndarray, nodes: np.ndarray, lo: np.ndarray, hi: np.ndarray, pushes: int = 3
) -> np.ndarray:
    """Per node, the first time >= ready[node] inside none of the node's open
    intervals (lo, hi), in O(H log H) for H intervals.

    A sweep over a node's intervals by lo: while lo < x, x = max(x, hi), so
    after k intervals x = max(ready, the largest hi among the first k); it
    stops at the first interval with lo >= that. The prefix maxima within
    each node come from one cumulative max over ranks lifted per node.
    A few plain pushes first (each to the largest hi of the intervals
    holding x, never past the answer) settle short chains for less."""
    out = ready.copy()
    for _ in range(pushes):  # short chains (most): a few pushes settle them cheaply
        at = out[nodes]
        hit = (lo < at) & (at < hi)
        if not hit.any():
            return out
        np.maximum.at(out, nodes[hit], hi[hit])  # still at or before the answer
    ready, h = out.copy(), len(nodes)
    if not h:
        return out
    order = np.lexsort((lo, nodes))
    nodes, lo, hi = nodes[order], lo[order], hi[order]
    starts_node = np.diff(nodes, prepend=-1) != 0
    first = np.flatnonzero(starts_node)  # each node's first interval
    group = np.cumsum(starts_node) - 1
    by_hi = np.argsort(hi, kind="stable")
    rank = np.empty(h, dtype=np.int64)
    rank[by_hi] = np.arange(h)
    upto = hi[by_hi[np.maximum.accumulate(group * h + rank) - group * h]]  # max hi so far
    before = np.concatenate(([-INF], upto[:-1]))
    before[first] = -INF
    x = np.maximum(ready[nodes], before)  # where the sweep is on reaching each interval
    stop = np.where(lo >= x, np.arange(h), h)
    at = np.minimum.reduceat(stop, first)
    last = np.append(first[1:], h) - 1
    done = np.maximum(ready[nodes[first]], upto[last])  # the sweep passed every interval
    out[nodes[first]] = np.where(at < h, x[np.minimum(at, h - 1)], done)
    return out


def release_table(
    rows: list[tuple[int, float, int, int, int]], n: int, now: float, width: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows (node, end, GPUs, cores, memory) as n nodes' releases: times
    sorted per node (not before now, +inf padded to at least `width`
    columns) and the amounts released by each, cumulative."""
    if not rows:
        zero_g, zero_c, zero_m = (np.zeros((n, width), dtype=np.int64) for _ in range(3))
        return np.full((n, width), INF), zero_g, zero_c, zero_m
    # from one flat iterator: half the time of np.array on a list of tuples
    flat = chain.from_iterable(rows)
    arr = np.fromiter(flat, dtype=np.float64, count=5 * len(rows)).reshape(-1, 5)
    order = np.lexsort((arr[:, 1], arr[:, 0]))
    arr = arr[order]
    nodes = arr[:, 0].astype(np.int64)
    counts = np.bincount(nodes, minlength=n)
    k = max(int(counts.max()), width)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    col = np.arange(len(nodes)) - first[nodes]
    rel_t = np.full((n, k), INF)
    rel_t[nodes, col] = np.maximum(arr[:, 1], now)
    amounts = []
    for j in (2, 3, 4):
        m = np.zeros((n, k), dtype=np.int64)
        m[nodes, col] = arr[:, j].astype(np.int64)
        amounts.append(np.cumsum(m, axis=1))
    return rel_t, amounts[0], amounts[1], amounts[2]


def _sorted_distinct(times: np.ndarray) -> np.ndarray:
    """np.unique of finite times (sorted, each once) without its per-call overhead."""
    if times.size < 2:
        return times
    times = np.sort(times)
    return times[np.concatenate(([True], times[1:] != times[:-1]))]


def _to_batches(times: np.ndarray, ends: np.ndarray, now: float) -> np.ndarray:
    """Each future time moved to the first batch end at or after it."""
    if not ends.size:
        return times
    idx = np.searchsorted(ends, times, side="left")
    later = ends[np.minimum(idx, len(ends) - 1)]
    return np.where((times <= now) | (idx >= len(ends)), times, later)


def _key_shape(key: tuple) -> Shape:
    """The Shape a node_ready memo key stands for (only these fields matter)."""
    gpus, cpus, mem, exclusive = key
    return Shape(1, 1, gpus, gpus, False, cpus, 0, mem, 0, exclusive, "", False, 0)


def _round_up(times: np.ndarray, now: float, res: int) -> np.ndarray:
    """Future times rounded up to bf_resolution steps from now (Slurm plans
    in bf_resolution slots)."""
    if res <= 1:
        return times
    return np.where(times <= now, times, now + np.ceil((times - now) / res) * res)


def _free_arrays(usage: Usage, share: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if share:
        return usage.free_gpus, usage.free_cores, usage.free_mem
    return usage.free_gpus.copy(), usage.free_cores.copy(), usage.free_mem.copy()
