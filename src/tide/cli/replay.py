"""The options `tide sim run` and `tide sim compare` share, defined once.

`OptionSpec` is the definition, free of Typer: tide.cli.sim turns each into a
typer.Option, and tide.cli.sim_fast parses `tide sim run`'s argv with the same
table without loading Typer at all. `Replay` holds the parsed values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tide.sim.runner import SCENARIOS

if TYPE_CHECKING:
    from tide.sim.runner import SimInputs


@dataclass(frozen=True)
class OptionSpec:
    """One command-line option: its parameter name, flags, value type (str, int,
    float, Path or bool for a flag), whether it may be None, default, help and
    bounds (min/max: Typer's IntRange/FloatRange, no clamp)."""

    name: str
    flags: tuple[str, ...]
    kind: type
    default: Any
    help: str
    optional: bool = False
    min: float | None = None
    max: float | None = None


def _opt(name: str, kind: type, default: Any, help: str, *short: str, **bounds: Any) -> OptionSpec:
    flag = "--" + name.replace("_", "-")
    optional = bounds.pop("optional", default is None)
    return OptionSpec(name, (flag, *short), kind, default, help, optional, **bounds)


# In the order --help lists them; `out`'s default is each command's own.
REPLAY_OPTIONS: tuple[OptionSpec, ...] = (
    _opt("workload", str, None, "An SWF log (.swf/.swf.gz), a tide .jsonl or an openb folder.",
         "-w"),
    _opt("scenario", str, None, f"A bundled scenario: {', '.join(SCENARIOS)}."),
    _opt("cluster", str, None, "tide YAML, or a bundled cluster name (demo, seed004)."),
    _opt("slurm_conf", str, None,
         "slurm.conf, or a folder with slurm.conf, gres.conf, topology.conf."),
    _opt("out", Path, None, "Output folder.", "-o", optional=False),
    _opt("seed", int, 0, "Seed for generators and fault draws."),
    _opt("backfill", str, None, "none, easy or conservative."),
    _opt("order", str, None, "Queue order: priority, fcfs or sjf."),
    _opt("swf_filter", str, "strong", "strong or none."),
    _opt("estimates", str, "user", "user (requested times) or exact (run times)."),
    _opt("gpus_per_node", int, 1, "SWF processors per node."),
    _opt("max_procs", int, None, "SWF machine size in processors (for logs without "
         "'; MaxProcs:', or to override it).", min=1),
    _opt("bf_interval", int, None, "Seconds between backfill passes; 0 = at every event."),
    _opt("mtbf", float, None, "Mean time between failures per node (s)."),
    _opt("mttr", float, 3600.0, "Mean time to repair (s)."),
    _opt("faults", Path, None,
         "CSV of node failures: time,node[,repair_seconds] (seconds from start)."),
    _opt("price", float, None, "Price of a GPU-hour: adds cost rows to the report.", min=0),
    _opt("mfu", float, None, "Steady MFU (0-1) of training jobs on any GPU type, instead of the "
         "per-type table (docs/twin-metrics.md); a job's own `mfu` wins.", min=0, max=1),
    _opt("from_server", Path, None, "A tide server's data folder: replay its job history (tide "
         "sim export) instead of --workload; give its cluster with --cluster or --slurm-conf."),
    _opt("gzip", bool, False, "Write jobs.csv.gz (gzip) instead of jobs.csv: big runs."),
)  # fmt: skip

# `tide sim run`'s own option, before the shared ones
RUN_POLICY = _opt("policy", str, "", "k8s-default, volcano, kueue, slurm or tide (default: the "
                  "cluster's scheduler.policy, else slurm).")  # fmt: skip
RUN_OUT = Path("out/sim")
COMPARE_OUT = Path("out/compare")


@dataclass
class Replay:
    """The options `run` and `compare` share (one definition, one order)."""

    workload: str | None
    scenario: str | None
    cluster: str | None
    slurm_conf: str | None
    out: Path
    seed: int
    backfill: str | None
    order: str | None
    swf_filter: str
    estimates: str
    gpus_per_node: int
    max_procs: int | None
    bf_interval: int | None
    mtbf: float | None
    mttr: float
    faults: Path | None
    price: float | None
    mfu: float | None
    from_server: Path | None = None
    gzip: bool = False

    def facts(self, inputs: SimInputs, faults: int) -> dict[str, str]:
        """The report's scenario header."""
        out = {"scenario": inputs.name, "workload": self.workload or f"scenario {self.scenario}"}
        out["scheduler"] = f"backfill {inputs.config.backfill}, order {inputs.config.order}"
        out["seed"] = str(self.seed)
        out["node failures"] = str(faults) if faults else "none"
        if self.price is not None:
            out["price"] = f"{self.price:g} per GPU-hour"
        if self.mfu is not None:
            out["steady MFU"] = f"{100 * self.mfu:g} %"
        if inputs.notes:
            out["notes"] = "; ".join(inputs.notes)
        return out
