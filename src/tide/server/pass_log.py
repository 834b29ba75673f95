"""The scheduling passes the loop ran while jobs waited, for replays (tide sim export).

One line per pass, "TIME B" (B: 1 = with backfill, 0 = main only), and one per
job end the controller took in, "TIME E JOB_ID", appended to DATA_DIR/passes.log.
The twin replays a history at these very times: a pass that started nothing
leaves no trace in the job records, yet it decides which later pass runs
backfill; and a job's resources were free for the scheduler from the moment its
end was taken in (its exit record says when it really ended, a little earlier).
Passes with an empty queue are not written (an idle server writes nothing); the
file rolls over to passes.log.1 at MAX_BYTES.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

NAME = "passes.log"
MAX_BYTES = 8 * 1024 * 1024  # about 300,000 passes; one older file is kept


class PassLog:
    def __init__(self, data_dir: Path | None) -> None:
        self.path = None if data_dir is None else Path(data_dir) / NAME
        self._size = -1

    def add(self, now: float, backfill: bool) -> None:
        self._write(f"{now:.3f} {int(backfill)}\n")

    def released(self, now: float, job_id: int) -> None:
        self._write(f"{now:.3f} E {job_id}\n")

    def _write(self, line: str) -> None:
        if self.path is None:
            return
        try:
            if self._size < 0:
                self._size = self.path.stat().st_size if self.path.exists() else 0
            if self._size + len(line) > MAX_BYTES:
                self.path.replace(self.path.with_name(NAME + ".1"))
                self._size = 0
            with self.path.open("a", encoding="ascii") as f:
                f.write(line)
            self._size += len(line)
        except OSError as e:  # a full disk must not stop scheduling
            log.warning("cannot write %s: %s", self.path, e)
            self.path = None


@dataclass(slots=True)
class PassRecord:
    passes: dict[float, bool] = field(default_factory=dict)  # Unix time -> ran backfill
    released: dict[int, list[float]] = field(default_factory=dict)  # job -> ends taken in


def read_passes(data_dir: Path) -> PassRecord:
    """Both files of the log of `data_dir` (empty when there is none)."""
    out = PassRecord()
    for name in (NAME + ".1", NAME):
        p = Path(data_dir) / name
        if not p.is_file():
            continue
        for line in p.read_text(encoding="ascii", errors="replace").splitlines():
            parts = line.split()
            try:
                if len(parts) == 2:
                    out.passes[float(parts[0])] = parts[1] == "1"
                elif len(parts) == 3 and parts[1] == "E":
                    out.released.setdefault(int(parts[2]), []).append(float(parts[0]))
            except ValueError:
                continue  # a torn last line
    return out
