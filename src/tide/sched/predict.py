"""Run-time prediction for backfill, as Tsafrir, Etsion and Feitelson propose
("Backfilling Using System-Generated Predictions Rather Than User Runtime
Estimates", IEEE TPDS 18(6), 2007): a job is predicted to run as long as the
mean of its user's last two run times, never more than its time limit; a user
with no history is predicted their time limit.

Example: user u ran 100 s then 300 s; their next job with --time=10:00 is
predicted 200 s, one with --time=2:00 is predicted 120 s.

Pure, and one rule for both drivers: each owns a Predictor (it sees jobs
end: the twin's engine, the live loop's PolicyDriver told by lifecycle) and
fills Snapshot.predicted for policies that declare Capabilities.predictions;
the core only reads the predictions there.
"""

from __future__ import annotations

from collections import deque


class Predictor:
    def __init__(self, history: int = 2) -> None:
        self._runs: dict[str, deque[float]] = {}
        self._history = history

    def record(self, user: str, run: float) -> None:
        """A job of `user` ended after `run` seconds of wall time."""
        runs = self._runs.setdefault(user, deque(maxlen=self._history))
        runs.append(max(0.0, run))

    def predict(self, user: str, limit: float | None) -> float | None:
        """Predicted run seconds; None when neither history nor a limit exists."""
        runs = self._runs.get(user)
        if not runs:
            return limit
        mean = sum(runs) / len(runs)
        return mean if limit is None else min(mean, limit)
