"""The twin's common workload record and the bookkeeping every reader keeps.

Every reader (SWF, tide JSONL, Alibaba openb, the generator) turns its input
into a stream of `SimJob`s in submit order, plus a `WorkloadInfo` that says
where they came from and which records were dropped or changed and why.
Readers stream: a `Workload` holds an open-on-demand generator, never the
whole file, so a 60,000-job log costs the memory of one record at a time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tide.model import JobRequest


class WorkloadError(ValueError):
    """A workload input that cannot be read; the message names the place and the fix."""


@dataclass(frozen=True, slots=True)
class TrainModel:
    """What a training job computes, for tokens/s, step time and MFU in the
    twin (tide.sim.training; docs/twin-metrics.md, "Training in the twin").

    `flops_per_token` is the model's training FLOPs per token (6 x parameters
    for a dense transformer); `tokens_per_step` the global batch in tokens
    (None: no step time); `mfu` the job's own steady MFU (None: its GPU
    type's, tide.sim.training.STEADY_MFU)."""

    flops_per_token: float
    tokens_per_step: float | None = None
    mfu: float | None = None


@dataclass(slots=True)
class SimJob:
    """One job of a replayed or generated workload.

    Times are seconds from the trace start. `duration` is the uninterrupted
    work the job does once started (what it would run without faults or
    limits); `request.time_limit` is the user's estimate, which the
    scheduler trusts for backfill and the engine enforces.
    """

    id: int
    submit: float
    duration: float
    request: JobRequest
    user: str = "user"
    account: str = ""  # "" = the user's default account (the engine resolves it)
    name: str = ""
    checkpoint_interval: float | None = None  # seconds of work between checkpoints
    checkpoint_cost: float = 0.0  # seconds one checkpoint takes
    original: dict[str, Any] = field(default_factory=dict)  # raw source fields
    train: TrainModel | None = None  # a training job's model (tokens, MFU)
    array: tuple[int, int] | None = None  # (array job id, task id) of an array task
    end_state: str = "COMPLETED"  # how the job ends after `duration` (FAILED: exit != 0)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = self.request.name


@dataclass(slots=True)
class WorkloadInfo:
    """What a reader knows about its input. Counts fill in while jobs stream."""

    source: str  # file path or generator preset
    kind: str  # "swf", "jsonl", "openb", "generator"
    max_procs: int | None = None  # machine size in the source's units
    max_nodes: int | None = None
    unix_start_time: int | None = None  # epoch of t=0, when known
    read: int = 0  # job records seen
    kept: int = 0  # SimJobs yielded
    dropped: Counter[str] = field(default_factory=Counter)  # reason -> records
    adjusted: Counter[str] = field(default_factory=Counter)  # rule -> records changed
    notes: list[str] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)  # JSONL "# key: value" header lines

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def adjust(self, rule: str) -> None:
        self.adjusted[rule] += 1

    def summary(self) -> str:
        """One line per fact, for `tide sim` to print."""
        lines = [f"{self.kind} {self.source}: {self.read} records, {self.kept} jobs kept"]
        lines += [f"  dropped {n}: {why}" for why, n in sorted(self.dropped.items())]
        lines += [f"  adjusted {n}: {why}" for why, n in sorted(self.adjusted.items())]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class Workload:
    """An iterable of SimJobs with its `info`. Each iteration re-reads the input,
    so the counts in `info` are reset at the start of every pass."""

    def __init__(self, info: WorkloadInfo, jobs: Callable[[WorkloadInfo], Iterator[SimJob]]):
        self.info = info
        self._jobs = jobs

    def __iter__(self) -> Iterator[SimJob]:
        self.info.read = self.info.kept = 0
        self.info.dropped.clear()
        self.info.adjusted.clear()
        for job in self._jobs(self.info):
            self.info.kept += 1
            yield job

    def jobs(self) -> list[SimJob]:
        """Read everything (small inputs, tests)."""
        return list(self)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
