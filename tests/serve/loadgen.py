"""A small closed-loop load generator for the service tests: `workers` threads,
each sending requests one after another, as many as the current level says
are active; every answer (or error) is recorded."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx


@dataclass
class Load:
    url: str
    workers: int = 8
    path: str = "/work?ms=100"
    active: int = 1  # how many workers send now (change it to make a step)
    results: list[tuple[float, int, str]] = field(default_factory=list)  # (time, status, error)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Load:
        for k in range(self.workers):
            t = threading.Thread(target=self._run, args=(k,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=60)

    def _run(self, k: int) -> None:
        with httpx.Client(timeout=60) as c:
            while not self._stop.is_set():
                if k >= self.active:
                    time.sleep(0.05)
                    continue
                try:
                    r = c.get(self.url + self.path)
                    rec = (time.time(), r.status_code, "" if r.status_code == 200 else r.text)
                except httpx.HTTPError as e:
                    rec = (time.time(), 0, f"{type(e).__name__}: {e}")
                with self._lock:
                    self.results.append(rec)

    def failures(self) -> list[tuple[float, int, str]]:
        with self._lock:
            return [r for r in self.results if r[1] != 200]

    def codes(self) -> Counter[int]:
        with self._lock:
            return Counter(r[1] for r in self.results)
