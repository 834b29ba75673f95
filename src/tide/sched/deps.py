"""Job dependencies (--dependency), evaluated as Slurm documents them.

after:ID      ID has started (or was cancelled)
afterany:ID   ID has ended, in any state
afterok:ID    ID ended COMPLETED (any other end: never satisfied)
afternotok:ID ID ended in a state other than COMPLETED (COMPLETED: never)
aftercorr:ID  the task of array ID with the same task id ended COMPLETED
singleton     no running job of the same user and name
Items joined by ',' must all hold, by '?' any one. An ID that names an
array ("123") means every task of it. An ID tide has never seen is taken as
ended successfully (Slurm purges old records); the server rejects unknown
IDs at submission.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tide.model import DependencyItem, DependencyType, Job


class DepState(Enum):
    SATISFIED = 0
    WAITING = 1
    NEVER = 2


@dataclass(slots=True)
class DepWorld:
    """What dependencies look at, built once per cycle."""

    finished: dict[str, str]  # display id -> final state
    started: set[str]  # display ids running or finished
    known: set[str]  # every display id tide knows (pending, running, finished)
    arrays: dict[str, list[str]]  # array job id -> its tasks' display ids
    running_names: set[tuple[str, str]]  # (user, name) of running jobs


def evaluate(job: Job, world: DepWorld) -> DepState:
    dep = job.request.dependency
    if dep is None or not dep.items:
        return DepState.SATISFIED
    states = [_item(item, job, world) for item in dep.items]
    if dep.any_of:
        if DepState.SATISFIED in states:
            return DepState.SATISFIED
        return DepState.NEVER if all(s is DepState.NEVER for s in states) else DepState.WAITING
    if DepState.NEVER in states:
        return DepState.NEVER
    return DepState.WAITING if DepState.WAITING in states else DepState.SATISFIED


def _item(item: DependencyItem, job: Job, world: DepWorld) -> DepState:
    if item.type is DependencyType.SINGLETON:
        busy = (job.user, job.request.name) in world.running_names
        return DepState.WAITING if busy else DepState.SATISFIED
    results = [_one(item.type, jid, job, world) for jid in _expand(item.job_ids, job, item, world)]
    if DepState.NEVER in results:
        return DepState.NEVER
    return DepState.WAITING if DepState.WAITING in results else DepState.SATISFIED


def _expand(ids: tuple[str, ...], job: Job, item: DependencyItem, world: DepWorld) -> list[str]:
    out: list[str] = []
    for jid in ids:
        if item.type is DependencyType.AFTERCORR and job.array_task_id is not None:
            out.append(f"{jid}_{job.array_task_id}")
        elif jid in world.arrays:
            out.extend(world.arrays[jid])
        else:
            out.append(jid)
    return out


def _one(kind: DependencyType, jid: str, job: Job, world: DepWorld) -> DepState:
    if jid not in world.known:
        return DepState.SATISFIED
    end = world.finished.get(jid)
    if kind is DependencyType.AFTER:
        ok = jid in world.started or end == "CANCELLED"
        return DepState.SATISFIED if ok else DepState.WAITING
    if end is None:
        return DepState.WAITING
    if kind is DependencyType.AFTERANY:
        return DepState.SATISFIED
    completed = end == "COMPLETED"
    if kind in (DependencyType.AFTEROK, DependencyType.AFTERCORR):
        return DepState.SATISFIED if completed else DepState.NEVER
    return DepState.NEVER if completed else DepState.SATISFIED  # afternotok
