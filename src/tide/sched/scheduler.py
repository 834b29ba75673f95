"""The Slurm cycle: the phases of tide.sched.cycle composed as Slurm runs them.

open -> priorities -> main pass (with preemption and the borrow pass) ->
backfill (when the driver asks: every bf_interval; EASY, conservative or
none as configured). `Scheduler` keeps the cluster index and the cycle memo
between cycles; `schedule` is one cycle on a fresh index.
"""

from __future__ import annotations

from tide.model.sched_config import BackfillMode
from tide.sched.cycle import LOST_WORK, VICTIM_ORDERS, CycleMemo, close_cycle, open_cycle
from tide.sched.index import ClusterIndex, build_index
from tide.sched.passes import backfill_pass, main_pass, priorities
from tide.sched.state import Usage
from tide.sched.types import Decisions, Snapshot


class Scheduler:
    """Keeps the cluster index and the cycle memo between cycles."""

    def __init__(self, cluster_index: ClusterIndex, victim_order: str = LOST_WORK) -> None:
        if victim_order not in VICTIM_ORDERS:
            raise ValueError(
                f"victim_order {victim_order!r}: choose one of {', '.join(VICTIM_ORDERS)}"
            )
        self.ix = cluster_index
        self.victim_order = victim_order  # docs/preemption.md
        self.memo = CycleMemo()

    def schedule(self, snap: Snapshot, usage: Usage | None = None) -> Decisions:
        cyc = open_cycle(snap, self.ix, usage, self.memo, self.victim_order)
        order = priorities(cyc)
        main_pass(cyc, order)
        mode = snap.config.backfill
        if snap.backfill and mode is not BackfillMode.NONE:
            backfill_pass(cyc, order, easy=mode is BackfillMode.EASY)
        return close_cycle(cyc)


def schedule(snap: Snapshot) -> Decisions:
    """One scheduling cycle on a snapshot (builds the cluster index each call;
    drivers that cycle often keep a Scheduler instead)."""
    return Scheduler(build_index(snap.cluster)).schedule(snap)
