"""The controller as services see it: a typed interface (`Ctl`), so services,
the loop and the views name what they use of the controller without
importing it (tide.server.controller builds the one implementation).

Members typed `Any` are the controller's own parts whose modules import
services (the in-memory queue, the loop, the submission writer, the
authenticator, the service controller); importing them here would tie the
services and the controller into one import circle.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from tide.exec.base import Executor
from tide.model import AccountTree, Cluster, Reservation
from tide.model.quota import QuotaTree
from tide.model.sched_config import SchedulerConfig
from tide.server.job_users import JobUsers
from tide.server.settings import Settings
from tide.store.db import SessionFactory


class Ctl(Protocol):
    settings: Settings
    sessions: SessionFactory  # the store (tide.store: the one door for writes)
    engine: Any  # the database engine (its URL is shown)
    cluster: Cluster
    config: SchedulerConfig  # the policy's name and options among them
    quotas: QuotaTree | None
    pools: Any  # PoolConfig of serving pools that lend, or None
    pooled: Any  # the pooled policy's lending status, or None
    tree: AccountTree
    node_states: dict[str, tuple[str, str]]
    reservations: list[Reservation]
    usage: dict[str, float]  # decayed fair-share usage per "account/user"
    usage_time: float
    prices: dict[str, float]
    lock: threading.RLock  # guards the caches above
    executor: Executor | None
    active: Any  # ActiveJobs: the queue as the core sees it (tide.server.snapshot)
    loop: Any  # SchedulingLoop (tide.server.loop), None before start
    writer: Any  # SubmitWriter (tide.server.writer)
    intake: Any  # SubmitIntake (tide.server.intake): POST /v1/jobs's checks, batched
    auth: Any  # Authenticator (tide.server.auth)
    services: Any  # the service controller (tide.serve.controller)
    job_users: JobUsers
    feasible_cache: dict[tuple[object, ...], Any]
    secret: bytes
    origin: str
    warnings: list[str]
    started: float

    def reload_tree(self) -> None: ...
    def reload_reservations(self) -> None: ...
    def set_node_state(self, name: str, state: str, reason: str) -> None: ...
    def live_cluster(self) -> Cluster: ...
    def next_ids(self, n: int) -> list[int]: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
