"""The figures of a pattern run (each defined once here and in
docs/services.md, "Twin figures"), and seed 000's cost arithmetic.

Service (all services' requests together, and per service):
  slo_attainment   share of requests answered with TTFT <= Slo.ttft and TPOT
                   <= Slo.tpot (a failed request misses)
  ttft_p50/p95/p99, e2e_p50/p95/p99   seconds, answered requests
  failed           requests that waited longer than the router's buffer
  under_replicated_hours   time with fewer ready replicas than the autoscaler
                   asked for, summed over services
  ready_after_p50/max   seconds from a scale decision to the replica ready
Training:
  train_gpu_hours  GPU-hours held by training attempts within the horizon
  lost_gpu_hours   work thrown away by preemption (since the last checkpoint)
  useful_train_gpu_hours   train_gpu_hours - lost_gpu_hours
  borrowed_gpu_hours   training GPU-hours on serving-pool GPUs
  jobs_started, jobs_done, wait_mean_h, wait_p95_h (first start - submit;
  jobs never started by the horizon count with the horizon as their start)
Cluster:
  utilization      (serving + training GPU-hours) / capacity GPU-hours
  idle_gpu_hours   capacity - serving - training - switching
  switching_gpu_hours   GPUs of nodes changing sides (bridge)
  wasted_share     (idle + lost + switching) / capacity: the paid device time
                   that delivered nothing (seed 000 asks for its share)
  reclaims         borrowers preempted for replicas

Cost (seed 000): paid device time is the whole fleet, whatever it does;
idle, recomputed (lost) and switching hours are part of it, not extra.
Patterns are compared at the same training output and service objective:
a pattern that delivers less useful training than the best one buys the
difference at `burst_price` per GPU-hour (rented capacity), so
  monthly cost = fleet GPUs x 730 h x price + shortfall x burst_price + opex
  monthly net saving = baseline's monthly cost - candidate's monthly cost
  payback (months) = one-time investment / monthly net saving (if positive)
One that misses the service objective is flagged: its saving does not
compare (it does not deliver the same service).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tide.sim.serving.engine import ServingOutput
from tide.sim.serving.scenario import REPLICA_IDS

HOURS_PER_MONTH = 730.0


def _pct(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def service_figures(out: ServingOutput) -> dict[str, Any]:
    per: dict[str, Any] = {}
    all_met, all_n = 0, 0
    ttfts, e2es = [], []
    for run in out.services:
        sim, slo = run.sim, run.svc.slo
        served = ~np.isnan(sim.ttft)
        met = served & (sim.ttft <= slo.ttft) & (sim.tpot <= slo.tpot)
        n = len(sim.ttft)
        all_met += int(met.sum())
        all_n += n
        ttft, e2e = sim.ttft[served], sim.e2e[served]
        ttfts.append(ttft)
        e2es.append(e2e)
        per[run.svc.spec.name] = {
            "requests": n,
            "slo_attainment": met.sum() / n if n else 1.0,
            "failed": int(sim.failed.sum()),
            "ttft_p50": _pct(ttft, 50), "ttft_p95": _pct(ttft, 95), "ttft_p99": _pct(ttft, 99),
            "e2e_p50": _pct(e2e, 50), "e2e_p95": _pct(e2e, 95), "e2e_p99": _pct(e2e, 99),
            "under_replicated_hours": run.under_seconds / 3600.0,
            "scale_events": len(run.scale_events),
            "ready_after_p50": _pct(np.asarray(run.ready_after), 50),
            "ready_after_max": max(run.ready_after) if run.ready_after else None,
            "gpu_hours": run.gpu_seconds / 3600.0,
        }  # fmt: skip
    ttft = np.concatenate(ttfts) if ttfts else np.empty(0)
    e2e = np.concatenate(e2es) if e2es else np.empty(0)
    return {
        "requests": all_n,
        "slo_attainment": all_met / all_n if all_n else 1.0,
        "failed": sum(p["failed"] for p in per.values()),
        "ttft_p50": _pct(ttft, 50), "ttft_p95": _pct(ttft, 95), "ttft_p99": _pct(ttft, 99),
        "e2e_p50": _pct(e2e, 50), "e2e_p95": _pct(e2e, 95), "e2e_p99": _pct(e2e, 99),
        "under_replicated_hours": sum(p["under_replicated_hours"] for p in per.values()),
        "ready_after_p50": _pct(np.concatenate([np.asarray(r.ready_after) for r in out.services])
                                if out.services else np.empty(0), 50),
        "ready_after_max": max((p["ready_after_max"] or 0.0 for p in per.values()), default=None),
        "services": per,
    }  # fmt: skip


def training_figures(out: ServingOutput) -> dict[str, Any]:
    horizon = out.horizon
    train = [r for r in out.batch.results if r.job_id < REPLICA_IDS]
    waits = np.asarray([
        ((r.start if r.start is not None and r.start <= horizon else horizon) - r.ready) / 3600.0
        for r in train if r.submit <= horizon
    ])  # fmt: skip
    lost = sum(r.preempt_lost_gpu_seconds for r in train) / 3600.0
    trained = out.train_gpu_seconds / 3600.0
    return {
        "jobs": len(train),
        "jobs_started": sum(r.start is not None for r in train),
        "jobs_done": sum(r.state == "COMPLETED" for r in train),
        "train_gpu_hours": trained,
        "lost_gpu_hours": lost,
        "useful_train_gpu_hours": trained - lost,
        "borrowed_gpu_hours": out.borrowed_gpu_seconds / 3600.0,
        "preemptions": sum(r.preemptions for r in train),
        "wait_mean_h": float(waits.mean()) if len(waits) else None,
        "wait_p95_h": _pct(waits, 95),
    }


def cluster_figures(out: ServingOutput) -> dict[str, Any]:
    cap = out.capacity_gpus * out.horizon / 3600.0
    serving = out.serving_gpu_seconds / 3600.0
    train = out.train_gpu_seconds / 3600.0
    switching = out.switching_gpu_seconds / 3600.0
    return {
        "capacity_gpu_hours": cap,
        "serving_gpu_hours": serving,
        "utilization": (serving + train) / cap if cap else 0.0,
        "switching_gpu_hours": switching,
        "idle_gpu_hours": max(0.0, cap - serving - train - switching),
        "reclaims": out.reclaims,
    }


def figures(out: ServingOutput) -> dict[str, Any]:
    train, cluster = training_figures(out), cluster_figures(out)
    # seed 000: idle, recomputed and switching hours are paid device time; their share
    # of it is what a pattern wastes of the bill
    cap = cluster["capacity_gpu_hours"]
    waste = cluster["idle_gpu_hours"] + train["lost_gpu_hours"] + cluster["switching_gpu_hours"]
    cluster["wasted_share"] = waste / cap if cap else 0.0
    return {"pattern": out.pattern, "service": service_figures(out),
            "training": train, "cluster": cluster}  # fmt: skip


@dataclass(slots=True)
class Prices:
    """What the user pays (seed 000's example: 15 per GPU-hour, 180,000 once,
    12,000 a month of upkeep, in any one currency)."""

    gpu_hour: float = 15.0
    burst_gpu_hour: float | None = None  # renting the training shortfall; None = gpu_hour
    investment: dict[str, float] = field(default_factory=dict)  # pattern -> one-time
    opex: dict[str, float] = field(default_factory=dict)  # pattern -> per month
    baseline: str = "split"
    slo_target: float = 0.99  # the share of requests the objective promises


def costs(runs: dict[str, dict[str, Any]], prices: Prices, horizon_hours: float,
          capacity_gpus: int) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Seed 000's monthly cost, net saving and payback per pattern."""
    scale = HOURS_PER_MONTH / horizon_hours
    output = {p: f["training"]["useful_train_gpu_hours"] * scale for p, f in runs.items()}
    target = max(output.values(), default=0.0)
    burst = prices.burst_gpu_hour if prices.burst_gpu_hour is not None else prices.gpu_hour
    fleet = capacity_gpus * HOURS_PER_MONTH * prices.gpu_hour
    out: dict[str, dict[str, Any]] = {}
    for p in runs:
        shortfall = target - output[p]
        monthly = fleet + shortfall * burst + prices.opex.get(p, 0.0)
        meets = runs[p]["service"]["slo_attainment"] >= prices.slo_target
        out[p] = {"useful_train_gpu_hours_month": output[p], "shortfall_gpu_hours_month": shortfall,
                  "monthly_cost": monthly, "meets_slo": meets}  # fmt: skip
    base = out.get(prices.baseline)
    for p, c in out.items():
        saving = (base["monthly_cost"] - c["monthly_cost"]) if base else None
        c["monthly_net_saving"] = saving
        invest = prices.investment.get(p, 0.0)
        c["investment"] = invest
        if p == prices.baseline or saving is None:
            c["payback_months"] = None
        elif saving > 0:
            c["payback_months"] = invest / saving
        else:
            c["payback_months"] = float("inf")
    return out
