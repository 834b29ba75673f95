"""The scheduling passes the loop ran while jobs waited, for replays (tide sim export).

One line per pass, "TIME B" (B: 1 = with backfill, 0 = main only), appended to
DATA_DIR/passes.log. The twin replays a history at these very times: a pass that
started nothing leaves no trace in the job records, yet it decides which later
pass runs backfill. Passes with an empty queue are not written (an idle server
writes nothing); the file rolls over to passes.log.1 at MAX_BYTES.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

NAME = "passes.log"
MAX_BYTES = 8 * 1024 * 1024  # about 300,000 passes; one older file is kept


class PassLog:
    def __init__(self, data_dir: Path | None) -> None:
        self.path = None if data_dir is None else Path(data_dir) / NAME
        self._size = -1

    def add(self, now: float, backfill: bool) -> None:
        if self.path is None:
            return
        line = f"{now:.3f} {int(backfill)}\n"
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


def read_passes(data_dir: Path) -> dict[float, bool]:
    """Unix time of each logged pass -> whether it ran backfill (both files)."""
    out: dict[float, bool] = {}
    for name in (NAME + ".1", NAME):
        p = Path(data_dir) / name
        if not p.is_file():
            continue
        for line in p.read_text(encoding="ascii", errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 2:
                try:
                    out[float(parts[0])] = parts[1] == "1"
                except ValueError:
                    continue  # a torn last line
    return out
