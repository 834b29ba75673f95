"""How the server was started: paths, address, cluster source, database."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tide.defaults import DEFAULT_PORT, DEFAULT_URL, TOKEN_FILE

__all__ = ["DEFAULT_PORT", "DEFAULT_URL", "TOKEN_FILE", "Settings"]


@dataclass(slots=True)
class Settings:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    db_url: str = ""  # "" = SQLite in data_dir
    db_schema: str | None = None  # PostgreSQL search_path (tests)
    cluster_file: Path | None = None
    slurm_conf: Path | None = None
    demo: bool = False
    executor: str = "local"  # "local", "ray" or "none" (tests of the API alone)
    ray_address: str = ""  # --executor ray: the Ray cluster to join ("" = auto)
    kill_wait: float = 30.0  # KillWait: SIGTERM -> SIGKILL on cancel
    min_interval: float = 0.2  # sched_min_interval: at most 5 event passes per second
    poll_interval: float = 0.25  # how often the executor is polled for ends
    bf_interval: int | None = None  # override the cluster's bf_interval
    policy: str = ""  # override the cluster's scheduler.policy (tide.sched.policies)
    enforce_associations: bool = False  # AccountingStorageEnforce=associations
    prices: dict[str, float] = field(default_factory=dict)
    # Who jobs run as (tide.server.job_users, docs/security.md): as root, each as its
    # user unless single_user; any_user lets a single-user server run anyone's jobs.
    single_user: bool = False
    any_user: bool = False
    spool_dir: Path | None = None  # job directories (SlurmdSpoolDir); None: see spool()
    # Seconds an idle keep-alive connection is kept. Longer than any client's own
    # expiry (httpx: 5 s), so the client always gives a connection up first: at
    # uvicorn's 5 s both sides expire together, and a request sent as the server
    # closes is dropped ("Server disconnected without sending a response", or a
    # reset); a loaded machine widens that window from microseconds to seconds.
    keep_alive: int = 75

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def token_file(self) -> Path:
        return self.data_dir / TOKEN_FILE

    def spool(self, per_user: bool) -> Path:
        """Where job directories live. Single-user: DATA_DIR/exec. Per-user: outside
        the private DATA_DIR, where job users can reach their own directory, by
        default /var/spool/tide/<data dir's name>-<digest of its path> (one per store)."""
        if self.spool_dir is not None:
            return self.spool_dir
        if not per_user:
            return self.data_dir / "exec"
        import hashlib

        path = str(self.data_dir.resolve())
        digest = hashlib.sha256(path.encode()).hexdigest()[:8]
        return Path("/var/spool/tide") / f"{self.data_dir.name.lstrip('.') or 'tide'}-{digest}"

    def database(self) -> str:
        from tide.store.db import default_url

        return self.db_url or os.environ.get("TIDE_DB", "") or default_url(self.data_dir)
