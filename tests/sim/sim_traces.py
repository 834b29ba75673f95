"""Where the shared workload logs are (tests that read real traces skip without them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def traces_dir(holding: str = "") -> Path | None:
    """The traces folder ($TIDE_TRACES, the repository's ../shared/traces, or
    /work/shared/traces) that has `holding` in it; None if none has."""
    here = Path(__file__).resolve()
    for cand in (os.environ.get("TIDE_TRACES"), here.parents[3] / "shared" / "traces",
                 "/work/shared/traces"):  # fmt: skip
        if cand and Path(cand).is_dir() and (Path(cand) / holding).exists():
            return Path(cand)
    return None


TRACES = traces_dir()
needs_traces = pytest.mark.skipif(
    TRACES is None, reason="shared/traces not found (set TIDE_TRACES to the traces folder)"
)
