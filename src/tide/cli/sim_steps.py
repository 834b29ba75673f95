"""The steps of `tide sim run` and `tide sim compare`, without Typer or Rich.

Both commands go through these (inputs, faults, replays, the side-by-side
table, the outputs); `tide sim run` is also reached without Typer
(tide.cli.sim_fast), so nothing here loads Typer, and Rich loads only where
its output differs from plain text (tide.cli.plain_console). A step that
fails prints `error: ...` and exits with status 1 (SystemExit, which Typer
passes through unchanged).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tide.cli.plain_console import LazyConsole, SimpleTable, print_table
from tide.cli.replay import Replay
from tide.sim.runner import (
    PolicyRun,
    SimInputs,
    WorkloadOptions,
    configure,
    faults_for,
    jobs_csv_name,
    load_inputs,
    run_policy,
    workload_info,
    write_comparison,
    write_policy_outputs,
)

if TYPE_CHECKING:
    from tide.sim.events import Fault

console = LazyConsole(stderr=True, emoji=False, highlight=False, soft_wrap=True)  # H:M:S stays


def escape(text: str) -> str:
    """Rich's markup.escape, loaded only for text that has something to escape."""
    if "[" not in text and not text.endswith("\\"):
        return text  # what escape() returns for it
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def fail(message: str) -> SystemExit:
    """Print `error: message` (message is Rich markup) and return the exit to raise."""
    console.print(f"[red]error:[/red] {message}")
    return SystemExit(1)


def run_one(policy: str, r: Replay) -> None:
    """`tide sim run`: one workload under one policy; jobs.csv, metrics.json, report.html."""
    out = r.out
    from_server(r)
    inputs = read_inputs(r)
    faults = all_faults(inputs, r)
    (run,) = replays(inputs, [policy or inputs.config.policy], r, faults)
    write_policy_outputs(out, run, r.gzip)
    write_comparison(out, inputs, [run], r.facts(inputs, len(faults)), r.price, r.mfu)
    print_table(side_by_side([run]))
    console.print(f"wrote {out}/{jobs_csv_name(r.gzip)}, metrics.json, report.html")


def from_server(r: Replay) -> None:
    """--from-server DIR: export the server's history to OUT/workload.jsonl and replay it."""
    if r.from_server is None:
        return
    if r.workload or r.scenario:
        raise fail("--from-server replaces --workload and --scenario; give only one of them")
    from tide.cli.sim_export import export_history

    r.out.mkdir(parents=True, exist_ok=True)
    path = r.out / "workload.jsonl"
    export_history(r.from_server, None, path, console)
    r.workload = str(path)


def read_inputs(r: Replay) -> SimInputs:
    opts = WorkloadOptions(r.swf_filter, r.estimates, r.gpus_per_node, r.seed, r.max_procs)
    try:
        inputs = load_inputs(r.workload, r.scenario, r.cluster or r.slurm_conf, opts)
    except ValueError as e:  # WorkloadError, ConfigError and the readers' own
        raise fail(escape(str(e))) from None
    inputs.mfu = r.mfu
    return inputs


def all_faults(inputs: SimInputs, r: Replay) -> list[Fault]:
    """Failures listed in --faults plus those drawn from --mtbf/--mttr."""
    listed: list[Fault] = []
    if r.faults is not None:
        from tide.sim.faults import read_faults

        try:
            listed = read_faults(r.faults, {n.name for n in inputs.cluster.nodes})
        except (OSError, ValueError) as e:
            raise fail(f"--faults: {escape(str(e))}") from None
    drawn = faults_for(inputs, r.mtbf, r.mttr, None, r.seed)
    return sorted([*listed, *drawn], key=lambda f: (f.time, f.node))


def replays(
    inputs: SimInputs, policies: list[str], r: Replay, faults: list[Fault], workers: int = 1
) -> list[PolicyRun]:
    """Each policy's replay (side by side in `workers` processes), with progress."""
    try:
        cfg = configure(inputs.config, r.backfill, r.order, r.bf_interval)
    except ValueError as e:
        raise fail(
            f"{escape(str(e))} (backfill: none|easy|conservative; order: priority|fcfs|sjf)"
        ) from None
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
            from tide.cli.sim_parallel import run_policies

            with watch_many(console, policies, total) as report:
                runs = run_policies(inputs, policies, cfg, faults, report, workers)
    except ValueError as e:
        raise fail(escape(str(e))) from None
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
        raise SystemExit(1)


_ROWS = (
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
)


def side_by_side(runs: list[PolicyRun]) -> SimpleTable:
    """The terminal table: one column per policy."""
    table = SimpleTable("tide sim: side by side", ["metric", *(r.policy for r in runs)])
    for label, key, fmt in _ROWS:
        values = [r.metrics.get(key) for r in runs]
        table.rows.append([label, *("-" if v is None else fmt.format(v) for v in values)])
    jain = [r.metrics.get("fairness", {}).get("jain") for r in runs]
    table.rows.append(["fairness (Jain)", *("-" if v is None else f"{v:.3f}" for v in jain)])
    return table
