"""`tide sim ...`: the digital twin from the command line."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tide.cli.sim_parallel import default_workers, run_policies, workload_info
from tide.sim.faults import Fault, read_faults
from tide.sim.runner import (
    SCENARIOS,
    PolicyRun,
    SimInputs,
    WorkloadOptions,
    configure,
    faults_for,
    jobs_csv_name,
    load_inputs,
    run_policy,
    write_comparison,
    write_policy_outputs,
)

sim_app = typer.Typer(
    help="Digital twin: replay workloads under several policies.", no_args_is_help=True
)
console = Console(stderr=True, emoji=False, highlight=False, soft_wrap=True)  # H:M:S stays

Workload = Annotated[
    str | None,
    typer.Option(
        "--workload", "-w", help="An SWF log (.swf/.swf.gz), a tide .jsonl or an openb folder."
    ),
]
Scenario = Annotated[str | None, typer.Option(help=f"A bundled scenario: {', '.join(SCENARIOS)}.")]
ClusterOpt = Annotated[
    str | None,
    typer.Option("--cluster", help="tide YAML, or a bundled cluster name (demo, seed004)."),
]
SlurmConf = Annotated[
    str | None,
    typer.Option(
        "--slurm-conf", help="slurm.conf, or a folder with slurm.conf, gres.conf, topology.conf."
    ),
]
Out = Annotated[Path, typer.Option("--out", "-o", help="Output folder.")]
Seed = Annotated[int, typer.Option(help="Seed for generators and fault draws.")]
Backfill = Annotated[str | None, typer.Option(help="none, easy or conservative.")]
Order = Annotated[str | None, typer.Option(help="Queue order: priority, fcfs or sjf.")]
SwfFilter = Annotated[str, typer.Option("--swf-filter", help="strong or none.")]
Estimates = Annotated[str, typer.Option(help="user (requested times) or exact (run times).")]
Gpn = Annotated[int, typer.Option("--gpus-per-node", help="SWF processors per node.")]
MaxProcs = Annotated[
    int | None,
    typer.Option(
        "--max-procs",
        help="SWF machine size in processors (for logs without '; MaxProcs:', or to override it).",
        min=1,
    ),
]
BfInterval = Annotated[
    int | None,
    typer.Option("--bf-interval", help="Seconds between backfill passes; 0 = at every event."),
]
Mtbf = Annotated[float | None, typer.Option(help="Mean time between failures per node (s).")]
Mttr = Annotated[float, typer.Option(help="Mean time to repair (s).")]
Price = Annotated[
    float | None,
    typer.Option("--price", help="Price of a GPU-hour: adds cost rows to the report.", min=0),
]
Mfu = Annotated[
    float | None,
    typer.Option(
        "--mfu", help="Steady MFU (0-1) of training jobs on any GPU type, instead of the "
        "per-type table (docs/twin-metrics.md); a job's own `mfu` wins.",
        min=0, max=1,
    ),
]
FromServer = Annotated[
    Path | None,
    typer.Option(
        "--from-server",
        help="A tide server's data folder: replay its job history (tide sim export) instead "
        "of --workload; give its cluster with --cluster or --slurm-conf.",
    ),
]
Gzip = Annotated[
    bool,
    typer.Option("--gzip", help="Write jobs.csv.gz (gzip) instead of jobs.csv: big runs."),
]
FaultsFile = Annotated[
    Path | None,
    typer.Option(
        "--faults", help="CSV of node failures: time,node[,repair_seconds] (seconds from start)."
    ),
]


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


# (name, type with its typer.Option, default), in the order --help lists them
_REPLAY_OPTIONS: list[tuple[str, Any, Any]] = [
    ("workload", Workload, None), ("scenario", Scenario, None), ("cluster", ClusterOpt, None),
    ("slurm_conf", SlurmConf, None), ("out", Out, None), ("seed", Seed, 0),
    ("backfill", Backfill, None), ("order", Order, None), ("swf_filter", SwfFilter, "strong"),
    ("estimates", Estimates, "user"), ("gpus_per_node", Gpn, 1), ("max_procs", MaxProcs, None),
    ("bf_interval", BfInterval, None),
    ("mtbf", Mtbf, None), ("mttr", Mttr, 3600.0), ("faults", FaultsFile, None),
    ("price", Price, None), ("mfu", Mfu, None), ("from_server", FromServer, None),
    ("gzip", Gzip, False),
]  # fmt: skip


def replay_options(out: Path) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the shared options after its own (`--out` defaulting to
    `out`); it receives them as one `replay: Replay` argument."""

    def wrap(func: Callable[..., None]) -> Callable[..., None]:
        hints = get_type_hints(func, include_extras=True)
        mine = inspect.signature(func).parameters.values()
        own = [p.replace(annotation=hints[p.name]) for p in mine if p.name != "replay"]
        shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                                    default=out if name == "out" else default)
                  for name, kind, default in _REPLAY_OPTIONS]  # fmt: skip

        @functools.wraps(func)
        def command(**kwargs: Any) -> None:
            replay = Replay(**{name: kwargs.pop(name) for name, _, _ in _REPLAY_OPTIONS})
            func(**kwargs, replay=replay)

        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + shared
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # type: ignore[attr-defined]
        return command

    return wrap


def _inputs(
    workload: str | None,
    scenario: str | None,
    cluster: str | None,
    slurm_conf: str | None,
    opts: WorkloadOptions,
) -> SimInputs:
    try:
        return load_inputs(workload, scenario, cluster or slurm_conf, opts)
    except ValueError as e:  # WorkloadError, ConfigError and the readers' own
        console.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(1) from None


def _faults(
    inputs: SimInputs, path: Path | None, mtbf: float | None, mttr: float, seed: int
) -> list[Fault]:
    """Failures listed in --faults plus those drawn from --mtbf/--mttr."""
    listed: list[Fault] = []
    if path is not None:
        try:
            listed = read_faults(path, {n.name for n in inputs.cluster.nodes})
        except (OSError, ValueError) as e:
            console.print(f"[red]error:[/red] --faults: {escape(str(e))}")
            raise typer.Exit(1) from None
    drawn = faults_for(inputs, mtbf, mttr, None, seed)
    return sorted([*listed, *drawn], key=lambda f: (f.time, f.node))


def _runs(
    inputs: SimInputs, policies: list[str], r: Replay, faults: list[Fault], workers: int = 1
) -> list[PolicyRun]:
    """Each policy's replay (side by side in `workers` processes), with progress."""
    try:
        cfg = configure(inputs.config, r.backfill, r.order, r.bf_interval)
    except ValueError as e:
        console.print(
            f"[red]error:[/red] {escape(str(e))} "
            "(backfill: none|easy|conservative; order: priority|fcfs|sjf)"
        )
        raise typer.Exit(1) from None
    from tide.cli.sim_progress import watch, watch_many
    from tide.sim.runner import expected_jobs

    total = expected_jobs(inputs)
    try:
        if workers <= 1 or len(policies) <= 1:
            runs = []
            for name in policies:
                with watch(console, name, total) as progress:
                    runs.append(run_policy(inputs, name, cfg, faults, progress=progress))
        else:
            with watch_many(console, policies, total) as report:
                runs = run_policies(inputs, policies, cfg, faults, report, workers)
    except ValueError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None
    _workload_summary(inputs)
    for run in runs:
        for job_id, error in sorted(run.job_faults.items()):
            console.print(
                f"[yellow]warning:[/yellow] {run.policy}: job {job_id} left out of the run: "
                f"the scheduler could not evaluate it ({escape(str(error))})"
            )
    return runs


def _workload_summary(inputs: SimInputs) -> None:
    """Records the reader dropped or changed, and why; no job left is an error."""
    info = workload_info(inputs)
    if info is None or not (info.dropped or info.adjusted or info.notes or not info.kept):
        return
    for line in info.summary().splitlines():
        console.print(escape(line), soft_wrap=True)
    if not info.kept:
        console.print(
            f"[red]error:[/red] no job left to replay: all {info.read} records were dropped "
            "(above); a job wider than the machine needs a larger --max-procs or --cluster, "
            "--swf-filter none keeps records the strong filter drops",
            soft_wrap=True,
        )
        raise typer.Exit(1)


def _table(runs: list[PolicyRun]) -> Table:
    table = Table(title="tide sim: side by side")
    table.add_column("metric")
    for r in runs:
        table.add_column(r.policy, justify="right")
    rows = [
        ("jobs completed", "jobs_completed", "{:,.0f}"),
        ("jobs deadlocked", "jobs_deadlocked", "{:,.0f}"),
        ("utilization", "utilization", "{:.1%}"),
        ("effective utilization", "effective_utilization", "{:.1%}"),
        ("mean wait (s)", "mean_wait", "{:,.0f}"),
        ("p95 wait (s)", "p95_wait", "{:,.0f}"),
        ("max wait (s)", "max_wait", "{:,.0f}"),
        ("mean bounded slowdown", "mean_bsld", "{:,.2f}"),
        ("fragmentation", "fragmentation", "{:.1%}"),
        ("held idle GPU-h", "held_idle_gpu_hours", "{:,.1f}"),
        ("lost GPU-h", "lost_gpu_hours", "{:,.1f}"),
        ("makespan (s)", "makespan", "{:,.0f}"),
    ]
    for label, key, fmt in rows:
        cells = []
        for r in runs:
            v = r.metrics.get(key)
            cells.append("-" if v is None else fmt.format(v))
        table.add_row(label, *cells)
    jain = [r.metrics.get("fairness", {}).get("jain") for r in runs]
    table.add_row("fairness (Jain)", *["-" if v is None else f"{v:.3f}" for v in jain])
    return table


@sim_app.command("run")
@replay_options(out=Path("out/sim"))
def run_cmd(
    policy: Annotated[
        str,
        typer.Option(
            help="k8s-default, volcano, kueue, slurm or tide (default: the cluster's "
            "scheduler.policy, else slurm)."
        ),
    ] = "",
    *,
    replay: Replay,
) -> None:
    """Replay one workload under one policy; writes jobs.csv, metrics.json, report.html.

    Example: tide sim run --policy slurm --workload KTH-SP2-1996-2.swf --backfill easy
    --order fcfs --out out/kth
    """
    r, out = replay, replay.out
    _from_server(r)
    inputs = _inputs(r.workload, r.scenario, r.cluster, r.slurm_conf, _options(r))
    inputs.mfu = r.mfu
    faults = _faults(inputs, r.faults, r.mtbf, r.mttr, r.seed)
    (run,) = _runs(inputs, [policy or inputs.config.policy], r, faults)
    write_policy_outputs(out, run, r.gzip)
    write_comparison(out, inputs, [run], r.facts(inputs, len(faults)), r.price, r.mfu)
    Console().print(_table([run]))
    console.print(f"wrote {out}/{jobs_csv_name(r.gzip)}, metrics.json, report.html")


def _from_server(r: Replay) -> None:
    """--from-server DIR: export the server's history to OUT/workload.jsonl and replay it."""
    if r.from_server is None:
        return
    if r.workload or r.scenario:
        console.print("[red]error:[/red] --from-server replaces --workload and --scenario; "
                      "give only one of them")  # fmt: skip
        raise typer.Exit(1)
    from tide.cli.sim_export import export_history

    r.out.mkdir(parents=True, exist_ok=True)
    path = r.out / "workload.jsonl"
    export_history(r.from_server, None, path, console)
    r.workload = str(path)


def _options(r: Replay) -> WorkloadOptions:
    return WorkloadOptions(r.swf_filter, r.estimates, r.gpus_per_node, r.seed, r.max_procs)


@sim_app.command("compare")
@replay_options(out=Path("out/compare"))
def compare_cmd(
    policies: Annotated[str, typer.Option(help="Comma-separated policy names.")] = (
        "k8s-default,volcano,kueue,slurm,tide"
    ),
    parallel: Annotated[
        int, typer.Option(help="Policies replayed at once (0: one per CPU core).")
    ] = 0,
    patterns: Annotated[
        str | None,
        typer.Option(
            help="Instead of policies: seed 000's patterns (split,bridge,tidal,unified), "
            "services and training on one cluster (docs/services.md); --scenario is then "
            "azure-week (default) or azure-day."
        ),
    ] = None,
    days: Annotated[float | None, typer.Option(help="--patterns: days to run.")] = None,
    investment: Annotated[
        list[str] | None, typer.Option(help="--patterns: one-time cost, PATTERN=AMOUNT.")
    ] = None,
    opex: Annotated[
        list[str] | None, typer.Option(help="--patterns: monthly upkeep, PATTERN=AMOUNT.")
    ] = None,
    burst_price: Annotated[
        float | None, typer.Option(help="--patterns: price of a rented GPU-hour (else --price).")
    ] = None,
    baseline: Annotated[str, typer.Option(help="--patterns: the pattern savings count from.")] = (
        "split"
    ),
    *,
    replay: Replay,
) -> None:
    """Replay one workload under several policies, side by side; or, with --patterns,
    services and training under seed 000's patterns with costs and payback.

    Writes OUT/<policy>/jobs.csv and metrics.json, OUT/comparison.json and one
    OUT/report.html with every policy on the same axes (with --patterns:
    OUT/report.md, OUT/patterns.json and OUT/<pattern>/).

    Example: tide sim compare --scenario demo --policies slurm,tide,volcano --out out/demo
    Example: tide sim compare --patterns split,bridge,tidal,unified --days 7 --price 15
             --investment tidal=180000 --opex tidal=12000 --out out/patterns
    """
    if patterns is not None:
        from tide.sim.serving.cli import compare_patterns

        code = compare_patterns(
            patterns, replay.scenario, days, replay.seed, replay.out, replay.price,
            investment, opex, burst_price, baseline,
            parallel or default_workers(len(patterns.split(","))),
        )  # fmt: skip
        raise typer.Exit(code)
    from tide.sched.policies import POLICY_NAMES

    names = [p.strip() for p in policies.split(",") if p.strip()]
    unknown = [p for p in names if p not in POLICY_NAMES]
    if unknown:
        console.print(
            f"[red]error:[/red] --policies: unknown {', '.join(unknown)}; "
            f"available: {', '.join(POLICY_NAMES)}"
        )
        raise typer.Exit(1)
    r, out = replay, replay.out
    _from_server(r)
    inputs = _inputs(r.workload, r.scenario, r.cluster, r.slurm_conf, _options(r))
    inputs.mfu = r.mfu
    fault_list = _faults(inputs, r.faults, r.mtbf, r.mttr, r.seed)  # the same for everyone
    runs = _runs(inputs, names, r, fault_list, parallel or default_workers(len(names)))
    for run in runs:
        write_policy_outputs(out / run.policy, run, replay.gzip)
    write_comparison(out, inputs, runs, r.facts(inputs, len(fault_list)), r.price, r.mfu)
    Console().print(_table(runs))
    console.print(f"wrote {out}/comparison.json, {out}/report.html and one folder per policy")


@sim_app.command("export")
def export_cmd(
    data_dir: Annotated[Path, typer.Argument(help="The server's --data-dir.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")] = Path(
        "history.jsonl"
    ),
    db: Annotated[
        str | None, typer.Option(help="The server's --db URL (PostgreSQL), instead of DATA_DIR.")
    ] = None,
) -> None:
    """Write a tide server's job history as a twin workload: submit times, the stored
    requests, accounts, users, run times and failures (jobs that never ran are left out).

    Replay it with the server's cluster: tide sim run --workload history.jsonl --cluster
    cluster.yaml (or tide sim run --from-server DATA_DIR in one step); under another policy
    it answers what that policy would have done.

    Example: tide sim export /var/lib/tide -o history.jsonl
    """
    from tide.cli.sim_export import export_history

    export_history(data_dir, db, out, console)


@sim_app.command("generate")
def generate_cmd(
    preset: Annotated[str, typer.Option(help="seed004, demo, month1000, seed000 or llm.")] = "demo",
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")] = Path(
        "workload.jsonl"
    ),
    seed: Seed = 0,
) -> None:
    """Generate a synthetic workload (documented model, named presets) as tide JSONL.

    Example: tide sim generate --preset seed004 --seed 1 --out seed004.jsonl
    """
    from tide.sim.workload.generator import write_preset
    from tide.sim.workload.presets import PRESETS

    if preset not in PRESETS:
        console.print(
            f"[red]error:[/red] --preset {preset!r}: choose one of {', '.join(sorted(PRESETS))}"
        )
        raise typer.Exit(1)
    count = write_preset(preset, seed, out)
    console.print(f"wrote {count} jobs to {out}")
