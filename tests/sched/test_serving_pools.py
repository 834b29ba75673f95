"""The pooled policy (tide.sched.serving.pools): replicas and batch jobs on one
core, GPU lending within the budget, reclaim by preemption with the bounded
grace and the least lost work, node lending; hypothesis invariants."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model import Partition
from tide.model.service import Pool, PoolConfig
from tide.sched.cycle import usage_from
from tide.sched.index import build_index
from tide.sched.serving.pools import PooledScheduler
from tide.testing.builders import flat_cluster, job, running, snapshot


def pooled_cluster(serving: int = 2, training: int = 2):
    c = flat_cluster(serving + training)
    names = [n.name for n in c.nodes]
    c.partitions = [
        Partition("training", tuple(names[serving:]), default=True),
        Partition("serving", tuple(names[:serving]), priority_tier=10),
        Partition("lend", tuple(names[:serving])),
    ]
    return c


def pool(**kw: object) -> Pool:
    base = dict(lend_after=0.0, keep_idle=2, reclaim_objective=60.0, startup=20.0, margin=5.0)
    base.update(kw)
    return Pool("serving", "serving", "lend", **base)  # type: ignore[arg-type]


def replica(job_id: int, gpus: int, submit: float = 0.0):
    return job(job_id, gpus_per_node=gpus, time=None, submit=submit, partitions=("serving",))


def trainer(job_id: int, gpus: int = 8, nodes: int = 1, lend: bool = True):
    parts = ("training", "lend") if lend else ("training",)
    return job(job_id, nodes=nodes, gpus_per_node=gpus, time=36000, partitions=parts)


def placed(cluster, j, where: dict[str, tuple[int, ...]], start: float = 0.0):
    return running(j, cluster, where, start, cores=0)


def busy_training(c, first_id: int = 10):
    """The two training nodes full of work that may not borrow."""
    return [
        placed(c, trainer(first_id + i, lend=False), {f"n00{3 + i}": tuple(range(8))})
        for i in range(2)
    ]


def test_replicas_and_batch_start_in_one_pass_each_in_its_place():
    c = pooled_cluster()
    ps = PooledScheduler(build_index(c), PoolConfig((pool(),)))
    snap = snapshot(c, [replica(1, 4), trainer(2), trainer(3, lend=False)], now=0.0)
    d = ps.schedule(snap)
    where = {
        s.job_id: (s.partition, {c.nodes[n.node].name for n in s.alloc.nodes}) for s in d.starts
    }
    assert where[1][0] == "serving"
    assert where[2][0] == "training" and where[3][0] == "training"


def test_borrowers_get_idle_serving_gpus_up_to_the_budget():
    c = pooled_cluster()
    full = busy_training(c)
    rep = placed(c, replica(9, 4), {"n001": (0, 1, 2, 3)})
    ps = PooledScheduler(build_index(c), PoolConfig((pool(),)))
    # budget = 16 - 4 (replica) - 2 (keep idle) = 10: one 8-GPU borrower fits, not a second
    snap = snapshot(c, [trainer(1), trainer(2)], now=100.0, running_jobs=[*full, rep])
    d = ps.schedule(snap)
    assert [s.job_id for s in d.starts] == [1]
    assert d.starts[0].partition == "lend"
    assert ps.status["serving"].budget == 10
    # the 8 GPUs went to the emptier node, away from the replica
    assert {c.nodes[n.node].name for n in d.starts[0].alloc.nodes} == {"n002"}


def test_hysteresis_lends_nothing_before_the_window():
    c = pooled_cluster()
    full = busy_training(c)
    ps = PooledScheduler(build_index(c), PoolConfig((pool(lend_after=600.0),)))
    snap = snapshot(c, [trainer(1)], now=0.0, running_jobs=full)
    assert ps.schedule(snap).starts == []
    assert ps.schedule(replace(snap, now=599.0)).starts == []
    assert [s.job_id for s in ps.schedule(replace(snap, now=600.0)).starts] == [1]


def test_a_replica_reclaims_the_borrower_losing_least_work_with_bounded_grace():
    c = pooled_cluster()
    full = busy_training(c)
    b1 = placed(c, trainer(21), {"n001": tuple(range(8))}, start=0.0)
    b2 = placed(c, trainer(22), {"n002": tuple(range(8))}, start=0.0)
    ps = PooledScheduler(build_index(c), PoolConfig((pool(),)))
    snap = snapshot(
        c, [replica(1, 8, submit=1000.0)], now=1000.0, running_jobs=[*full, b1, b2],
        preempt_mode="REQUEUE",
    )  # fmt: skip
    snap.last_checkpoint = {21: 100.0, 22: 900.0}  # 22 checkpointed recently: it loses least
    d = ps.schedule(snap)
    assert d.starts == []
    (p,) = d.preemptions
    assert (p.victim, p.preemptor, p.mode) == (22, 1, "REQUEUE")
    assert p.grace == 60 - 20 - 5  # objective - startup - margin
    assert p.lost_gpu_seconds == 8 * 100.0
    # non-borrowers are never victims
    assert not {q.victim for q in d.preemptions} & {10, 11}


def test_grace_shrinks_with_the_time_the_decision_already_waited():
    c = pooled_cluster(serving=1, training=1)
    b = placed(c, trainer(21), {"n001": tuple(range(8))})
    ps = PooledScheduler(build_index(c), PoolConfig((pool(keep_idle=0),)))
    snap = snapshot(c, [replica(1, 8, submit=980.0)], now=1000.0, running_jobs=[b])
    (p,) = ps.schedule(snap).preemptions
    assert p.grace == 15


def test_pools_that_do_not_lend_keep_their_gpus():
    c = pooled_cluster()
    full = busy_training(c)
    split = Pool("serving", "serving", "", lend_after=0.0)
    ps = PooledScheduler(build_index(c), PoolConfig((split,)))
    d = ps.schedule(snapshot(c, [trainer(1)], now=0.0, running_jobs=full))
    assert d.starts == []


def test_node_lending_uses_whole_lent_nodes_and_never_preempts():
    c = pooled_cluster()
    full = busy_training(c)
    node_pool = pool(mode="node", keep_idle=0, switch_gap=0.0)
    ps = PooledScheduler(build_index(c), PoolConfig((node_pool,)))
    rep = placed(c, replica(9, 2), {"n001": (0, 1)})
    d = ps.schedule(snapshot(c, [trainer(1, gpus=4), trainer(2, gpus=4)], now=0.0,
                             running_jobs=[*full, rep]))  # fmt: skip
    # n001 carries a replica (SERVING); n002 is empty and lent whole: both 4-GPU jobs go there
    assert sorted(s.job_id for s in d.starts) == [1, 2]
    assert {c.nodes[n.node].name for s in d.starts for n in s.alloc.nodes} == {"n002"}
    borrowers = [placed(c, trainer(1, gpus=4), {"n002": (0, 1, 2, 3)}),
                 placed(c, trainer(2, gpus=4), {"n002": (4, 5, 6, 7)})]  # fmt: skip
    d = ps.schedule(snapshot(c, [replica(3, 8, submit=10.0)], now=10.0,
                             running_jobs=[*full, rep, *borrowers]))  # fmt: skip
    assert d.preemptions == [] and d.starts == []
    assert ps.status["serving"].sides == {"SERVING": 1, "DRAINING": 1}


def test_decisions_of_both_passes_are_merged():
    c = pooled_cluster()
    ps = PooledScheduler(build_index(c), PoolConfig((pool(),)))
    d = ps.schedule(snapshot(c, [replica(1, 8), replica(2, 8), replica(3, 8), trainer(4)]))
    assert sorted(s.job_id for s in d.starts) == [1, 2, 4]
    assert 3 in d.pending


# --- properties -------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    reps=st.lists(st.sampled_from([1, 2, 4, 8]), max_size=5),
    borrowed=st.lists(st.sampled_from([2, 4, 8]), max_size=3),
    new=st.lists(st.sampled_from([1, 2, 4, 8]), max_size=4),
    keep=st.integers(0, 8),
)
def test_no_gpu_twice_budget_holds_and_only_borrowers_are_reclaimed(reps, borrowed, new, keep):
    c = pooled_cluster()
    ix = build_index(c)
    runs = busy_training(c, first_id=100)
    usage = usage_from(ix, snapshot(c, [], running_jobs=runs))
    # place some borrowed work on the pool's nodes, as far as it fits
    jid = 200
    for g in borrowed:
        for node in ("n001", "n002"):
            i = ix.pos[node]
            if usage.free_gpus[i] >= g:
                free = [b for b in range(8) if int(usage.gpu_mask[i]) >> b & 1][:g]
                r = placed(c, trainer(jid, gpus=g), {node: tuple(free)})
                usage.allocate(r.alloc)
                runs.append(r)
                jid += 1
                break
    ps = PooledScheduler(ix, PoolConfig((pool(keep_idle=keep),)))
    pending = [replica(i + 1, g) for i, g in enumerate(reps)]
    pending += [trainer(50 + i, gpus=g) for i, g in enumerate(new)]
    snap = snapshot(c, pending, now=50.0, running_jobs=runs)
    d = ps.schedule(snap)
    for s in d.starts:  # no GPU twice: every start fits on top of the others
        usage.allocate(s.alloc)
    st_ = ps.status["serving"]
    pool_nodes = {ix.pos["n001"], ix.pos["n002"]}
    new_borrowed = sum(
        len(n.gpus) for s in d.starts if s.partition == "lend" for n in s.alloc.nodes
    )
    assert new_borrowed <= max(0, st_.budget - st_.borrowed_gpus)
    borrower_ids = {r.job.id for r in runs if "lend" in r.job.request.partitions}
    assert {p.victim for p in d.preemptions} <= borrower_ids
    for s in d.starts:
        if s.partition == "serving":
            assert {n.node for n in s.alloc.nodes} <= pool_nodes
