"""Preemption: which running jobs make room for a pending one. Pure.

Called by the cycle when the main pass could not start a job (and preemption
is configured, docs/preemption.md), or when a job waits for quota its account
lent out (reclaim). The victim set must make room for the WHOLE job with its
topology and binding constraints: candidates' resources are counted as free
on a trial copy of the cycle's usage and the same placement (select_nodes,
then GPU and core choice per node) must succeed there. A SUSPEND victim
frees only its cores (its GPUs and memory stay held, as Slurm documents).

Victim order (Cycle.victim_order, a policy option):
- "lost_work" (tide): the sufficient set that loses the least work
  (GPU-seconds since the victims' last checkpoints; ties: fewer victims,
  lower priority, younger; `set_key`), on every topology. With at most
  EXACT_MAX candidates the search is exact (branch and bound over the sets,
  cheapest first); beyond that it is greedy (cheapest first until the job
  fits, then every victim not needed dropped, most expensive first) over the
  whole cluster and within every node, leaf switch, switch subtree or block
  that could hold the job, and the best of those sets wins.
- "priority" (Slurm's preempt plugins, the `slurm` policy): Slurm's preemptee
  order (Rules.slurm_order: tier or QOS priority, node count, job order; or
  youngest first) until the job fits; only victims on the chosen nodes go.
  Slurm's preemptor also takes no new victims for KillWait + MessageTimeout
  after its last ones (Rules.held_off), and on a backfill tick counts
  completing nodes free and waits for them (Snapshot.completing, main_pass).
Victims already told to go (Snapshot.preempting) are never chosen again;
those told to go for this job count as released. The preemptor is not
started now: the free part of its future place is held for the rest of the
cycle and it starts once the victims' resources are released.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tide.model import AccountTree, Job, JobState, Partition
from tide.sched import preempt_rules as rules_mod
from tide.sched.cycle import PRIORITY_ORDER, Cycle
from tide.sched.eligibility import JobContext
from tide.sched.index import ClusterIndex
from tide.sched.placement import Free, Pick, concrete, select_nodes
from tide.sched.preempt_rules import SUSPEND, Rules
from tide.sched.quota import QuotaLedger
from tide.sched.requeue import requeueable
from tide.sched.state import Usage
from tide.sched.types import (
    Allocation,
    NodeAlloc,
    PendingInfo,
    Preemption,
    Reason,
    Running,
)

MAX_GROUPS = 64  # nodes and switch subtrees searched per preemptor (largest potential first)
EXACT_MAX = 10  # candidates up to which the least-lost-work set is found exactly


@dataclass(slots=True)
class Candidate:
    run: Running
    mode: str
    grace: int
    cost: float  # lost GPU-seconds
    rank: tuple[int, int]  # (tier, priority): lower goes first
    kind: str  # Preemption.kind
    why: str  # the rule that allows it, for the reason text
    order: tuple = ()  # place in Slurm's preemptee list (Rules.slurm_order)

    @property
    def id(self) -> int:
        return self.run.job.id

    def freed(self) -> Allocation:
        """What preempting it releases: everything, or only cores for SUSPEND."""
        a = self.run.alloc
        if self.mode != SUSPEND:
            return a
        return Allocation(a.job_id, tuple(NodeAlloc(n.node, (), n.cores, 0) for n in a.nodes))


def cost_key(c: Candidate) -> tuple:
    return (c.cost, c.rank, -c.run.start, c.id)


def priority_key(c: Candidate) -> tuple:
    return c.order


class Trial:
    """The cycle's free resources (and quota) with some candidates released."""

    def __init__(self, cyc: Cycle, ctx: JobContext, ledger: QuotaLedger | None) -> None:
        self.ix: ClusterIndex = cyc.ix
        self.usage: Usage = cyc.usage.copy()
        self.ctx = ctx
        self.now = cyc.snap.now
        self.ledger = ledger.copy() if ledger is not None else None
        self.loss: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        plan = cyc.resv
        if plan is not None and len(plan.holds):  # advance reservations take their share
            base = plan.base_at(self.now)
            held = plan.free_at(self.now, ctx.shape.time_limit, skip=ctx.reservation)
            self.loss = (base[0] - held.gpus, base[1] - held.cores, base[2] - held.mem)
        self.binding = ctx.shape.enforce_binding or ctx.shape.cpus_per_gpu > 0
        self.pick: Pick | None = None

    def release(self, c: Candidate) -> None:
        self.usage.release(c.freed())
        if self.ledger is not None and c.mode != SUSPEND:
            self.ledger.add(c.run.job, c.run.alloc.gpu_count, -1)

    def restore(self, c: Candidate) -> None:
        self.usage.allocate(c.freed())
        if self.ledger is not None and c.mode != SUSPEND:
            self.ledger.add(c.run.job, c.run.alloc.gpu_count, 1)

    def fits(self, mask: np.ndarray) -> bool:
        """The quota admits the job and the placement finds it a whole place."""
        job = self.ctx.job
        if self.ledger is not None and self.ledger.check(job, self.ctx.shape.gpus) is not None:
            return False
        u = self.usage
        free = Free(u.free_gpus, u.free_cores, u.free_mem)
        if self.loss is not None:
            g, c, m = self.loss
            free = Free(np.maximum(u.free_gpus - g, 0), np.maximum(u.free_cores - c, 0),
                        np.maximum(u.free_mem - m, 0))  # fmt: skip
        limit = self.ctx.max_leaves(self.now)
        for _ in range(4):  # a node that cannot honour binding is dropped, as the cycle does
            pick = select_nodes(self.ix, free, self.ctx.shape, mask, limit)
            if pick is None:
                return False
            bad = [p.node for p in pick.nodes if concrete(
                self.ix, u.gpu_mask, u.core_mask, p, self.binding) is None]  # fmt: skip
            if not bad:
                self.pick = pick
                return True
            mask = mask.copy()
            mask[bad] = False
        return False


def choose(trial: Trial, cands: list[Candidate], mask: np.ndarray, lost_work: bool) -> (
    list[Candidate] | None
):  # fmt: skip
    """A sufficient victim set (greedy, then pruned), or None. Leaves the trial as found."""
    for c in cands:  # cheap test first: even all of them together may not suffice
        trial.release(c)
    enough = trial.fits(mask)
    for c in cands:
        trial.restore(c)
    if not enough:
        return None
    chosen: list[Candidate] = []
    for c in sorted(cands, key=cost_key if lost_work else priority_key):
        if trial.fits(mask):
            break
        trial.release(c)
        chosen.append(c)
    ok = trial.fits(mask)
    if ok and lost_work:
        for c in sorted(chosen, key=cost_key, reverse=True):  # keep only what is needed
            trial.restore(c)
            if trial.fits(mask):
                chosen.remove(c)
            else:
                trial.release(c)
    elif ok:  # Slurm: only the jobs on the nodes it will use
        picked = {p.node for p in trial.pick.nodes} if trial.pick else set()
        for c in list(chosen):
            if not picked & set(c.run.alloc.node_indices):
                trial.restore(c)
                chosen.remove(c)
        ok = trial.fits(mask)
    for c in chosen:
        trial.restore(c)
    return chosen if ok else None


def set_key(victims: list[Candidate]) -> tuple:
    """Among sufficient sets: least lost work, fewer victims, lower priority, younger."""
    return (
        round(sum(c.cost for c in victims), 6),
        len(victims),
        max((c.rank for c in victims), default=(0, 0)),
        -min((c.run.start for c in victims), default=0.0),
        sorted(c.id for c in victims),
    )


def search(trial: Trial, cands: list[Candidate], mask: np.ndarray, lost_work: bool,
           local: bool = True) -> list[Candidate] | None:  # fmt: skip
    """The best victim set; None when no set suffices. Priority order: Slurm's
    greedy choice. Lost work: exact for few candidates, else the best greedy
    set over the whole mask and within every node, leaf, subtree or block
    (cheap victims scattered over the cluster do not win over a set that
    frees one place)."""
    if not lost_work:
        return choose(trial, cands, mask, lost_work)
    if len(cands) <= EXACT_MAX:
        return exact(trial, cands, mask)
    best = choose(trial, cands, mask, lost_work)
    if best is None:
        return None
    for group in _groups(trial, cands, mask):
        inside = [c for c in cands if not local or group[list(c.run.alloc.node_indices)].any()]
        got = exact(trial, inside, group) if len(inside) <= EXACT_MAX else choose(
            trial, inside, group, lost_work)  # fmt: skip
        if got is not None and set_key(got) < set_key(best):
            best = got
    return best


def exact(trial: Trial, cands: list[Candidate], mask: np.ndarray) -> list[Candidate] | None:
    """The sufficient set with the least `set_key` (branch and bound: sets are
    grown cheapest first, a set that fits is not grown further, a set that
    already costs more than the best is dropped; a GPU count short of the
    job's is rejected before the placement is tried). Leaves the trial as found."""
    order = sorted(cands, key=cost_key)
    need = trial.ctx.shape.gpus
    free = int(trial.usage.free_gpus[mask & trial.usage.usable].sum())
    gives = [sum(len(na.gpus) for na in c.freed().nodes if mask[na.node]) for c in order]
    rest = [sum(gives[i:]) for i in range(len(order) + 1)]  # GPUs the tail can still add
    best: list[Candidate] | None = None
    best_key: tuple | None = None
    chosen: list[Candidate] = []

    def grow(i: int, cost: float, gpus: int) -> None:
        nonlocal best, best_key
        if best_key is not None and round(cost, 6) > best_key[0]:
            return
        if gpus >= need and trial.fits(mask):
            key = set_key(chosen)
            if best_key is None or key < best_key:
                best, best_key = list(chosen), key
            return  # a bigger set loses at least as much, with more victims
        if i == len(order) or gpus + rest[i] < need:
            return
        c = order[i]
        trial.release(c)
        chosen.append(c)
        grow(i + 1, cost + c.cost, gpus + gives[i])
        chosen.pop()
        trial.restore(c)
        grow(i + 1, cost, gpus)

    grow(0, 0.0, free)
    return best


def _groups(trial: Trial, cands: list[Candidate], mask: np.ndarray) -> list[np.ndarray]:
    """Node masks of the nodes, leaves and switches (or blocks) that could hold
    the job after preemption, by the GPUs they could offer (most first), at
    most MAX_GROUPS."""
    ix = trial.ix
    potential = np.where(mask, trial.usage.free_gpus, 0).astype(np.int64)
    for c in cands:
        if c.mode != SUSPEND:
            for na in c.run.alloc.nodes:
                if mask[na.node]:
                    potential[na.node] += len(na.gpus)
    need = trial.ctx.shape.gpus
    out: list[tuple[float, int, np.ndarray]] = []
    for node in np.flatnonzero(potential >= need):  # one node: flat clusters too
        one = np.zeros_like(mask)
        one[node] = True
        out.append((-potential[node], len(out), one))
    per_leaf = np.bincount(ix.leaf_of, weights=potential, minlength=ix.n_leaves)
    for leaf in np.flatnonzero(per_leaf >= need) if ix.n_leaves > 1 else ():
        out.append((-per_leaf[leaf], len(out), mask & (ix.leaf_of == leaf)))
    for level in ix.levels:
        per_switch = np.bincount(level, weights=per_leaf)
        for s in np.flatnonzero(per_switch >= need):
            leaves = np.flatnonzero(level == s)
            if len(leaves) < ix.n_leaves:
                out.append((-per_switch[s], len(out), mask & np.isin(ix.leaf_of, leaves)))
    out.sort(key=lambda e: (e[0], e[1]))
    return [m for _, _, m in out[:MAX_GROUPS]]


# --- the cycle's entry points -----------------------------------------------------


def plan_preemption(cyc: Cycle, ctx: JobContext) -> bool:
    """After the main pass could not start ctx.job: choose victims by the
    configured rules and record them. True when the job now waits for
    released resources (new victims, or victims told to go earlier)."""
    snap = cyc.snap
    rules = Rules.of(snap.config)
    if not rules.enabled:
        return False
    job = ctx.job

    def candidates(part: Partition) -> list[Candidate]:
        out = []
        for r, vpart in _preemptable(cyc, rules):
            if rules.may_preempt(snap.accounts, job, part, r.job, vpart):
                c = _candidate(cyc, rules, r, vpart, rules.kind.split("/")[1].split("_")[0])
                if c is not None:
                    c.why = _why(rules, snap.accounts, job, part, r.job, vpart)
                    out.append(c)
        return out

    slurm = cyc.victim_order == PRIORITY_ORDER
    started = job.meta.get(rules_mod.PREEMPT_START)
    held = slurm and rules.held_off(started, snap.now)
    if held:  # the next cycle that may take new victims
        end = float(started) + rules.hold_off  # type: ignore[arg-type]
        d = cyc.decisions
        d.wake = end if d.wake is None else min(d.wake, end)
    # Slurm's backfill thread (a tick with no main pass) places the preemptor with
    # completing nodes counted free, and waits if it picked one (backfill.c: start
    # in a second, reserve; no _start_job, so no victims)
    bf_view = slurm and not snap.main_pass and bool(snap.completing)
    return _plan(cyc, ctx, candidates, None, held=held, stamp=slurm, bf_view=bf_view)


def plan_reclaim(cyc: Cycle, job: Job) -> bool:
    """A job waiting for quota (CohortQuota): take back lent quota from jobs of
    accounts that borrow (Kueue's reclaimWithinCohort), preempt lower-priority
    borrowers to borrow (borrowWithinCohort), or the account's own
    lower-priority jobs (withinClusterQueue), as the account's quota says."""
    ledger: QuotaLedger | None = cyc.limits.quota
    ctx = cyc.contexts.get(job.id)
    info = cyc.decisions.pending.get(job.id)
    if ledger is None or ctx is None or ctx.reason is not None or info is None:
        return False
    if info.reason not in (Reason.COHORT_QUOTA, Reason.QUOTA_BORROWING_LIMIT):
        return False
    key = ledger.key(job)
    if key is None or job.id in ledger.deferred:
        return False
    owner, gpu_type = key
    quota = ledger.tree.accounts[owner]
    within_nominal = not ledger.borrows(owner, gpu_type, ctx.shape.gpus)
    prio = rules_mod.job_priority(job, cyc.snap.accounts)
    rules = Rules.of(cyc.snap.config)
    root = ledger.root(owner)

    def candidates(part: Partition) -> list[Candidate]:
        del part
        out = []
        for r, vpart in _preemptable(cyc, rules):
            vkey = ledger.key(r.job)
            if vkey is None or vkey[1] != gpu_type:
                continue
            lower = rules_mod.job_priority(r.job, cyc.snap.accounts) < prio
            if vkey[0] == owner:
                ok = quota.within_account == "LowerPriority" and lower
                why = f"account {owner}'s lower-priority job (withinClusterQueue)"
            elif ledger.root(vkey[0]) == root and ledger.borrows(vkey[0], gpu_type, 0):
                policy = (
                    quota.reclaim_within_cohort
                    if within_nominal
                    else (
                        "LowerPriority"
                        if quota.borrow_within_cohort == "LowerPriority"
                        else "Never"
                    )
                )
                ok = policy == "Any" or (policy == "LowerPriority" and lower)
                why = (f"account {vkey[0]} borrows {gpu_type or 'GPU'} quota that account "
                       f"{owner} lent")  # fmt: skip
            else:
                continue
            if ok:
                c = _candidate(cyc, rules, r, vpart, "reclaim", ledger.tree.preempt_mode)
                if c is not None:
                    c.why = why
                    out.append(c)
        return out

    return _plan(cyc, ctx, candidates, ledger)


def _plan(cyc: Cycle, ctx: JobContext, candidates: Callable[[Partition], list[Candidate]],
          ledger: QuotaLedger | None, held: bool = False, stamp: bool = False,
          bf_view: bool = False) -> bool:  # fmt: skip
    """Victims for the job, recorded, and its place held. `held`: Slurm's
    preemptor within KillWait + MessageTimeout of its last victims: the set is
    chosen and its place held as ever, but no one is told to go (Slurm's
    select_nodes answers ESLURM_NODES_BUSY and kills no one). `stamp`: the time
    of new victims goes in the job's meta (PREEMPT_START) for that rule.
    `bf_view`: completing nodes count as free; a place that uses one is held,
    no one told to go."""
    snap, job = cyc.snap, ctx.job
    cg = {na.node for a in snap.completing for na in a.nodes} if bf_view else set()
    # released below; the live server keeps a COMPLETING job in `running` (a parked
    # victim in `preempting` too) until it is gone: not released twice, not a victim
    gone = set(snap.completing) if cg else set()
    lost_work = cyc.victim_order != PRIORITY_ORDER
    committed = [r for r in snap.running
                 if snap.preempting.get(r.job.id) == job.id and r.alloc not in gone]  # fmt: skip
    for part, eligible in zip(ctx.parts, ctx.eligible, strict=True):
        trial = Trial(cyc, ctx, ledger)
        for a in snap.completing if cg else ():
            trial.usage.release(a)
        for r in committed:
            if r.job.state is not JobState.SUSPENDED:
                trial.usage.release(r.alloc)
                if trial.ledger is not None:
                    trial.ledger.add(r.job, r.alloc.gpu_count, -1)
        if committed and trial.fits(eligible):
            _hold(cyc, trial)
            return True
        cands = [c for c in candidates(part) if c.run.alloc not in gone]
        if ledger is None:  # only victims on usable nodes can help the placement
            cands = [c for c in cands if eligible[list(c.run.alloc.node_indices)].any()]
        if not cands:
            continue
        local = ledger is None  # quota victims help wherever they run
        victims = search(trial, cands, eligible, lost_work, local)
        if victims is None:
            continue
        for c in victims:
            trial.release(c)
        trial.fits(eligible)
        waits = bool(cg) and trial.pick is not None and any(p.node in cg for p in trial.pick.nodes)
        if not (held or waits):
            _record(cyc, job, victims)
            if stamp and victims:
                cyc.decisions.meta.setdefault(job.id, {})[rules_mod.PREEMPT_START] = snap.now
        _hold(cyc, trial)
        return True
    return False


def _preemptable(cyc: Cycle, rules: Rules) -> list[tuple[Running, Partition | None]]:
    """Running jobs that may be chosen at all: not exempt, not suspended, not
    already told to go (this cycle or before)."""
    snap = cyc.snap
    taken = set(snap.preempting) | {p.victim for p in cyc.decisions.preemptions}
    masks = cyc.ix.partition_masks
    out = []
    for r in snap.running:
        if r.job.id in taken or r.job.state is JobState.SUSPENDED:
            continue
        if rules.is_exempt(snap.accounts, r, snap.now):
            continue
        nodes = list(r.alloc.node_indices)

        def holds(p: Partition, nodes: list[int] = nodes) -> bool:
            mask = masks.get(p.name)
            return mask is not None and bool(mask[nodes].all())

        out.append((r, rules_mod.partition_of(snap.cluster, r.job, holds)))
    return out


def _candidate(cyc: Cycle, rules: Rules, r: Running, vpart: Partition | None, kind: str,
               mode: str | None = None) -> Candidate | None:  # fmt: skip
    snap = cyc.snap
    if mode is None:
        mode = rules.mode(snap.accounts, r.job, vpart)
    elif mode == rules_mod.REQUEUE and not requeueable(
        r.job.request.requeue, vpart, rules.job_requeue
    ):
        mode = rules_mod.CANCEL
    if mode not in (rules_mod.REQUEUE, rules_mod.CANCEL, SUSPEND):
        return None
    return Candidate(
        run=r,
        mode=mode,
        grace=rules.grace(snap.accounts, r.job, vpart, mode),
        cost=rules_mod.lost_gpu_seconds(r, snap.now, snap.last_checkpoint, mode),
        rank=rules_mod.rank(snap.accounts, r, vpart),
        kind=kind,
        why="",
        order=rules.slurm_order(snap.accounts, r, vpart),
    )


def _why(rules: Rules, accounts: AccountTree, job: Job, part: Partition, victim: Job,
         vpart: Partition | None) -> str:  # fmt: skip
    if rules.kind == rules_mod.QOS:
        return f"QOS {job.qos} may preempt QOS {victim.qos}"
    tier = vpart.priority_tier if vpart is not None else 0
    name = vpart.name if vpart is not None else "?"
    return f"partition {part.name} (PriorityTier {part.priority_tier}) over {name} ({tier})"


def _record(cyc: Cycle, job: Job, victims: list[Candidate]) -> None:
    for c in sorted(victims, key=lambda c: c.id):
        text = (f"{c.mode} for job {job.id}: {c.why}; {c.cost:.0f} GPU-seconds "
                f"({c.cost / 3600:.2f} GPU-hours) since its last checkpoint lost"
                + (f"; {c.grace} s grace" if c.grace else ""))  # fmt: skip
        cyc.decisions.preemptions.append(
            Preemption(c.id, job.id, c.mode, c.grace, c.cost, text, c.kind)
        )


def _hold(cyc: Cycle, trial: Trial) -> None:
    """Keep what is free now of the preemptor's future place from the rest of
    this cycle (jobs behind it, backfill): it waits only for the victims."""
    pick = trial.pick
    if pick is None:
        return
    u = cyc.usage
    nodes = []
    for p in pick.nodes:
        na = concrete(cyc.ix, trial.usage.gpu_mask, trial.usage.core_mask, p, trial.binding)
        if na is None:
            continue
        gpus = tuple(g for g in na.gpus if int(u.gpu_mask[na.node]) >> g & 1)
        cores = tuple(c for c in na.cores if u.core_mask[na.node] >> c & 1)
        mem = min(na.mem, int(u.free_mem[na.node]))
        if gpus or cores or mem:
            nodes.append(NodeAlloc(na.node, gpus, cores, mem))
    if nodes:
        u.allocate(Allocation(trial.ctx.job.id, tuple(nodes)))
    times = [p.grace for p in cyc.decisions.preemptions if p.preemptor == trial.ctx.job.id]
    start = cyc.snap.now + max(times, default=0)
    info = cyc.decisions.pending.get(trial.ctx.job.id)
    reason = info.reason if info is not None else Reason.RESOURCES
    place = tuple(p.node for p in pick.nodes)
    cyc.decisions.pending[trial.ctx.job.id] = PendingInfo(reason, start, place)
    if cyc.victim_order == PRIORITY_ORDER:
        cyc.preempt_places[trial.ctx.job.id] = place
