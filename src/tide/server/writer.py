"""Group commit for submissions.

Each submission hands its rows to one writer thread; the writer inserts
everything that queued up meanwhile in one transaction. Under load, hundreds
of submissions share one commit (one WAL append), which is what lets SQLite
sustain thousands of submissions per second; when idle, a submission waits
for nobody. A group of submissions (tide.server.intake's batch) is handed
over, and told how each one went, with one call.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from tide.server.batching import drain
from tide.store import jobs as jobrepo
from tide.store.db import SessionFactory

log = logging.getLogger("tide.server")

MAX_BATCH = 2000  # jobs per transaction

Rows = list[dict[str, Any]]  # one submission: its job rows (all tasks of an array)
# told, from the writer's thread, each submission's error in order (None: stored)
Settle = Callable[[list[BaseException | None]], None]


@dataclass(slots=True)
class _Group:
    submissions: list[Rows]
    settle: Settle
    size: int  # rows


class SubmitWriter:
    def __init__(
        self, sessions: SessionFactory, on_commit: Callable[[int], None] | None = None
    ) -> None:
        self._sessions = sessions
        self._queue: queue.SimpleQueue[_Group | None] = queue.SimpleQueue()
        self._on_commit = on_commit
        self._thread = threading.Thread(target=self._run, name="tide-submit-writer", daemon=True)
        self.commits = 0
        self.jobs = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    def submit(self, rows: Rows) -> Future[None]:
        """Store one submission; the future is done once it is committed."""
        fut: Future[None] = Future()

        def settle(errors: list[BaseException | None]) -> None:
            if errors[0] is None:
                fut.set_result(None)
            else:
                fut.set_exception(errors[0])

        self.submit_many([rows], settle)
        return fut

    def submit_many(self, submissions: list[Rows], settle: Settle) -> None:
        """Store several submissions (each all or nothing); `settle` is called once,
        from the writer's thread, with each one's error (None: committed)."""
        self._queue.put(_Group(submissions, settle, sum(len(rows) for rows in submissions)))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch, stop = drain(self._queue, item, MAX_BATCH, lambda group: group.size)
            self._write(batch)
            if stop:
                return

    def _write(self, batch: list[_Group]) -> None:
        errors = self._insert([rows for group in batch for rows in group.submissions])
        at = 0
        for group in batch:
            n = len(group.submissions)
            try:
                group.settle(errors[at : at + n])
            except Exception:  # a caller's bug must not stop the writer
                log.exception("a submission's result could not be handed back")
            at += n

    def _insert(self, submissions: list[Rows]) -> list[BaseException | None]:
        try:
            with self._sessions.begin() as s:
                jobrepo.insert_jobs(s, [r for rows in submissions for r in rows])
        except Exception as e:
            if len(submissions) > 1:  # one bad submission must not fail the others
                return [err for one in submissions for err in self._insert([one])]
            log.warning("submission failed to commit: %s", e)
            return [e]  # the API says why (tide.server.errors.store_error)
        self.commits += 1
        n = sum(len(rows) for rows in submissions)
        self.jobs += n
        if self._on_commit:
            self._on_commit(n)
        return [None] * len(submissions)
