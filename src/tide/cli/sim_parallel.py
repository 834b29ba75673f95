"""`tide sim compare` runs its policies side by side in worker processes.

Each replay is independent (its own copy of the cluster, the same inputs and
faults), single-threaded and CPU-bound, so on a machine with two cores five
policies take about the time of the longest two instead of the sum. Workers are
forked: they inherit the loaded inputs (the workload is a closure, which would
not pickle) and send back the finished PolicyRun. Their progress comes back
through a queue, at most twice a second per policy.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from tide.model.sched_config import SchedulerConfig
from tide.sim.events import Fault
from tide.sim.runner import PolicyRun, SimInputs, run_policy, workload_info
from tide.sim.workload.base import WorkloadInfo

REPORT_EVERY = 0.5  # seconds between a worker's progress messages
# report(policy, virtual time, jobs ended, jobs submitted); submitted < 0: the run ended
Report = Callable[[str, float, int, int], None]
_worker: dict[str, Any] = {}  # what a forked worker inherited (set once, before it runs)


def default_workers(policies: int) -> int:
    """One worker per core this process may use, at most one per policy."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(policies, cores or 1))


def run_policies(
    inputs: SimInputs,
    names: list[str],
    config: SchedulerConfig,
    faults: list[Fault],
    report: Report,
    workers: int,
) -> list[PolicyRun]:
    """Every policy's run, in the order of `names`, `workers` at a time."""
    if workers <= 1 or len(names) <= 1 or "fork" not in mp.get_all_start_methods():
        return [_in_process(inputs, n, config, faults, report) for n in names]
    ctx = mp.get_context("fork")
    messages: Any = ctx.Queue()
    init = (inputs, config, faults, messages)
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=init) as pool:
        futures = {pool.submit(_one, n): n for n in names}  # forks every worker now
        runs = _collect(futures, messages, report)
    mine, theirs = workload_info(inputs), runs[names[0]][1]
    if mine is not None and theirs is not None:  # the counts a pass made in a worker
        mine.read, mine.kept = theirs.read, theirs.kept
        mine.dropped, mine.adjusted, mine.notes = theirs.dropped, theirs.adjusted, theirs.notes
    return [runs[n][0] for n in names]


def _in_process(
    inputs: SimInputs, name: str, config: SchedulerConfig, faults: list[Fault], report: Report
) -> PolicyRun:
    run = run_policy(inputs, name, config, faults, progress=lambda t, d, s: report(name, t, d, s))
    report(name, 0.0, 0, -1)
    return run


Done = tuple[PolicyRun, WorkloadInfo | None]


def _collect(futures: dict[Future[Done], str], messages: Any, report: Report) -> dict[str, Done]:
    runs: dict[str, Done] = {}
    pending = set(futures)
    while pending:
        _drain(messages, report)
        done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
        for f in done:
            name = futures[f]
            runs[name] = f.result()  # a replay's ValueError surfaces here
            _drain(messages, report)
            report(name, 0.0, 0, -1)
    return runs


def _drain(messages: Any, report: Report) -> None:
    while True:
        try:
            name, t, done, submitted = messages.get_nowait()
        except queue.Empty:
            return
        report(name, t, done, submitted)


def _init(inputs: SimInputs, config: SchedulerConfig, faults: list[Fault], messages: Any) -> None:
    _worker.update(inputs=inputs, config=config, faults=faults, messages=messages)


def _one(name: str) -> Done:
    messages = _worker["messages"]
    last = [0.0]

    def progress(t: float, done: int, submitted: int) -> None:
        now = time.monotonic()
        if now - last[0] >= REPORT_EVERY:
            last[0] = now
            messages.put((name, t, done, submitted))

    w = _worker
    run = run_policy(w["inputs"], name, w["config"], w["faults"], progress=progress)
    return run, workload_info(w["inputs"])
