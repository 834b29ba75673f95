"""Policies: named strategies that turn a snapshot into decisions.

Every policy is pure (no clock, no I/O) and is driven the same way by the
live controller and by the twin: `schedule(snapshot, usage)` where `usage`
is the driver's incrementally kept view of free resources (the policy must
not modify it). What a driver must do for a policy beyond that is declared
in its `capabilities`, never guessed from its name or attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from tide.sched.state import Usage
from tide.sched.types import Decisions, Snapshot

PreemptionKind = Literal["config", "own", "none"]


@dataclass(slots=True, frozen=True)
class Capabilities:
    """What a policy needs from its driver.

    - predictions: it plans with run-time predictions: the driver keeps a
      tide.sched.predict.RuntimeModel of kind `predictor` ("learned" or
      "tsafrir"), predicts each job at its submission, trains the model at
      each job's end, and fills Snapshot.predicted with the prediction of
      every pending and running job (the policy applies the corrections).
    - preemption: who decides which pending jobs may preempt. "config": the
      cluster's PreemptType rules (a job under preempt/qos preempts only if
      its QOS lists others); "own": the policy's own rules (queues, quotas),
      so any pending job may; "none": the policy never preempts.
    - coalesce_ties: it looks at the cluster in sessions: the twin runs one
      cycle after all the events at one time, not one per event.
    - time_invariant: between events its decisions change only when
      priorities are recalculated (PriorityCalcPeriod): a pass whose inputs
      did not change since one that decided nothing decides nothing, so the
      twin may skip it (docs/twin.md); nor does a pass with no GPU free
      decide anything but reasons while every pending job waits for GPUs
      alone (tide.sched.futile).
    - idle_quiet: a cycle with no pending job decides nothing and changes
      nothing a later cycle reads (its memo follows the driver's deltas,
      which carry what such a cycle would have read): the twin may leave the
      cycle out.
    """

    predictions: bool = False
    predictor: str = "learned"
    preemption: PreemptionKind = "config"
    coalesce_ties: bool = False
    time_invariant: bool = False
    idle_quiet: bool = False


class Policy(Protocol):
    name: str
    capabilities: Capabilities

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions: ...
