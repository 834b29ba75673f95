"""The limits' shortcut (Snapshot.shortcuts): where no association or QOS
sets a limit the counters are compared with (tide.sched.limits.unlimited),
LimitChecker.reason checks array task limits only and counts the running
groups on first read. Random trees with any limit field set or not (those
the counters feed and the others: MaxWall, MaxTRES per job, GrpSubmitJobs),
random running groups, starts and jobs: whenever `unlimited` says so, every
reason is the full check's, and the counters read the same."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model import Account, AccountTree, Job, JobRequest, Limits, Qos, UserAssoc
from tide.model.job import ArraySpec
from tide.sched.limits import GPU, LimitChecker, no_static_limits, unlimited
from tide.sched.shape import shape_of

FIELDS = {
    "grp_tres": st.sampled_from([{}, {GPU: 4}, {"cpu": 8}]),
    "grp_jobs": st.sampled_from([None, 2]),
    "grp_submit_jobs": st.sampled_from([None, 3]),
    "max_jobs": st.sampled_from([None, 1]),
    "max_tres_per_job": st.sampled_from([{}, {GPU: 2}]),
    "max_tres_per_user": st.sampled_from([{}, {GPU: 3}, {"cpu": 1}]),
    "max_wall": st.sampled_from([None, 60]),
    "max_jobs_per_user": st.sampled_from([None, 1]),
}


def limits() -> st.SearchStrategy[Limits]:
    """Mostly no limit at all, else one or two fields set."""
    some = st.dictionaries(st.sampled_from(list(FIELDS)), st.none(), max_size=2).flatmap(
        lambda keys: st.fixed_dictionaries({k: FIELDS[k] for k in keys})
    )
    return st.one_of(st.just(Limits()), some.map(lambda kw: Limits(**kw)))


@st.composite
def trees(draw: st.DrawFn) -> AccountTree:
    return AccountTree(
        accounts={
            "a": Account("a", limits=draw(limits())),
            "b": Account("b", parent="a", limits=draw(limits())),
        },
        users=[UserAssoc("u", "b", limits=draw(limits())), UserAssoc("v", "a")],
        qos={"normal": Qos("normal", limits=draw(limits())), "high": Qos("high")},
    )


ACCOUNTS, USERS, QOS = ["a", "b", "nosuch"], ["u", "v"], ["normal", "high", "other"]
keys = st.tuples(
    st.sampled_from(ACCOUNTS),
    st.sampled_from(USERS),
    st.sampled_from(QOS),
    st.sampled_from([None, 7]),
)
groups = st.dictionaries(keys, st.tuples(st.integers(1, 3), st.integers(0, 8)), max_size=4)


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    array = draw(st.sampled_from([None, 7]))
    spec = ArraySpec(task_ids=(0, 1, 2), max_running=draw(st.sampled_from([None, 1, 2])))
    req = JobRequest(array=spec if array is not None else None)
    return Job(1, req, user=draw(st.sampled_from(USERS)), account=draw(st.sampled_from(ACCOUNTS)),
               qos=draw(st.sampled_from(QOS)), array_job_id=array)  # fmt: skip


@settings(max_examples=300)
@given(
    trees(), groups, st.lists(jobs(), max_size=3), st.lists(st.tuples(jobs(), st.integers(0, 8)))
)
def test_unlimited_checks_what_the_full_check_finds(
    tree: AccountTree, running: dict, starts: list[Job], queries: list[tuple[Job, int]]
) -> None:
    full, lazy = LimitChecker(tree), LimitChecker(tree, unlimited=unlimited(tree))
    for checker in (full, lazy):
        checker.add_groups({k: list(v) for k, v in running.items()})
        for job in starts:
            checker.add(job, 2)
    for job, gpus in queries:
        assert lazy.reason(job, gpus) == full.reason(job, gpus)
    assert _nonzero(lazy) == _nonzero(full)  # (a read of a defaultdict leaves a 0)


def _nonzero(checker: LimitChecker) -> dict[str, dict]:
    c = checker.count
    return {f: {k: v for k, v in getattr(c, f).items() if v} for f in c.__dataclass_fields__}


def test_each_counted_limit_makes_the_tree_limited() -> None:
    """The fields the counters feed, on a user, an account or a QOS."""
    assert unlimited(AccountTree(accounts={"a": Account("a")}, users=[UserAssoc("u", "a")]))
    counted = {
        "user": [Limits(max_jobs=1), Limits(grp_tres={GPU: 1})],
        "account": [Limits(grp_tres={GPU: 1}), Limits(grp_jobs=1), Limits(max_jobs=1)],
        "qos": [Limits(grp_tres={GPU: 1}), Limits(grp_jobs=1), Limits(max_tres_per_user={GPU: 1}),
                Limits(max_jobs_per_user=1)],
    }  # fmt: skip
    for where, cases in counted.items():
        for lim in cases:
            tree = AccountTree(
                accounts={"a": Account("a", limits=lim if where == "account" else Limits())},
                users=[UserAssoc("u", "a", limits=lim if where == "user" else Limits())],
                qos={"normal": Qos("normal", limits=lim if where == "qos" else Limits())},
            )
            assert not unlimited(tree), (where, lim)
    # limits that no running count feeds leave it unlimited
    other = Limits(max_wall=60, max_tres_per_job={GPU: 1}, grp_submit_jobs=2, grp_tres={"cpu": 4})
    assert unlimited(AccountTree(accounts={"a": Account("a", limits=other)}))


@settings(max_examples=300)
@given(
    trees(), st.lists(st.tuples(jobs(), st.sampled_from([0, 1, 3]), st.sampled_from([30, 3600])))
)
def test_no_static_limits_means_no_static_reason(tree: AccountTree, queries: list[tuple]) -> None:
    full, short = LimitChecker(tree), LimitChecker(tree, no_static=no_static_limits(tree))
    for job, gpus, limit in queries:
        shape = shape_of(JobRequest(gpus_per_node=gpus or None), limit)
        assert short.static_reason(job, shape) == full.static_reason(job, shape)
