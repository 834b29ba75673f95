"""Readiness and liveness probes: HTTP GETs on a small thread pool, never
blocking the controller's tick (a probe is started, its answer collected
on a later tick), with Kubernetes' counting: `failure_threshold` failures
in a row flip a replica to not ready (readiness) or get it restarted
(liveness); one success makes it ready again."""

from __future__ import annotations

import http.client
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from tide.model.service import Probe


def http_get(host: str, port: int, path: str, timeout: float) -> tuple[bool, str]:
    """(success, what happened): 2xx and 3xx succeed, as for a Kubernetes httpGet probe."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"User-Agent": "tide-probe"})
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException) as e:
        return False, f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    finally:
        conn.close()
    return 200 <= status < 400, f"HTTP {status}"


@dataclass(slots=True)
class ProbeState:
    successes: int = 0  # in a row
    failures: int = 0  # in a row
    last_start: float = 0.0
    last_result: str = ""
    future: Future[tuple[bool, str]] | None = None


@dataclass(slots=True)
class Prober:
    """Runs probes and keeps their counts, per (replica id, kind)."""

    workers: int = 8
    states: dict[tuple[int, str], ProbeState] = field(default_factory=dict)
    pool: ThreadPoolExecutor | None = None

    def start(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="tide-probe")

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def poll(
        self, replica: int, kind: str, probe: Probe, host: str, port: int, now: float
    ) -> ProbeState:
        """Collect a finished probe, start the next one when it is due."""
        st = self.states.setdefault((replica, kind), ProbeState())
        fut = st.future
        if fut is not None and fut.done():
            ok, what = fut.result()
            st.future = None
            st.last_result = what
            if ok:
                st.successes, st.failures = st.successes + 1, 0
            else:
                st.successes, st.failures = 0, st.failures + 1
        if st.future is None and now - st.last_start >= probe.period and self.pool is not None:
            st.last_start = now
            st.future = self.pool.submit(http_get, host, port, probe.path, probe.timeout)
        return st

    def forget(self, replica: int) -> None:
        for kind in ("readiness", "liveness"):
            self.states.pop((replica, kind), None)
