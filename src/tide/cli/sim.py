"""`tide sim ...`: the digital twin from the command line."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from tide.cli import sim_steps
from tide.cli.plain_console import print_table
from tide.cli.replay import (
    COMPARE_OUT,
    REPLAY_OPTIONS,
    RUN_OUT,
    RUN_POLICY,
    OptionSpec,
    Replay,
)
from tide.cli.sim_parallel import default_workers
from tide.cli.sim_steps import console, fail
from tide.sim.runner import write_comparison, write_policy_outputs

sim_app = typer.Typer(
    help="Digital twin: replay workloads under several policies.", no_args_is_help=True
)


def option(spec: OptionSpec) -> Any:
    """The spec as a typer.Option."""
    return typer.Option(*spec.flags, help=spec.help, min=spec.min, max=spec.max)


def typed(spec: OptionSpec) -> Any:
    """The spec as Typer's Annotated[type, typer.Option(...)]."""
    kind: Any = spec.kind | None if spec.optional else spec.kind
    return Annotated[kind, option(spec)]


# (name, type with its typer.Option, default), in the order --help lists them
_REPLAY_OPTIONS: list[tuple[str, Any, Any]] = [
    (spec.name, typed(spec), spec.default) for spec in REPLAY_OPTIONS
]
SEED = next(s for s in REPLAY_OPTIONS if s.name == "seed")


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


@sim_app.command("run")
@replay_options(out=RUN_OUT)
def run_cmd(
    policy: Annotated[str, option(RUN_POLICY)] = "",
    *,
    replay: Replay,
) -> None:
    """Replay one workload under one policy; writes jobs.csv, metrics.json, report.html.

    Example: tide sim run --policy slurm --workload KTH-SP2-1996-2.swf --backfill easy
    --order fcfs --out out/kth
    """
    sim_steps.run_one(policy, replay)


@sim_app.command("compare")
@replay_options(out=COMPARE_OUT)
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
        known = ", ".join(POLICY_NAMES)
        raise fail(f"--policies: unknown {', '.join(unknown)}; available: {known}")
    r, out = replay, replay.out
    sim_steps.from_server(r)
    inputs = sim_steps.read_inputs(r)
    fault_list = sim_steps.all_faults(inputs, r)  # the same for everyone
    workers = parallel or default_workers(len(names))
    runs = sim_steps.replays(inputs, names, r, fault_list, workers)
    for run in runs:
        write_policy_outputs(out / run.policy, run, replay.gzip)
    write_comparison(out, inputs, runs, r.facts(inputs, len(fault_list)), r.price, r.mfu)
    print_table(sim_steps.side_by_side(runs))
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
    seed: Annotated[int, option(SEED)] = 0,
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
