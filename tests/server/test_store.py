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


def test_the_controllers_reads_and_marks(store_url: tuple[str, str | None]) -> None:
    """The queries the server used to write itself (issue 13: SQLAlchemy stays in
    tide.store), each against a real store."""
    _, Session = db.open_store(*store_url)
    with Session.begin() as s:
        jobrepo.insert_jobs(
            s,
            [
                _job(1, "RUNNING", last_checkpoint=150.0),
                _job(2, "PENDING", reason="Priority", preempt_phase="parked", preempted_by=1),
                _job(3, "COMPLETED", account="bio"),
                _job(4, "SUSPENDED", suspended_seconds=7.0, preempt_phase="suspended"),
                _job(5, "PENDING", array_job_id=5, array_task_id=0),
                _job(6, "PENDING", array_job_id=5, array_task_id=1),
            ],
        )
        accounting.open_attempt(s, job_id=1, attempt=0, user="alice", account="physics",
                                start_time=120.0, gpus=2, gpu_type="a100")  # fmt: skip
        accounting.open_attempt(s, job_id=1, attempt=1, user="alice", account="physics",
                                start_time=140.0, gpus=2, gpu_type="a100")  # fmt: skip
        accounts.put_user(s, "zoe", "Administrator")
        accounts.put_user(s, "bob")
    with Session() as s:
        cols = ("id", "rev", "state")
        assert sorted(tuple(r) for r in jobrepo.scan_active(s, cols)) == [
            (1, 0, "RUNNING"), (2, 0, "PENDING"), (4, 0, "SUSPENDED"), (5, 0, "PENDING"),
            (6, 0, "PENDING"),
        ]  # fmt: skip
        assert sorted(tuple(r) for r in jobrepo.scan_by_id(s, [3, 4, 99], cols)) == [
            (3, 0, "COMPLETED"), (4, 0, "SUSPENDED"),
        ]  # fmt: skip
        assert jobrepo.scan_by_id(s, [], cols) == []
        texts = jobrepo.requests_by_id(s, [1, 3])
        assert set(texts) == {1, 3} and codec.request_from_json(texts[3]).name == "j"
        assert jobrepo.requests_by_id(s, []) == {}
        assert jobrepo.request_text(s, 1) == texts[1] and jobrepo.request_text(s, 99) is None
        assert sorted(r[:3] for r in jobrepo.in_phases(s, ("parked", "suspended"))) == [
            (2, "PENDING", "parked"), (4, "SUSPENDED", "suspended"),
        ]  # fmt: skip
        assert sorted(jobrepo.live_checkpoints(s)) == [(1, 150.0, 0.0), (4, None, 7.0)]
        assert jobrepo.first_in_account(s, "bio", ("PENDING", "RUNNING")) is None
        assert jobrepo.first_in_account(s, "bio", ("COMPLETED",)) == 3
        assert [r.id for r in jobrepo.by_display_id(s, 5, None)] == [5, 6]
        assert [r.id for r in jobrepo.by_display_id(s, 5, 1)] == [6]
        assert [r.id for r in jobrepo.by_display_id(s, 3, None)] == [3]
        assert jobrepo.by_display_id(s, 3, 0) == [] and jobrepo.by_display_id(s, 99, None) == []
        assert accounting.last_attempt(s, 1).attempt == 1
        assert accounting.last_attempt(s, 2) is None
        assert [u.name for u in accounts.list_users(s)] == ["bob", "zoe"]
        assert accounts.admin_levels(s) == {"bob": "None", "zoe": "Administrator"}
    with Session.begin() as s:
        assert jobrepo.set_pending_reason(s, 2, "Preempted")
        assert not jobrepo.set_pending_reason(s, 2, "Preempted")  # already so: no write
        assert not jobrepo.set_pending_reason(s, 1, "Preempted")  # not pending
        jobrepo.set_values(s, 4, {"preempt_phase": "", "preempt_kill_at": None})
    with Session() as s:
        assert jobrepo.get(s, 2).reason == "Preempted" and jobrepo.get(s, 1).reason != "Preempted"
        assert [r[0] for r in jobrepo.in_phases(s, ("parked", "suspended"))] == [2]


def test_job_writes_reach_the_hook_on_commit_only(store_url: tuple[str, str | None]) -> None:
    """on_job_writes: what the controller's in-memory queue hears of each commit."""
    _, Session = db.open_store(*store_url)
    heard: list[tuple[set[int], dict[int, dict[str, object]]]] = []
    jobrepo.on_job_writes(Session, lambda ids, notes: heard.append((set(ids), dict(notes))))
    with Session.begin() as s:
        jobrepo.insert_jobs(s, [_job(1), _job(2)])
    assert heard == [({1, 2}, {})]
    with Session.begin() as s:
        jobrepo.write_pending(s, [{"jid": 2, "reason": "Resources", "priority": 5.0,
                                   "planned_start": None, "planned_nodes": ""}])  # fmt: skip
    assert heard[-1] == (set(), {2: {"reason": "Resources", "priority": 5.0,
                                     "planned_start": None, "planned_nodes": ""}})  # fmt: skip
    try:
        with Session.begin() as s:
            jobrepo.transition(s, 1, ["PENDING"], "CANCELLED", 1.0)
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    with Session.begin() as s:  # the rolled-back write is forgotten, not heard later
        jobrepo.get(s, 1)
    assert len(heard) == 2
    with Session() as s:
        assert jobrepo.get(s, 1).state == "PENDING"
