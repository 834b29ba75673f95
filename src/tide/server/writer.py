"""Group commit for submissions.

Each submit request hands its rows to one writer thread and waits; the
writer inserts everything that queued up meanwhile in one transaction. Under
load, hundreds of submissions share one commit (one WAL append), which is
what lets SQLite sustain thousands of submissions per second; when idle, a
submission waits for nobody.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from tide.store import jobs as jobrepo
from tide.store.db import SessionFactory

log = logging.getLogger("tide.server")

MAX_BATCH = 2000  # jobs per transaction


class SubmitWriter:
    def __init__(
        self, sessions: SessionFactory, on_commit: Callable[[int], None] | None = None
    ) -> None:
        self._sessions = sessions
        self._queue: queue.Queue[tuple[list[dict[str, Any]], Future[None]] | None] = queue.Queue()
        self._on_commit = on_commit
        self._thread = threading.Thread(target=self._run, name="tide-submit-writer", daemon=True)
        self.commits = 0
        self.jobs = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    def submit(self, rows: list[dict[str, Any]]) -> Future[None]:
        fut: Future[None] = Future()
        self._queue.put((rows, fut))
        return fut

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            size = len(item[0])
            stop = False
            while size < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
                size += len(nxt[0])
            self._write(batch)
            if stop:
                return

    def _write(self, batch: list[tuple[list[dict[str, Any]], Future[None]]]) -> None:
        try:
            with self._sessions.begin() as s:
                jobrepo.insert_jobs(s, [r for rows, _ in batch for r in rows])
        except Exception as e:
            if len(batch) > 1:  # one bad submission must not fail the others
                for one in batch:
                    self._write([one])
                return
            log.warning("submission failed to commit: %s", e)
            batch[0][1].set_exception(e)  # the API says why (tide.server.errors.store_error)
            return
        self.commits += 1
        n = sum(len(rows) for rows, _ in batch)
        self.jobs += n
        for _, fut in batch:
            fut.set_result(None)
        if self._on_commit:
            self._on_commit(n)
