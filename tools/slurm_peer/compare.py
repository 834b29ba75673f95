"""Job-by-job comparison of the real Slurm with the twin's `slurm` policy, and its summary.

Times are seconds from the first submission. Start order is compared pairwise: a pair of jobs
is discordant when one system starts a strictly before b and the other starts b strictly
before a (starts in the same second are ties and never discordant). "Same order" means no
discordant pair.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from slurm_peer.twin import SlurmRecord, TwinRecord


@dataclass(slots=True)
class Row:
    job_id: int
    name: str
    gpus: int
    submit: float
    slurm_start: float
    tide_start: float | None
    slurm_rank: int = 0  # dense rank of the start time (ties share a rank)
    tide_rank: int = 0
    slurm_nodes: str = ""
    tide_nodes: str = ""
    slurm_leaves: int = 0
    tide_leaves: int = 0
    started_by: str = ""  # Slurm: main / backfill (sacct flag)
    slurm_prio0: int | None = None  # InitPrio from slurmctld's log
    tide_prio0: float | None = None  # tide's priority of the job at its submit time

    @property
    def delta(self) -> float | None:
        """tide start - Slurm start (negative: the twin started it earlier)."""
        return None if self.tide_start is None else self.tide_start - self.slurm_start


def build_rows(
    slurm: list[SlurmRecord],
    twin: dict[int, TwinRecord],
    t0: float,
    init_prio: dict[int, int] | None = None,
    tide_prio: dict[int, float] | None = None,
) -> list[Row]:
    rows = []
    for r in slurm:
        tw = twin.get(r.job_id)
        rows.append(
            Row(
                job_id=r.job_id, name=r.name, gpus=r.gpus, submit=r.submit - t0,
                slurm_start=r.start - t0, tide_start=tw.start if tw else None,
                slurm_nodes=r.nodelist, tide_nodes=tw.nodelist if tw else "",
                slurm_leaves=r.leaves, tide_leaves=tw.leaves if tw else 0, started_by=r.sched,
                slurm_prio0=(init_prio or {}).get(r.job_id),
                tide_prio0=(tide_prio or {}).get(r.job_id),
            )
        )  # fmt: skip
    _rank(rows, "slurm_start", "slurm_rank")
    _rank(rows, "tide_start", "tide_rank")
    rows.sort(key=lambda x: (x.slurm_start, x.job_id))
    return rows


def _rank(rows: list[Row], attr: str, out: str) -> None:
    times = sorted({getattr(r, attr) for r in rows if getattr(r, attr) is not None})
    rank = {t: i + 1 for i, t in enumerate(times)}
    for r in rows:
        t = getattr(r, attr)
        setattr(r, out, rank[t] if t is not None else 0)


def discordant_pairs(rows: list[Row]) -> list[tuple[int, int]]:
    """Pairs (a, b): Slurm started a strictly before b, the twin b strictly before a."""
    out = []
    done = [r for r in rows if r.tide_start is not None]
    for a in done:
        for b in done:
            ta, tb = a.tide_start, b.tide_start
            if ta is not None and tb is not None and a.slurm_start < b.slurm_start and tb < ta:
                out.append((a.job_id, b.job_id))
    return out


def summarize(rows: list[Row], tolerance: float = 1.0) -> dict[str, Any]:
    deltas = [abs(d) for r in rows if (d := r.delta) is not None]
    both = [r for r in rows if r.tide_start is not None]
    pairs = len(both) * (len(both) - 1) // 2
    disc = discordant_pairs(rows)
    multi = [r for r in both if r.gpus > 8]
    prio = [(r.slurm_prio0, r.tide_prio0) for r in rows
            if r.slurm_prio0 is not None and r.tide_prio0 is not None]  # fmt: skip
    return {
        "jobs": len(rows),
        "started_by_both": len(both),
        "same_order": not disc,
        "discordant_pairs": len(disc),
        "pairs": pairs,
        "kendall_tau": (1 - 2 * len(disc) / pairs) if pairs else 1.0,
        "discordant_examples": disc[:8],
        "same_start": sum(1 for d in deltas if d == 0),
        f"within_{tolerance:g}s": sum(1 for d in deltas if d <= tolerance),
        "median_abs_dstart": statistics.median(deltas) if deltas else None,
        "mean_abs_dstart": statistics.fmean(deltas) if deltas else None,
        "max_abs_dstart": max(deltas) if deltas else None,
        "same_nodes": sum(1 for r in both if r.slurm_nodes == r.tide_nodes),
        "multi_node_jobs": len(multi),
        "same_leaf_count_multi": sum(1 for r in multi if r.slurm_leaves == r.tide_leaves),
        "init_prio_equal": sum(1 for s, t in prio if abs(s - t) < 1),
        "init_prio_compared": len(prio),
        "slurm_started_by": _count(r.started_by or "?" for r in rows),
    }


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in items:
        out[k] = out.get(k, 0) + 1
    return out


def _t(x: float | None) -> str:
    return "-" if x is None else (f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}")


def format_table(rows: list[Row]) -> str:
    head = ("job", "name", "gpus", "submit", "S.start", "T.start", "dstart", "S#", "T#",
            "by", "S.prio0", "T.prio0", "S.nodes", "T.nodes", "S.lv", "T.lv")  # fmt: skip
    lines = [head]
    for r in rows:
        lines.append((
            str(r.job_id), r.name, str(r.gpus), _t(r.submit), _t(r.slurm_start),
            _t(r.tide_start), _t(r.delta), str(r.slurm_rank), str(r.tide_rank),
            r.started_by or "-", "-" if r.slurm_prio0 is None else str(r.slurm_prio0),
            "-" if r.tide_prio0 is None else f"{r.tide_prio0:.0f}",
            r.slurm_nodes or "-", r.tide_nodes or "-", str(r.slurm_leaves), str(r.tide_leaves),
        ))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in lines)  # fmt: skip


def format_summary(s: dict[str, Any]) -> str:
    n = s["started_by_both"]
    tol = next(k for k in s if k.startswith("within_"))
    return "\n".join([
        f"jobs: {s['jobs']} ({n} started by both)",
        f"same start order: {'yes' if s['same_order'] else 'no'} "
        f"({s['discordant_pairs']} of {s['pairs']} pairs discordant, "
        f"Kendall tau {s['kendall_tau']:.3f}; e.g. {s['discordant_examples'][:4]})",
        f"same start second: {s['same_start']}/{n}; {tol.replace('_', ' ')}: {s[tol]}/{n}",
        f"|dstart| median {_t(s['median_abs_dstart'])} s, mean {_t(s['mean_abs_dstart'])} s, "
        f"max {_t(s['max_abs_dstart'])} s",
        f"same nodes: {s['same_nodes']}/{n}; multi-node jobs on the same number of leaf "
        f"switches: {s['same_leaf_count_multi']}/{s['multi_node_jobs']}",
        f"initial priority equal (|diff| < 1): {s['init_prio_equal']}/{s['init_prio_compared']}",
        f"Slurm started by: {s['slurm_started_by']}",
    ])  # fmt: skip


def as_json(rows: list[Row], s: dict[str, Any]) -> dict[str, Any]:
    return {"summary": s, "jobs": [{**asdict(r), "delta": r.delta} for r in rows]}
