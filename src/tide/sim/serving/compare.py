"""`tide sim compare --patterns`: run the patterns on one scenario, compute the
figures and seed 000's costs, explain who wins what and why, write it out.

Outputs (OUT/): patterns.json (every figure and cost per pattern, the
scenario and the prices), report.md (the table and the explanation), and
per pattern OUT/PATTERN/services.json (per-service figures) and
training.csv (every training job's outcome).
"""

from __future__ import annotations

import csv
import json
import multiprocessing as mp
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tide.sim.serving.engine import ServingEngine, ServingOutput
from tide.sim.serving.metrics import Prices, costs, figures
from tide.sim.serving.scenario import REPLICA_IDS, Scenario, setup

_shared: dict[str, Any] = {}  # what a forked worker inherits: the scenario


def run_patterns(
    sc: Scenario,
    patterns: list[str],
    progress: Callable[[str, float], None] | None = None,
    workers: int = 1,
) -> dict[str, tuple[dict[str, Any], list[list[Any]]]]:
    """Each pattern's (figures, training rows), `workers` patterns at a time
    (forked processes: each run is independent, single-threaded, CPU-bound)."""
    if workers <= 1 or len(patterns) <= 1 or "fork" not in mp.get_all_start_methods():
        return {p: _run_one(sc, p, progress) for p in patterns}
    _shared["scenario"] = sc
    ctx = mp.get_context("fork")
    out = {}
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futures = {pool.submit(_forked, p): p for p in patterns}
        for fut in as_completed(futures):
            p = futures[fut]
            out[p] = fut.result()
            if progress is not None:
                progress(p, sc.horizon)
    return {p: out[p] for p in patterns}


def _forked(pattern: str) -> tuple[dict[str, Any], list[list[Any]]]:
    return _run_one(_shared["scenario"], pattern, None)


def _run_one(
    sc: Scenario, pattern: str, progress: Callable[[str, float], None] | None
) -> tuple[dict[str, Any], list[list[Any]]]:
    st = setup(sc, pattern)
    tick = (lambda t, name=pattern: progress(name, t)) if progress else None
    out = ServingEngine.for_setup(st, progress=_progress(tick)).run_serving(st.jobs)
    return figures(out), _training_rows(out)


def _progress(tick: Callable[[float], None] | None) -> Any:
    if tick is None:
        return None

    def report(t: float, *_: Any) -> None:  # the engine reports (t, ended, submitted)
        tick(t)

    return report


def compare(sc: Scenario, patterns: list[str], prices: Prices,
            progress: Callable[[str, float], None] | None = None,
            workers: int = 1) -> dict[str, Any]:  # fmt: skip
    runs = run_patterns(sc, patterns, progress, workers)
    figs = {p: f for p, (f, _) in runs.items()}
    capacity = sc.nodes * sc.gpus_per_node
    if prices.baseline not in figs:
        prices.baseline = patterns[0]
    cost = costs(figs, prices, sc.horizon / 3600.0, capacity)
    for p in figs:
        figs[p]["cost"] = cost[p]
    days = sc.horizon / 86400.0
    return {
        "scenario": {"name": f"{sc.name} ({days:g} days)", "days": days, "nodes": sc.nodes,
                     "gpus": capacity, "serving_gpus": sc.serving_nodes * sc.gpus_per_node,
                     "lending": asdict(sc.lending), "notes": sc.notes,
                     "services": [s.spec.name for s in sc.services]},
        "prices": asdict(prices),
        "patterns": figs,
        "training_rows": {p: rows for p, (_, rows) in runs.items()},
    }  # fmt: skip


def write(result: dict[str, Any], out: Path) -> None:
    from tide.sim.serving.report import markdown

    out.mkdir(parents=True, exist_ok=True)
    doc = {k: v for k, v in result.items() if k != "training_rows"}
    (out / "patterns.json").write_text(json.dumps(doc, indent=2, default=_json) + "\n")
    (out / "report.md").write_text(markdown(result))
    for p, rows in result["training_rows"].items():
        d = out / p
        d.mkdir(exist_ok=True)
        (d / "services.json").write_text(
            json.dumps(result["patterns"][p]["service"]["services"], indent=2) + "\n"
        )
        with (d / "training.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(TRAINING_COLUMNS)
            w.writerows(rows)


TRAINING_COLUMNS = ["job_id", "gpus", "submit", "start", "end", "state", "partition", "restarts",
                    "preemptions", "preempt_lost_gpu_seconds"]  # fmt: skip


def _training_rows(o: ServingOutput) -> list[list[Any]]:
    return [[getattr(r, c) for c in TRAINING_COLUMNS] for r in o.batch.results
            if r.job_id < REPLICA_IDS]  # fmt: skip


def _json(v: Any) -> Any:
    if v == float("inf"):
        return "inf"
    return str(v)
