"""The store on SQLite and PostgreSQL: migrations, jobs, guards, accounts, tokens."""

from __future__ import annotations

from sqlalchemy import inspect

from tide.model import (
    Account,
    AccountTree,
    ArraySpec,
    Dependency,
    DependencyItem,
    DependencyType,
    JobRequest,
    Limits,
    Qos,
    SignalSpec,
    UserAssoc,
)
from tide.sched.types import Allocation, NodeAlloc
from tide.store import accounting, accounts, codec, db, tokens
from tide.store import jobs as jobrepo


def _job(job_id: int, state: str = "PENDING", **kw: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": job_id,
        "name": "j",
        "user": "alice",
        "account": "physics",
        "state": state,
        "request": codec.request_json(JobRequest(name="j")),
        "submit_time": 100.0 + job_id,
    }
    row.update(kw)
    return row


def test_migrate_creates_schema_at_head(store_url: tuple[str, str | None]) -> None:
    engine, _ = db.open_store(*store_url)
    names = set(inspect(engine).get_table_names())
    assert {"jobs", "job_events", "job_attempts", "tokens", "accounts", "qos"} <= names
    assert db.current_revision(engine) == db.HEAD
    db.upgrade(engine)  # idempotent
    assert db.current_revision(engine) == db.HEAD


def test_insert_and_guarded_transitions(store_url: tuple[str, str | None]) -> None:
    _, Session = db.open_store(*store_url)
    with Session.begin() as s:
        jobrepo.insert_jobs(s, [_job(1), _job(2)])
    with Session.begin() as s:
        assert jobrepo.max_job_id(s) == 2
        # the guard passes once, then fails: the state moved on
        assert jobrepo.transition(s, 1, ["PENDING"], "RUNNING", 200.0, {"start_time": 200.0})
        assert not jobrepo.transition(s, 1, ["PENDING"], "RUNNING", 201.0)
        # a stale revision fails too
        assert not jobrepo.transition(s, 2, ["PENDING"], "RUNNING", 200.0, rev=5)
    with Session() as s:
        assert jobrepo.get(s, 1).state == "RUNNING"
        assert jobrepo.get(s, 2).state == "PENDING"
        ev = jobrepo.events(s, 1)
        assert [(e.from_state, e.to_state) for e in ev] == [("PENDING", "RUNNING")]


def test_filters_and_final_states(store_url: tuple[str, str | None]) -> None:
    _, Session = db.open_store(*store_url)
    with Session.begin() as s:
        jobrepo.insert_jobs(
            s,
            [
                _job(1, "COMPLETED", user="bob"),
                _job(2, "PENDING"),
                _job(3, "FAILED", array_job_id=3, array_task_id=0),
                _job(4, "COMPLETED", array_job_id=3, array_task_id=1),
            ],
        )
    with Session() as s:
        f = jobrepo.JobFilter(users=("alice",), states=("PENDING",))
        assert jobrepo.query_columns(s, ["id", "state"], f) == [(2, "PENDING")]
        assert [r.id for r in jobrepo.query_rows(s, jobrepo.JobFilter(array_ids=(3,)))] == [3, 4]
        states = jobrepo.final_states(s, ["1", "3"])
        assert states == {
            "1": "COMPLETED",
            "3_0": "FAILED",
            "3_1": "COMPLETED",
            "4": "COMPLETED",
        }


def test_account_tree_round_trip(store_url: tuple[str, str | None]) -> None:
    _, Session = db.open_store(*store_url)
    tree = AccountTree(
        accounts={
            "physics": Account("physics", fairshare=3, limits=Limits(grp_tres={"gres/gpu": 16})),
        },
        users=[
            UserAssoc("alice", "physics", fairshare=2, admin_level="Operator", default_account=True)
        ],
        qos={"normal": Qos("normal"), "high": Qos("high", priority=100, usage_factor=2.0)},
    )
    with Session.begin() as s:
        accounts.seed_tree(s, tree)
    with Session() as s:
        got = accounts.load_tree(s)
        assert accounts.is_seeded(s)
    assert got.accounts["physics"].limits.grp_tres == {"gres/gpu": 16}
    assert got.accounts["physics"].fairshare == 3
    assert got.default_account("alice") == "physics"
    assert got.assoc("alice", "physics").admin_level == "Operator"
    assert got.qos["high"].priority == 100 and got.qos["high"].usage_factor == 2.0


def test_tokens_are_stored_hashed(store_url: tuple[str, str | None]) -> None:
    _, Session = db.open_store(*store_url)
    with Session.begin() as s:
        secret, row = tokens.create(s, "alice", now=1.0, name="laptop")
        assert secret not in row.digest and len(row.digest) == 64
    with Session.begin() as s:
        assert tokens.lookup(s, secret, now=2.0).user == "alice"
        assert tokens.lookup(s, secret + "x", now=2.0) is None
        tokens.revoke(s, row.id)
    with Session() as s:
        assert tokens.lookup(s, secret, now=3.0) is None


def test_accounting_report_clips_to_period(store_url: tuple[str, str | None]) -> None:
    _, Session = db.open_store(*store_url)
    with Session.begin() as s:
        jobrepo.insert_jobs(s, [_job(1, "RUNNING"), _job(2, "RUNNING", user="bob")])
        accounting.open_attempt(
            s,
            job_id=1,
            attempt=0,
            user="alice",
            account="physics",
            start_time=0.0,
            gpus=4,
            gpu_type="a100",
        )
        accounting.open_attempt(
            s,
            job_id=2,
            attempt=0,
            user="bob",
            account="physics",
            start_time=3600.0,
            gpus=2,
            gpu_type="h100",
        )
    with Session.begin() as s:
        assert accounting.close_attempt(s, 1, 0, 7200.0, "COMPLETED", 0, 0) == 4 * 7200.0
        accounting.set_price(s, "a100", 2.0)
    with Session() as s:
        # period [3600, 10800): alice 4 GPUs x 1 h; bob (still running, now=7200) 2 x 1 h
        lines = accounting.report(s, 3600.0, 10800.0, now=7200.0)
        got = {(x.user, x.gpu_type): x.gpu_hours for x in lines}
        assert got == {("alice", "a100"): 4.0, ("bob", "h100"): 2.0}
        assert accounting.prices(s) == {"a100": 2.0}


def test_request_and_alloc_codec_round_trip() -> None:
    req = JobRequest(
        name="train",
        nodes_min=2,
        gpus_per_node=8,
        partitions=("gpu", "debug"),
        dependency=Dependency((DependencyItem(DependencyType.AFTEROK, ("12", "13_2")),)),
        array=ArraySpec((0, 2, 4), max_running=2),
        signal=SignalSpec("USR1", 120),
        time_limit=3600,
    )
    assert codec.request_from_json(codec.request_json(req)) == req
    assert codec.dependency_text(req.dependency) == "afterok:12:13_2"
    alloc = Allocation(7, (NodeAlloc(0, (0, 1), (0, 1, 2), 1024), NodeAlloc(3, (5,), (), 0)))
    assert codec.alloc_from_json(codec.alloc_json(alloc)) == alloc


def test_migrations_match_the_models(store_url: tuple[str, str | None]) -> None:
    """`alembic upgrade head` builds exactly what tide.store.models declares."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from tide.store.models import Base

    engine, _ = db.open_store(*store_url)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
