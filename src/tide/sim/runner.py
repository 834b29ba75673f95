"""Run the twin: resolve inputs, run policies, write the documented outputs.

I/O lives here and in the CLI, never in the engine or the core.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tide.hostlist import expand
from tide.model import AccountTree, Cluster
from tide.model.sched_config import BackfillMode, QueueOrder, SchedulerConfig
from tide.sched.index import ClusterIndex, build_index
from tide.sim import count_fast
from tide.sim.count_driver import CountDriver, NotCountable, count_applicable
from tide.sim.count_fast import CountRun
from tide.sim.metrics import JobResult, Sample, compute_metrics
from tide.sim.outputs import metrics_json, write_jobs_csv, write_metrics_json
from tide.sim.progress import ProgressFn
from tide.sim.report import RunData, write_report
from tide.sim.table import ResultTable, RowsOrColumns, Timeline
from tide.sim.workload.base import SimJob, WorkloadError, WorkloadInfo

if TYPE_CHECKING:
    from tide.config.loaded import LoadedCluster
    from tide.sim.events import Fault
    from tide.sim.training import Ledger

# The cluster readers (YAML schemas), the general engine, the generator and the
# other workload readers load when a run needs them: replaying an SWF log on its
# flat cluster with the count driver needs none of them.

SCENARIOS = ("demo", "seed000", "seed004", "month1000", "preempt", "llm")


@dataclass
class SimInputs:
    name: str
    cluster: Cluster
    config: SchedulerConfig
    accounts: AccountTree
    jobs: Callable[[], Iterable[SimJob]]  # a fresh pass over the workload
    target_shares: dict[str, float] | None = None
    notes: list[str] = field(default_factory=list)
    mfu: float | None = None  # --mfu: steady MFU of training jobs on every GPU type
    # a controller's own pass times (tide sim export): the twin schedules only then
    passes: list[tuple[float, bool | None]] | None = None  # (time, ran backfill)


@dataclass
class WorkloadOptions:
    swf_filter: str = "strong"
    estimates: str = "user"
    gpus_per_node: int = 1
    seed: int = 0
    max_procs: int | None = None  # an SWF machine's size, over its `; MaxProcs:` header


class PolicyRun(RowsOrColumns):
    """One policy's run. Results and timeline are held as columns
    (tide.sim.table) or as JobResults and Samples, whichever the driver gave;
    the other form is built on first use."""

    def __init__(
        self,
        policy: str,
        results: list[JobResult] | ResultTable,
        samples: list[Sample] | Timeline,
        capacity_gpus: int,
        metrics: dict[str, Any],
        driver: str,  # "count" or "general"
    ) -> None:
        self.policy = policy
        self.capacity_gpus = capacity_gpus
        self.metrics = metrics
        self.driver = driver
        self.job_faults: dict[int, str] = {}  # jobs the core could not evaluate -> why
        self._hold(results, samples)


def load_inputs(
    workload: str | None,
    scenario: str | None,
    cluster_spec: str | None,
    opts: WorkloadOptions,
) -> SimInputs:
    """Resolve --scenario / --workload and --cluster / --slurm-conf."""
    if scenario:
        return _scenario(scenario, cluster_spec, opts)
    if not workload:
        raise WorkloadError(
            f"give --workload PATH or --scenario NAME (bundled scenarios: {', '.join(SCENARIOS)})"
        )
    path = Path(workload)
    lower = path.name.lower()
    if lower.endswith((".swf", ".swf.gz")):
        return _swf(path, cluster_spec, opts)
    if lower.endswith(".jsonl"):
        return _jsonl(path, cluster_spec)
    if path.is_dir() or lower.endswith(".csv"):
        return _openb(path, cluster_spec)
    raise WorkloadError(
        f"--workload {workload!r}: use a .swf/.swf.gz log, a tide .jsonl file, "
        "or an Alibaba openb folder/pod CSV"
    )


def _cluster(spec: str | None, default: str | None) -> LoadedCluster | None:
    name = spec or default
    if not name:
        return None
    from tide.config.loader import resolve_cluster

    return resolve_cluster(name)


def _scenario(name: str, cluster_spec: str | None, opts: WorkloadOptions) -> SimInputs:
    from importlib import resources

    from tide.sim.workload.generator import generate
    from tide.sim.workload.presets import PRESETS

    bundled = resources.files("tide").joinpath("data", "scenarios", f"{name}.jsonl")
    if bundled.is_file():
        with resources.as_file(bundled) as p:
            return _jsonl(Path(p), cluster_spec, name)
    if name in PRESETS:
        cluster_name, jobs = generate(name, opts.seed)
        shares = dict(PRESETS[name]().shares) or None  # the preset's targets, if it has any
        loaded = _cluster(cluster_spec, cluster_name if isinstance(cluster_name, str) else None)
        if loaded is None:
            assert isinstance(cluster_name, Cluster)
            return SimInputs(name, cluster_name, SchedulerConfig(), AccountTree(), lambda: jobs,
                             shares)  # fmt: skip
        return _inputs(name, loaded, lambda: jobs, shares)
    raise WorkloadError(f"--scenario {name!r}: unknown; choose one of {', '.join(SCENARIOS)}")


def _inputs(
    name: str,
    loaded: LoadedCluster,
    jobs: Callable[[], Iterable[SimJob]],
    shares: dict[str, float] | None = None,
) -> SimInputs:
    return SimInputs(
        name,
        loaded.cluster,
        loaded.config,
        loaded.accounts,
        jobs,
        shares or _tree_shares(loaded.accounts),
        list(loaded.warnings),
    )


def _tree_shares(accounts: AccountTree) -> dict[str, float] | None:
    top = [a for a in accounts.accounts.values() if a.parent == "root" and a.name != "root"]
    shares = {a.name: float(max(0, a.fairshare)) for a in top}
    return shares if sum(shares.values()) > 0 else None


def _swf(path: Path, cluster_spec: str | None, opts: WorkloadOptions) -> SimInputs:
    from tide.sim.fastswf import read_swf_fast

    wl = read_swf_fast(
        path,
        filter=opts.swf_filter,  # type: ignore[arg-type]
        estimates=opts.estimates,  # type: ignore[arg-type]
        gpus_per_node=opts.gpus_per_node,
        max_procs=opts.max_procs,
    )
    loaded = _cluster(cluster_spec, None)
    if loaded is not None:
        return _inputs(path.name, loaded, lambda: wl)
    cluster = wl.info.flat_cluster(opts.gpus_per_node)  # type: ignore[attr-defined]
    epoch = float(wl.info.unix_start_time or 0)
    return SimInputs(path.name, cluster, SchedulerConfig(epoch=epoch), AccountTree(), lambda: wl)


def _jsonl(path: Path, cluster_spec: str | None, name: str | None = None) -> SimInputs:
    from tide.config.loader import bundled_names
    from tide.sim.workload.jsonl import read_jsonl

    wl = read_jsonl(path)
    meta = wl.info.meta or {}
    loaded = _cluster(cluster_spec, meta.get("cluster"))
    if loaded is None:
        raise WorkloadError(
            f"{path}: no cluster; pass --cluster FILE, --slurm-conf PATH or one "
            f"of the bundled clusters ({', '.join(bundled_names())})"
        )
    inputs = _inputs(name or path.name, loaded, lambda: wl, _parse_shares(meta.get("shares")))
    if meta.get("epoch"):  # the Unix time of t=0 (Slurm plans on epoch-aligned windows)
        inputs.config.epoch = float(meta["epoch"])
    if meta.get("passes"):  # a live controller's pass times (tide sim export)
        inputs.passes = _passes(path, meta["passes"])
    if meta.get("bf_phase"):  # when in each bf_interval Slurm's backfill thread ran
        inputs.config.bf_phase = float(meta["bf_phase"])
    if meta.get("priority_phase"):  # when Slurm's priority thread ran (its start)
        inputs.config.priority_phase = float(meta["priority_phase"])
    if meta.get("background_phase"):  # when slurmctld's background thread wakes
        inputs.config.background_phase = float(meta["background_phase"])  # (triggers)
    if meta.get("kill_completing"):  # a killed job's batch host, other nodes: COMPLETING s
        inputs.config.kill_completing = _completing(path, meta["kill_completing"])
    return inputs


def _completing(path: Path, text: str) -> tuple[float, float]:
    """'3.5,0.1' -> (3.5, 0.1): seconds a killed job's batch host and other nodes complete."""
    try:
        batch, other = (float(x) for x in text.split(","))
    except ValueError:
        raise WorkloadError(f"{path}: kill_completing {text!r} is not two numbers of seconds; "
                            "write e.g. '# kill_completing: 3.5,0.1'") from None  # fmt: skip
    if min(batch, other) < 0:
        raise WorkloadError(f"{path}: kill_completing {text!r} has a negative time; "
                            "write seconds of at least 0")  # fmt: skip
    return batch, other


def _passes(path: Path, text: str) -> list[tuple[float, bool | None]]:
    """'0.19:1,0.49:0,2.02' -> (seconds, ran backfill or None: not known)."""
    out: list[tuple[float, bool | None]] = []
    try:
        for item in (x.strip() for x in text.split(",") if x.strip()):
            t, _, b = item.partition(":")
            out.append((float(t), None if not b else b == "1"))
    except ValueError:
        raise WorkloadError(f"{path}: header 'passes': a comma list of SECONDS[:0|1] "
                            "(tide sim export writes it)") from None  # fmt: skip
    return sorted(out, key=lambda p: p[0])


def _parse_shares(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    out = {}
    for item in text.split(","):
        k, _, v = item.partition("=")
        out[k.strip()] = float(v)
    return out


def _openb(path: Path, cluster_spec: str | None) -> SimInputs:
    from tide.sim.workload.openb import openb_cluster, read_openb

    folder = path if path.is_dir() else path.parent
    pods = path if path.is_file() else folder / "openb_pod_list_default.csv"
    wl = read_openb(pods)
    loaded = _cluster(cluster_spec, None)
    if loaded is not None:
        return _inputs(path.name, loaded, lambda: wl)
    cluster = openb_cluster(folder / "openb_node_list_gpu_node.csv")
    return SimInputs(path.name, cluster, SchedulerConfig(), AccountTree(), lambda: wl)


def workload_info(inputs: SimInputs) -> WorkloadInfo | None:
    """What the workload's reader counted (read, kept, dropped and why) on its last pass."""
    return getattr(inputs.jobs(), "info", None)


def expected_jobs(inputs: SimInputs) -> int | None:
    """How many jobs the workload holds, when that is cheap to know (for
    progress): a sized collection, a parsed SWF log, or a JSONL file's job lines."""
    jobs = inputs.jobs()
    if isinstance(jobs, Sized):
        return len(jobs)
    columns = getattr(jobs, "columns", None)
    if callable(columns):  # an SWF log: parsed once, and the run needs it anyway
        return len(columns())
    info = getattr(jobs, "info", None)
    if info is not None and info.kind == "jsonl":
        with open(info.source, "rb") as f:
            return sum(1 for line in f if line.lstrip()[:1] == b"{")
    return None


def configure(
    base: SchedulerConfig, backfill: str | None, order: str | None, bf_interval: int | None
) -> SchedulerConfig:
    cfg = copy.deepcopy(base)
    if backfill:
        cfg.backfill = BackfillMode(backfill)
    if order:
        cfg.order = QueueOrder(order)
    if bf_interval is not None:
        cfg.bf_interval = bf_interval
    return cfg


def run_policy(
    inputs: SimInputs,
    policy: str,
    config: SchedulerConfig,
    faults: list[Fault] | None = None,
    progress: ProgressFn | None = None,
) -> PolicyRun:
    # the count path only reads the cluster (no copy: 80,000 nodes take seconds)
    ix = build_index(inputs.cluster) if policy == "slurm" and not faults else None
    if ix is not None and _countable(ix, inputs, config):
        part = inputs.cluster.default_partition()
        try:
            run = _count_run(inputs, ix, config, part.name if part else "")
            if progress is not None:  # the count driver runs in one go
                _report_done(progress, run.table)
            return _finish(
                inputs,
                policy,
                run.table,
                run.timeline,
                int(ix.gpus.sum()),
                "count",
                run.account_seconds,
                _count_ledgers(inputs, run.table),
            )
        except NotCountable:
            pass
    from tide.sim.engine import Engine

    cluster = copy.deepcopy(inputs.cluster)  # the engine changes its nodes' states
    ix = build_index(cluster)
    engine = Engine(
        cluster, config, policy, inputs.accounts, faults or [], index=ix, progress=progress
    )
    if inputs.passes:
        engine.passes = [t for t, _ in inputs.passes]
        engine.pass_backfill = {t: b for t, b in inputs.passes if b is not None}
    out = engine.run(inputs.jobs())
    done = _finish(inputs, policy, out.table, out.timeline, out.capacity_gpus, "general", None,
                   out.training)  # fmt: skip
    if out.job_faults:  # left out of the run (each named); metrics say how many
        done.job_faults = out.job_faults
        done.metrics["jobs_not_evaluated"] = len(out.job_faults)
    return done


def _countable(ix: ClusterIndex, inputs: SimInputs, config: SchedulerConfig) -> bool:
    has_limits = any(not a.limits.is_empty() for a in inputs.accounts.accounts.values())
    countable = count_applicable(ix, config, has_limits)
    return countable and config.preempt_type in ("", "preempt/none")  # it cannot preempt


def _report_done(progress: ProgressFn, table: ResultTable) -> None:
    ends = table.end[~np.isnan(table.end)]
    done = len(ends)
    progress(float(ends.max()) if done else 0.0, done, len(table))


def _count_run(
    inputs: SimInputs, ix: ClusterIndex, config: SchedulerConfig, partition: str
) -> CountRun:
    """The count driver: the C kernel when built (TIDE_NO_C=1 forces Python), same results."""
    if count_fast.available():
        run = count_fast.simulate(count_fast.count_input(inputs.jobs(), ix), ix, config, partition)
        if run is not None:
            return run
    driver = CountDriver(ix, config, partition)
    driver.run(inputs.jobs())
    results = [driver.results[k] for k in sorted(driver.results)]
    _fill_nodelists(ix.names, driver, results)
    return CountRun(results, driver.samples, driver.account_seconds, driver.events, driver.cycles)


def _fill_nodelists(names: list[str], driver: CountDriver, results: list[JobResult]) -> None:
    from tide.hostlist import compress

    gpn = driver.gpn
    for r in results:
        ids = driver.nodes_of.get(r.job_id)
        if ids:
            r.nodelist = compress(names[i] for i in ids)
            if gpn:  # every node's GPUs: the node list's hostlist, one group
                r.gpu_index = f"{r.nodelist}:{'0' if gpn == 1 else f'0-{gpn - 1}'}"


def _finish(
    inputs: SimInputs,
    policy: str,
    results: list[JobResult] | ResultTable,
    samples: list[Sample] | Timeline,
    capacity: int,
    driver: str,
    account_seconds: Mapping[str, float] | None,
    ledgers: Mapping[int, Ledger] | None = None,
) -> PolicyRun:
    run = PolicyRun(policy, results, samples, capacity, {}, driver)
    run.metrics = compute_metrics(
        run.table, capacity, run.timeline, inputs.target_shares, account_gpu_seconds=account_seconds
    )
    run.metrics["policy"] = policy
    if ledgers:
        from tide.sim import training

        tp = training.Throughput(inputs.mfu, inputs.cluster.gpu_peak_tflops)
        got = training.figures(ledgers.values(), tp)
        if got is not None:
            run.metrics["training"] = got
    return run


def _count_ledgers(inputs: SimInputs, table: ResultTable) -> dict[int, Ledger]:
    """The count driver's training jobs: one attempt each, no checkpoint
    costs, nothing lost (it runs no faults and no preemption). The models come
    from a second pass over the workload; formats that cannot declare one
    (SWF, openb) need none."""
    source = inputs.jobs()
    if getattr(getattr(source, "info", None), "kind", "") in ("swf", "openb"):
        return {}
    from tide.sim import training  # training jobs' figures: not needed by SWF or openb

    models = training.models_of(source)
    if not models:
        return {}
    row = {int(j): k for k, j in enumerate(table.job_id.tolist())}
    types = {n.name: next((g.type for g in n.gpus if g.type), "") for n in inputs.cluster.nodes}
    out = {}
    for jid, (model, duration) in models.items():
        k = row.get(jid)
        if k is None or np.isnan(table.start[k]):
            continue
        run_s = float(table.run[k]) if not np.isnan(table.end[k]) else 0.0
        gpus = int(table.gpus[k])
        first = expand(table.nodelist[k])[:1] if table.nodelist[k] else []
        gpu_type = types.get(first[0], "") if first else ""
        out[jid] = training.Ledger(table.account[k], model, gpus, gpu_type, gpus * run_s,
                          min(run_s, duration))  # fmt: skip
    return out


def faults_for(
    inputs: SimInputs, mtbf: float | None, mttr: float, horizon: float | None, seed: int
) -> list[Fault]:
    if not mtbf:
        return []
    from tide.sim.faults import draw_faults  # drawn only when asked: --mtbf

    end = horizon or 30 * 86400.0
    return draw_faults([n.name for n in inputs.cluster.nodes], end, mtbf, mttr, seed)


def jobs_csv_name(gzip: bool = False) -> str:
    return "jobs.csv.gz" if gzip else "jobs.csv"


def write_policy_outputs(out: Path, run: PolicyRun, gzip: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_jobs_csv(out / jobs_csv_name(gzip), run.table)
    write_metrics_json(out / "metrics.json", run.metrics)


def write_comparison(
    out: Path,
    inputs: SimInputs,
    runs: list[PolicyRun],
    facts: Mapping[str, str] | None = None,
    price: float | None = None,
    mfu: float | None = None,
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = {"scenario": inputs.name, "policies": {r.policy: r.metrics for r in runs}}
    (out / "comparison.json").write_text(metrics_json(data), encoding="utf-8")
    write_report(
        out / "report.html",
        {
            r.policy: RunData(
                results=r.table,
                capacity_gpus=r.capacity_gpus,
                timeline=r.timeline,
                metrics=r.metrics,
                target_shares=inputs.target_shares,
                cluster=inputs.cluster,
            )
            for r in runs
        },
        title=f"tide twin: {inputs.name}",
        scenario=facts or {"scenario": inputs.name},
        price=price,
        mfu=mfu,
    )


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True)
