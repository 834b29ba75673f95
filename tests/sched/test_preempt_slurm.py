"""Slurm 22.05's preemptor rules in the core (the `slurm` policy; docs/preemption.md,
docs/slurm-peer.md "Preemption"), one table per rule:

- victim order: preempt plugin priority (PriorityTier or QOS priority above the node
  count), then job order; youngest first with preempt_youngest_first;
- hold-off: no new victims for KillWait + MessageTimeout after the last ones;
- backfill's view of completing nodes: counted free when placing, a place that uses
  one waits (for a preemptor: takes no victims);
- a preemptor's place is reserved from now in the backfill pass."""

from __future__ import annotations

import pytest

from tide.model import AccountTree, JobState, Partition, Qos
from tide.sched.cycle import PRIORITY_ORDER, CycleMemo, open_cycle, usage_from
from tide.sched.index import build_index
from tide.sched.passes import backfill_pass, priorities
from tide.sched.preempt_rules import PARTITION, PREEMPT_START, QOS, Rules
from tide.sched.scheduler import Scheduler
from tide.sched.types import Allocation, NodeAlloc, Running, Snapshot
from tide.testing.builders import flat_cluster, job, running, snapshot

EIGHT = tuple(range(8))


def tiered(n: int):  # type: ignore[no-untyped-def]
    """n nodes of 8 GPUs; `urgent` (tier 10) may preempt `gpu` (tier 1)."""
    c = flat_cluster(n)
    names = tuple(x.name for x in c.nodes)
    c.partitions = [Partition("gpu", names, default=True, priority_tier=1),
                    Partition("urgent", names, priority_tier=10)]  # fmt: skip
    return c


def gpu_job(c, job_id: int, nodes: list[str], start: float = 0.0, qos: str = "normal",
            time: int = 600) -> Running:  # type: ignore[no-untyped-def]
    j = job(job_id, nodes=len(nodes), gpus_per_node=8, time=time, partitions=("gpu",))
    j.partition, j.qos = "gpu", qos
    return running(j, c, {n: EIGHT for n in nodes}, start)


def urgent(job_id: int, nodes: int, **meta: object):  # type: ignore[no-untyped-def]
    j = job(job_id, nodes=nodes, gpus_per_node=8, time=600, partitions=("urgent",))
    j.meta.update(meta)
    return j


def slurm_snap(c, pending, runs, now: float = 100.0, **cfg: object) -> Snapshot:  # type: ignore[no-untyped-def]
    cfg.setdefault("preempt_type", PARTITION)
    cfg.setdefault("preempt_mode", "CANCEL")
    cfg.setdefault("kill_wait", 2)
    cfg.setdefault("message_timeout", 10)
    return snapshot(c, pending, now=now, running_jobs=runs, **cfg)


def slurm_cycle(snap: Snapshot, completing: tuple[Allocation, ...] = ()):  # type: ignore[no-untyped-def]
    """The `slurm` policy's cycle; completing nodes busy as the drivers keep them."""
    ix = build_index(snap.cluster)
    usage = usage_from(ix, snap)
    for a in completing:
        usage.allocate(a)
    snap.completing = completing
    return Scheduler(ix, victim_order=PRIORITY_ORDER).schedule(snap, usage)


# --- victim order --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "youngest", "expect"),
    [
        # partition_prio: tier << 16 | nodes; small jobs of the lowest tier first, then id
        (PARTITION, False, [13, 12, 14, 11]),
        # preempt/qos: QOS priority instead of the tier (11 and 13: equal, job order)
        (QOS, False, [12, 11, 13, 14]),
        # preempt_youngest_first: start time, latest first, whatever tier or size
        (PARTITION, True, [14, 13, 12, 11]),
    ],
)
def test_slurm_victim_order(kind: str, youngest: bool, expect: list[int]) -> None:
    c = flat_cluster(6)
    low = Partition("low", (), priority_tier=1)
    mid = Partition("mid", (), priority_tier=2)
    tree = AccountTree(qos={"normal": Qos("normal"), "q5": Qos("q5", priority=5),
                            "q1": Qos("q1", priority=1)})  # fmt: skip
    cases = {  # id: (nodes, start, partition, qos)
        11: (["n001"], 10.0, mid, "q5"),
        12: (["n002", "n003"], 20.0, low, "q1"),
        13: (["n004"], 30.0, low, "q5"),
        14: (["n005", "n006"], 40.0, low, "q5"),
    }
    rules = Rules(kind, "CANCEL", None, youngest_first=youngest)
    runs = {k: (gpu_job(c, k, nodes, start, qos), part)
            for k, (nodes, start, part, qos) in cases.items()}  # fmt: skip
    order = sorted(runs, key=lambda k: rules.slurm_order(tree, runs[k][0], runs[k][1]))
    assert order == expect


def test_slurm_policy_takes_the_first_job_of_the_list_not_the_youngest() -> None:
    # four equal 1-node victims: Slurm kills job 11 (the job list's first), tide's
    # old rule took the youngest (14)
    c = tiered(4)
    runs = [gpu_job(c, 10 + k, [f"n00{k}"], start=10.0 * k) for k in range(1, 5)]
    d = slurm_cycle(slurm_snap(c, [urgent(1, 1)], runs))
    assert [p.victim for p in d.preemptions] == [11]
    d = slurm_cycle(slurm_snap(c, [urgent(1, 1)], runs, preempt_youngest_first=True))
    assert [p.victim for p in d.preemptions] == [14]


# --- hold-off: KillWait + MessageTimeout ---------------------------------------------


@pytest.mark.parametrize(
    ("started", "now", "hold", "held"),
    [
        (None, 100.0, 12, False),  # never preempted
        (95.0, 100.0, 12, True),  # 5 s ago
        (88.5, 100.0, 12, True),  # 11.5 s ago
        (88.0, 100.0, 12, False),  # exactly KillWait + MessageTimeout ago: Slurm kills again
        (70.0, 100.0, 40, True),  # the defaults (30 + 10)
        ("soon", 100.0, 12, False),  # not a time: no hold-off
    ],
)
def test_hold_off_rule(started: object, now: float, hold: int, held: bool) -> None:
    assert Rules(PARTITION, "CANCEL", None, hold_off=hold).held_off(started, now) is held


@pytest.mark.parametrize(
    ("age", "victims", "wake"),
    [
        (None, [11], None),  # first victims: killed, the time kept in the job's meta
        (5.0, [], 107.0),  # within 2 + 10 s: waits for them, wakes when it may kill again
        (12.0, [11], None),  # hold-off over: kills again
    ],
)
def test_a_preemptor_takes_no_new_victims_while_held_off(
    age: float | None, victims: list[int], wake: float | None
) -> None:
    # n003 is free, n001 and n002 run gpu jobs; the urgent job needs two nodes.
    c = tiered(3)
    runs = [gpu_job(c, 11, ["n001"]), gpu_job(c, 12, ["n002"])]
    meta = {} if age is None else {PREEMPT_START: 100.0 - age}
    d = slurm_cycle(slurm_snap(c, [urgent(1, 2, **meta)], runs))
    assert [p.victim for p in d.preemptions] == victims
    assert d.meta.get(1, {}).get(PREEMPT_START) == (100.0 if victims else None)
    assert d.wake == wake
    assert d.starts == [] and set(d.pending[1].planned_nodes) == {0, 2}  # its place is held


def test_slurm_conf_hold_off_values_reach_the_rules() -> None:
    snap = slurm_snap(tiered(1), [], [], kill_wait=30, message_timeout=20)
    assert Rules.of(snap.config).hold_off == 50


# --- completing nodes --------------------------------------------------------------


def killed_on(c, node: str) -> Allocation:  # type: ignore[no-untyped-def]
    """What a job killed on `node` still holds while it completes."""
    return Allocation(99, (NodeAlloc([x.name for x in c.nodes].index(node), EIGHT, (0,), 0),))


@pytest.mark.parametrize(
    ("main_pass", "victims"),
    [
        # the main scheduler leaves completing nodes out: the job needs both victims
        (True, [11, 12]),
        # the backfill thread counts n001 free, picks it and waits: no victims
        (False, []),
    ],
)
def test_backfill_thread_does_not_preempt_for_a_place_on_a_completing_node(
    main_pass: bool, victims: list[int]
) -> None:
    c = tiered(3)
    runs = [gpu_job(c, 11, ["n002"]), gpu_job(c, 12, ["n003"])]
    snap = slurm_snap(c, [urgent(1, 2)], runs)
    snap.main_pass = main_pass
    d = slurm_cycle(snap, completing=(killed_on(c, "n001"),))
    assert sorted(p.victim for p in d.preemptions) == victims


@pytest.mark.parametrize(
    ("completing", "started_on"),
    [
        ((), [0]),  # both nodes free: it takes n001
        # n001 completes: Slurm's backfill picks it (counted free, lowest), so the job
        # waits a second instead of taking n002
        (("n001",), None),
    ],
)
def test_backfill_waits_for_a_completing_node_it_picked(
    completing: tuple[str, ...], started_on: list[int] | None
) -> None:
    c = tiered(2)
    cg = tuple(killed_on(c, n) for n in completing)
    small = job(5, nodes=1, gpus_per_node=8, time=600, partitions=("gpu",))
    snap = slurm_snap(c, [small], [], will_run_batches=True)
    snap.completing = cg
    ix = build_index(c)
    usage = usage_from(ix, snap)
    for a in cg:
        usage.allocate(a)
    cyc = open_cycle(snap, ix, usage, CycleMemo(), PRIORITY_ORDER)
    backfill_pass(cyc, priorities(cyc), easy=False)  # the backfill thread alone
    got = [[n.node for n in s.alloc.nodes] for s in cyc.decisions.starts]
    assert got == ([] if started_on is None else [started_on])


def test_backfill_reserves_a_preemptors_place_from_now() -> None:
    # Held off, the urgent job keeps its place (n001 of victim 11, n003 free) from now
    # in the backfill pass, as Slurm's backfill reserves a preemptor it cannot start,
    # instead of a later place when the running jobs' limits end.
    c = tiered(3)
    runs = [gpu_job(c, 11, ["n001"], time=600), gpu_job(c, 12, ["n002"], time=60)]
    d = slurm_cycle(slurm_snap(c, [urgent(1, 2, **{PREEMPT_START: 95.0})], runs))
    info = d.pending[1]
    assert (info.planned_start, set(info.planned_nodes)) == (100.0, {0, 2})


# --- completing jobs as each driver gives them ----------------------------------------
# The twin: a killed job leaves `running`; its nodes are busy in the usage and listed in
# Snapshot.completing. The live server: a COMPLETING job stays in `running` (a parked
# REQUEUE victim also in `preempting`) until the executor reports it gone, and the
# same allocation is listed in Snapshot.completing. The core must decide alike.


def _completing_as(form: str, c, pending, runs, killed: Allocation) -> Snapshot:  # type: ignore[no-untyped-def]
    snap = slurm_snap(c, pending, runs)
    if form != "twin":
        j = job(killed.job_id, nodes=1, gpus=killed.gpu_count, time=600, partitions=("gpu",))
        j.partition, j.state = "gpu", JobState.COMPLETING
        snap.running = [*runs, Running(j, killed, 0.0, snap.now)]
        if form == "live parked":  # a REQUEUE victim of job 1, killed, not gone yet
            snap.preempting = {killed.job_id: 1}
    return snap


def _live_cycle(snap: Snapshot, killed: Allocation, form: str):  # type: ignore[no-untyped-def]
    if form == "twin":
        return slurm_cycle(snap, completing=(killed,))
    snap.completing = (killed,)  # busy already: it is in `running`
    return Scheduler(build_index(snap.cluster), victim_order=PRIORITY_ORDER).schedule(snap, None)


FORMS = ["twin", "live parked", "live cancelled"]


@pytest.mark.parametrize("form", FORMS)
def test_a_completing_job_in_running_waits_as_the_twins(form: str) -> None:
    c = tiered(3)
    runs = [gpu_job(c, 11, ["n002"]), gpu_job(c, 12, ["n003"])]
    snap = _completing_as(form, c, [urgent(1, 1)], runs, killed_on(c, "n001"))
    snap.main_pass = False
    d = _live_cycle(snap, killed_on(c, "n001"), form)
    # n001 counted free, picked, waited for: no victims, n001 held from now (before
    # the core counted it once, the live cancelled form took victim 11 here)
    assert d.preemptions == [] and d.starts == []
    assert d.pending[1].planned_nodes == (0,)


@pytest.mark.parametrize("form", FORMS)
def test_a_completing_job_in_running_is_counted_free_once(form: str) -> None:
    # Job 99 completes on half of n001; job 13 (tier 10, not preemptable) holds the
    # other half. Counted free once, n001 offers 4 GPUs: the 8-GPU preemptor takes
    # victim 11 on n002. Released twice (as a committed victim or a candidate too),
    # the trial's counts and masks disagree and a restore leaves n001 wrongly busy.
    c = tiered(2)
    half = Allocation(99, (NodeAlloc(0, (0, 1, 2, 3), (1,), 0),))
    other = job(13, nodes=1, gpus=4, time=600, partitions=("urgent",))
    other.partition = "urgent"
    runs = [gpu_job(c, 11, ["n002"]), running(other, c, {"n001": (4, 5, 6, 7)}, 0.0)]
    snap = _completing_as(form, c, [urgent(1, 1)], runs, half)
    snap.main_pass = False
    d = _live_cycle(snap, half, form)
    assert [p.victim for p in d.preemptions] == [11]
    assert d.pending[1].planned_nodes == (1,)
