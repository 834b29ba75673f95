"""Single-job submissions checked off the event loop, in batches.

POST /v1/jobs must not parse or check on the event loop (a costly request
would stall the API), but a thread hop per request (asyncio.to_thread: an
executor work item, a future chained back to the loop) cost as much CPU as
checking the job. Here a request queues its body and awaits one future; one
thread takes whatever queued meanwhile, validates and checks each submission
(tide.server.services.submit.prepare, every check as before), hands the good
ones to the writer in one call, and answers the whole batch with one wake-up
of the event loop once they are committed. A bad submission fails alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import threading
from typing import Any

from tide.server.auth import Principal
from tide.server.batching import drain
from tide.server.errors import ApiError
from tide.server.ports import Ctl
from tide.server.schemas import SubmitBody
from tide.server.services import submit as submitting
from tide.server.writer import SubmitWriter

log = logging.getLogger("tide.server")

MAX_BATCH = 256  # submissions checked before the writer gets them

Outcome = submitting.Prepared | BaseException
Item = tuple[Principal, SubmitBody | bytes, asyncio.Future[submitting.Prepared]]


class SubmitIntake:
    def __init__(self, ctl: Ctl, writer: SubmitWriter) -> None:
        self._ctl = ctl
        self._writer = writer
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="tide-submit-intake", daemon=True)
        self.batches = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Checks and hands on what queued before; the writer must stop after this."""
        self._queue.put(None)
        self._thread.join(timeout=10)

    async def submit(self, who: Principal, body: SubmitBody | bytes) -> submitting.Prepared:
        """Check and store one submission; `body` is a SubmitBody or the request's
        raw JSON (decoded and validated in the intake's thread). Raises what
        prepare raises (ApiError, pydantic's ValidationError) or the store's error."""
        fut: asyncio.Future[submitting.Prepared] = asyncio.get_running_loop().create_future()
        self._queue.put((who, body, fut))
        return await fut

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch, stop = drain(self._queue, item, MAX_BATCH)
            try:
                self._take(batch)
            except Exception as e:  # a bug here must fail this batch, not the thread
                log.exception("submission batch failed")
                _answer([(fut, e) for _, _, fut in batch])
            if stop:
                return

    def _take(self, batch: list[Item]) -> None:
        self.batches += 1
        refused: list[tuple[asyncio.Future[Any], Outcome]] = []
        good: list[tuple[asyncio.Future[Any], submitting.Prepared]] = []
        for who, body, fut in batch:
            try:
                good.append((fut, submitting.prepare(self._ctl, who, _body(body))))
            except Exception as e:  # the request's own error (or a check's failure)
                refused.append((fut, e))
        if refused:
            _answer(refused)
        if not good:
            return

        def settle(errors: list[BaseException | None]) -> None:
            _answer([(fut, err or p) for (fut, p), err in zip(good, errors, strict=True)])

        self._writer.submit_many([p.rows for _, p in good], settle)


def _body(body: SubmitBody | bytes) -> SubmitBody:
    if isinstance(body, SubmitBody):
        return body
    try:
        data = json.loads(body or b"{}")
    except ValueError as e:
        raise ApiError(400, f"the body is not JSON: {e}", "body", "send a JSON object") from e
    return SubmitBody.model_validate(data)


def _answer(outcomes: list[tuple[asyncio.Future[Any], Outcome]]) -> None:
    """Hand the outcomes to their event loops: one wake-up per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Outcome]]] = {}
    for fut, outcome in outcomes:
        by_loop.setdefault(fut.get_loop(), []).append((fut, outcome))
    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
            loop.call_soon_threadsafe(_settle, items)


def _settle(items: list[tuple[asyncio.Future[Any], Outcome]]) -> None:
    for fut, outcome in items:
        if fut.done():  # the request was cancelled (its client went away)
            continue
        if isinstance(outcome, BaseException):
            fut.set_exception(outcome)
        else:
            fut.set_result(outcome)
