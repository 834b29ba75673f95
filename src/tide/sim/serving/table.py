"""The patterns table: its rows, the best value of a row, number formats
(shared by the report and the command's table)."""

from __future__ import annotations

from typing import Any

# rows of the table: (label, section, key, format, better: "high" | "low" | "")
ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    ("service objective met (% of requests)", "service", "slo_attainment", "pct", "high"),
    ("time to first token p50 (s)", "service", "ttft_p50", "f2", "low"),
    ("time to first token p95 (s)", "service", "ttft_p95", "f2", "low"),
    ("time to first token p99 (s)", "service", "ttft_p99", "f2", "low"),
    ("end to end p50 (s)", "service", "e2e_p50", "f1", "low"),
    ("end to end p95 (s)", "service", "e2e_p95", "f1", "low"),
    ("end to end p99 (s)", "service", "e2e_p99", "f1", "low"),
    ("failed requests", "service", "failed", "int", "low"),
    ("time with too few replicas (h)", "service", "under_replicated_hours", "f2", "low"),
    ("scale-up: decision -> ready, p50 (s)", "service", "ready_after_p50", "f0", "low"),
    ("scale-up: decision -> ready, max (s)", "service", "ready_after_max", "f0", "low"),
    ("useful training (GPU-h)", "training", "useful_train_gpu_hours", "f0", "high"),
    ("  of it on borrowed serving GPUs (GPU-h)", "training", "borrowed_gpu_hours", "f0", ""),
    ("lost to reclaim/preemption (GPU-h)", "training", "lost_gpu_hours", "f1", "low"),
    ("preemptions of training jobs", "training", "preemptions", "int", "low"),
    ("training jobs finished", "training", "jobs_done", "int", "high"),
    ("training wait, mean (h)", "training", "wait_mean_h", "f2", "low"),
    ("training wait, p95 (h)", "training", "wait_p95_h", "f2", "low"),
    ("GPU utilization (%)", "cluster", "utilization", "pct", "high"),
    ("idle GPU-h (paid, unused)", "cluster", "idle_gpu_hours", "f0", "low"),
    ("switching gaps (GPU-h)", "cluster", "switching_gpu_hours", "f1", "low"),
    ("idle + lost + switching (% of paid GPU-h)", "cluster", "wasted_share", "pct", "low"),
    ("monthly cost", "cost", "monthly_cost", "money", "low"),
    ("monthly net saving vs baseline", "cost", "monthly_net_saving", "money", "high"),
    ("payback (months)", "cost", "payback_months", "months", "low"),
)


def value(f: dict[str, Any], section: str, key: str) -> Any:
    return f.get(section, {}).get(key)


def best(result: dict[str, Any], section: str, key: str, better: str) -> list[str]:
    vals = {p: value(f, section, key) for p, f in result["patterns"].items()}
    vals = {p: v for p, v in vals.items() if v is not None}
    if not vals or not better:
        return []
    target = max(vals.values()) if better == "high" else min(vals.values())
    return [p for p, v in vals.items() if abs(v - target) <= 1e-9 * max(1.0, abs(target))]


def fmt(v: Any, kind: str) -> str:
    if v is None:
        return "-"
    if kind == "pct":
        return f"{100 * v:.2f}"
    if kind == "int":
        return f"{int(v):,}"
    if kind == "money":
        return f"{v:,.0f}"
    if kind == "months":
        return "never" if v == float("inf") else f"{v:.1f}"
    return f"{v:,.{int(kind[1:])}f}"
