"""Named scenarios for `tide sim compare --patterns` (docs/services.md).

`azure-week` (the default; `azure-day` is its first day): 20 nodes x 8 A100,
4 of them the serving pool (20%, as in seed 004's case). Two services on the
Azure LLM trace: `code` (max 6 replicas) and `conv` (max 12), 2 GPUs per
replica (ReplicaModel's defaults), a 45 s model load, autoscaling to 8
requests in flight per replica (HPA defaults: 300 s scale-down window), the
objective TTFT <= 2 s and TPOT <= 0.1 s. One hour of the trace is replayed
into days with the daily profile of tide.sim.serving.trace. Training: the
TrainingMix stream offering 1.15x the training pool's GPU-hours (1-16 GPU
jobs, lognormal run times around 2 h, 70% checkpointing every 30 min and
allowed to borrow).
"""

from __future__ import annotations

import os
from pathlib import Path

from tide.sim.serving.scenario import (
    Lending,
    Scenario,
    ServiceDef,
    TrainingMix,
    service_spec,
    training_jobs,
)
from tide.sim.serving.trace import TraceError, build_days, read_azure

PRESETS = {"azure-week": 7.0, "azure-day": 1.0}
AZURE = "azure-llm-2023"


def traces_dir() -> Path:
    """TIDE_TRACES, else the nearest `shared/traces` above the working directory or
    the repository (the layout of this project's machines: ../shared/traces)."""
    env = os.environ.get("TIDE_TRACES")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    for start in (Path.cwd().resolve(), here.parents[4]):
        candidates += [d / "shared" / "traces" for d in (start, *start.parents)]
    for c in candidates:
        if (c / AZURE).is_dir():
            return c
    raise TraceError(
        "the Azure LLM trace was not found (looked in TIDE_TRACES and shared/traces above "
        "the working directory); set TIDE_TRACES to the folder holding azure-llm-2023/"
    )


def azure_scenario(
    name: str = "azure-week",
    days: float | None = None,
    seed: int = 0,
    nodes: int = 20,
    serving_nodes: int = 4,
    load: float = 1.15,
    traces: Path | None = None,
    lending: Lending | None = None,
) -> Scenario:
    if days is None:
        if name not in PRESETS:
            raise ValueError(f"unknown scenario {name!r}; choose one of {', '.join(PRESETS)}")
        days = PRESETS[name]
    root = (traces or traces_dir()) / AZURE
    code = read_azure(root / "AzureLLMInferenceTrace_code.csv")
    conv = read_azure(root / "AzureLLMInferenceTrace_conv.csv")
    horizon = days * 86400.0
    services = [
        ServiceDef(service_spec("code", 2, 6, 8.0, 45.0), build_days(code, days, seed=seed + 1)),
        ServiceDef(service_spec("conv", 2, 12, 8.0, 45.0), build_days(conv, days, seed=seed + 2)),
    ]
    train_gpus = (nodes - serving_nodes) * 8
    jobs = training_jobs(TrainingMix(load=load), train_gpus, horizon, seed)
    notes = [
        f"traffic: the Azure LLM inference trace (Splitwise, ISCA'24), one hour of each "
        f"service replayed into {days:g} days with an assumed daily profile "
        f"(tide.sim.serving.trace.DAILY_PROFILE; weekends x0.6): the trace covers one hour",
        f"training: {len(jobs)} jobs offering {load:g}x the {train_gpus}-GPU training pool",
    ]
    return Scenario(name, nodes, 8, serving_nodes, services, jobs, horizon,
                    lending or Lending(), notes)  # fmt: skip
