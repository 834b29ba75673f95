"""The controller: one object that owns the store, the caches, the executor,
the submission writer and the scheduling loop. Routers reach it through
`request.app.state.ctl`; services take it as their first argument.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tide.exec import identity
from tide.exec.base import Executor
from tide.model import AccountTree, Cluster, Reservation
from tide.model.quota import QuotaTree
from tide.model.sched_config import SchedulerConfig
from tide.server import cluster_source
from tide.server.auth import Authenticator
from tide.server.intake import SubmitIntake
from tide.server.job_users import JobUsers
from tide.server.settings import Settings
from tide.server.snapshot import ActiveJobs
from tide.server.writer import SubmitWriter
from tide.store import accounting, db
from tide.store import accounts as acctrepo
from tide.store import jobs as jobrepo
from tide.store import nodes as noderepo
from tide.store import reservations as resvrepo
from tide.store import tokens as tokrepo
from tide.store import usage as usagerepo
from tide.store.models import MetaRow

log = logging.getLogger("tide.server")


class Controller:
    def __init__(
        self,
        settings: Settings,
        executor: Executor | None = None,
        schedule_fn: Any = None,
        source: cluster_source.ClusterSource | None = None,
    ) -> None:
        self.settings = settings
        self._source = source  # already read (tide server checks it before starting)
        self.executor: Executor | None = executor
        self._schedule_fn = schedule_fn
        self.engine: Any = None
        self.sessions: db.SessionFactory = None  # type: ignore[assignment]
        self.cluster: Cluster = Cluster()
        self.config = SchedulerConfig()
        self.quotas: QuotaTree | None = None  # Kueue-style quotas, from the cluster file
        self.pools: Any = None  # serving pools that lend (PoolConfig), from the cluster file
        self.pooled: Any = None  # the pooled policy when there are pools (its lending status)
        self.origin = ""
        self.warnings: list[str] = []
        self.tree = AccountTree()
        self.node_states: dict[str, tuple[str, str]] = {}
        self.reservations: list[Reservation] = []
        self.usage: dict[str, float] = {}
        self.usage_time = 0.0
        self.prices: dict[str, float] = {}
        self.lock = threading.RLock()  # guards the caches above
        self._ids = itertools.count(1)
        self._id_lock = threading.Lock()
        self.secret = b""
        self.auth: Authenticator = None  # type: ignore[assignment]
        self.writer: SubmitWriter = None  # type: ignore[assignment]
        self.intake: SubmitIntake = None  # type: ignore[assignment]
        self.loop: Any = None
        self.feasible_cache: dict[tuple[object, ...], Any] = {}  # submit checks, per partition
        self.active = ActiveJobs()  # the queue as the core sees it (tide.server.snapshot)
        self.started = 0.0
        self.services: Any = None  # the service controller (tide.serve.controller)
        self.job_users = JobUsers(per_user=False, server_user=identity.current().name)

    # --- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        s = self.settings
        s.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        keep_private(s.data_dir)
        self.secret = _secret_key(s.data_dir / "secret.key")
        self.engine, self.sessions = db.open_store(s.database(), schema=s.db_schema)
        jobrepo.on_job_writes(self.sessions, self._jobs_written)
        src = self._source or cluster_source.load(s)
        self.cluster, self.config, self.origin = src.cluster, src.config, src.origin
        self.quotas = src.quotas
        self.pools = src.pools
        self.warnings = src.warnings
        self.job_users = JobUsers.start(s.single_user, s.any_user, self.cluster.user_map)
        if s.bf_interval is not None:
            self.config = replace(self.config, bf_interval=s.bf_interval)
        if s.policy:  # tide server --policy: the twin's policy of that name
            self.config = replace(self.config, policy=s.policy)
        self._bootstrap(src.accounts)
        self.auth = Authenticator(self.sessions, self.secret)
        self.ensure_admin_token()
        if self.executor is None and s.executor == "local":
            from tide.exec.local import LocalExecutor

            self.executor = LocalExecutor(
                job_spool(s, self.job_users.per_user),
                kill_wait=s.kill_wait,
                cluster_name=self.cluster.name,
                node_timeout=slurmd_timeout(self.config),
            )
        elif self.executor is None and s.executor == "ray":
            from tide.exec.ray.executor import RayExecutor

            self.executor = RayExecutor(
                s.ray_address,
                checkpoint_root=str(s.data_dir / "exec" / "checkpoints"),
                kill_wait=s.kill_wait,
                cluster_name=self.cluster.name,
                auto_health=False,  # the loop's ray_nodes.sync marks nodes DOWN first
            )
        from tide.server.loop import SchedulingLoop

        self.loop = SchedulingLoop(self, self._schedule_fn)
        self.writer = SubmitWriter(self.sessions, on_commit=lambda n: self.loop.wake())
        self.writer.start()
        self.intake = SubmitIntake(self, self.writer)
        self.intake.start()
        self.loop.start()
        from tide.serve.controller import ServiceController

        self.services = ServiceController(self)
        self.services.start()
        self.started = time.time()
        log.info(
            "tide controller up: cluster %s (%s), store %s, jobs: %s",
            self.cluster.name,
            self.origin,
            self.engine.url.render_as_string(hide_password=True),
            f"{self.job_users.mode} (server user {self.job_users.server_user})",
        )

    def stop(self) -> None:
        if self.services is not None:
            self.services.stop()
        if self.loop is not None:
            self.loop.stop()
            self._save_usage()
        if self.intake is not None:
            self.intake.stop()  # hands the writer what it checked: the writer stops after
        if self.writer is not None:
            self.writer.stop()
        if self.executor is not None:
            self.executor.close()
        if self.engine is not None:
            self.engine.dispose()

    def _save_usage(self) -> None:
        with self.lock:
            usage, when = dict(self.usage), self.usage_time
        try:
            with self.sessions.begin() as ses:
                usagerepo.save(ses, usage, {}, when)
        except Exception:
            log.warning("could not save fair-share usage at shutdown", exc_info=True)

    def _bootstrap(self, file_tree: AccountTree) -> None:
        now = time.time()
        with self.sessions.begin() as ses:
            if not acctrepo.is_seeded(ses):
                acctrepo.seed_tree(ses, file_tree)
            file_states = {n.name: (str(n.state), n.reason) for n in self.cluster.nodes}
            noderepo.ensure(ses, [n.name for n in self.cluster.nodes], file_states)
            ses.merge(MetaRow(key="cluster", value=self.cluster.name))
            for gpu_type, price in self.settings.prices.items():
                accounting.set_price(ses, gpu_type, price)
        with self.sessions() as ses:
            next_id = max(jobrepo.max_job_id(ses), _int(ses.get(MetaRow, "last_job_id"))) + 1
            self._ids = itertools.count(next_id)
            self.node_states = {r.name: (r.state, r.reason) for r in noderepo.load(ses).values()}
            self.reservations = resvrepo.load(ses, now)
            rows = usagerepo.load(ses)
            self.usage = {k: r.value for k, r in rows.items()}
            self.usage_time = max((r.updated for r in rows.values()), default=now) or now
            self.prices = accounting.prices(ses)
        self.reload_tree()

    def ensure_admin_token(self) -> None:
        """First start: an Administrator for the OS user and its token in
        DATA_DIR/admin.token (0600). A token file whose token still works is kept."""
        path = self.settings.token_file
        user = identity.current().name  # not $USER: single-user mode compares OS users
        if path.exists():
            with self.sessions() as ses:
                if tokrepo.lookup(ses, path.read_text().strip(), time.time()) is not None:
                    return
        with self.sessions.begin() as ses:
            acctrepo.put_user(ses, user, "Administrator")
            token, _ = tokrepo.create(ses, user, time.time(), name="admin.token")
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        os.chmod(tmp, 0o600)
        tmp.replace(path)

    # --- caches ----------------------------------------------------------------

    def _jobs_written(self, ids: set[int], notes: dict[int, dict[str, Any]]) -> None:
        """The store's one door (tide.store.jobs) tells the queue what changed."""
        if ids:
            self.active.touch(ids)
        for job_id, values in notes.items():
            self.active.note(job_id, values)

    def reload_tree(self) -> None:
        with self.sessions() as ses:
            tree = acctrepo.load_tree(ses, self.cluster.name)
        with self.lock:
            self.tree = tree
        if self.auth is not None:
            self.auth.invalidate()

    def reload_reservations(self) -> None:
        with self.sessions() as ses:
            resv = resvrepo.load(ses, time.time())
        with self.lock:
            self.reservations = resv

    def set_node_state(self, name: str, state: str, reason: str) -> None:
        with self.lock:
            self.node_states[name] = (state, reason)

    def live_cluster(self) -> Cluster:
        """The cluster with administrative node states applied (drain, down)."""
        from tide.model import NodeState

        with self.lock:
            states = dict(self.node_states)
        nodes = []
        for n in self.cluster.nodes:
            st = states.get(n.name)
            if st and (st[0] != str(n.state) or st[1] != n.reason):
                n = replace(n, state=NodeState(st[0]), reason=st[1])
            nodes.append(n)
        return replace(self.cluster, nodes=nodes)

    def next_ids(self, n: int) -> list[int]:
        with self._id_lock:
            return [next(self._ids) for _ in range(n)]


def slurmd_timeout(config: SchedulerConfig) -> float | None:
    """slurm.conf SlurmdTimeout (seconds; 0 = never) or None for the default."""
    text = str(config.extra.get("SlurmdTimeout", "")).strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        log.warning("SlurmdTimeout=%s is not a number of seconds; using the default", text)
        return None
    return float("inf") if seconds == 0 else max(1.0, seconds)


def keep_private(data_dir: Path) -> None:
    """DATA_DIR holds the admin token, the signing key and SQLite's database: only
    the controller's user may enter it (0700), whatever mode it was made with."""
    st = data_dir.stat()
    if st.st_uid == os.geteuid() and st.st_mode & 0o077:
        log.warning("%s was open to other users (mode %o); set to 0700", data_dir, st.st_mode)
        data_dir.chmod(0o700)
    for name in ("admin.token", "secret.key"):
        path = data_dir / name
        if path.exists() and path.stat().st_mode & 0o077:
            path.chmod(0o600)


def job_spool(settings: Settings, per_user: bool) -> Path:
    """The job spool, made; for jobs run as their users it must lie outside DATA_DIR
    and be reachable by every user (each job directory inside is its user's)."""
    spool = settings.spool(per_user)
    spool.mkdir(parents=True, exist_ok=True, mode=0o711)
    if not per_user:
        return spool
    data = settings.data_dir.resolve()
    real = spool.resolve()
    if real == data or data in real.parents:
        raise RuntimeError(
            f"--spool-dir {spool} is inside the private data directory {data}; jobs run as "
            "their users cannot reach it: give a directory elsewhere, e.g. /var/spool/tide"
        )
    spool.chmod(0o711)
    if not identity.open_to_all(str(spool)):
        raise RuntimeError(
            f"the job spool {spool} lies under a directory other users cannot enter, so "
            "jobs cannot run as their users; give --spool-dir a directory every user can "
            "reach, e.g. /var/spool/tide"
        )
    return spool


def _secret_key(path: Path) -> bytes:
    if path.exists():
        return bytes.fromhex(path.read_text().strip())
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.hex())
    return key


def _int(row: MetaRow | None) -> int:
    try:
        return int(row.value) if row is not None else 0
    except ValueError:
        return 0
