"""The API fuzzed by schemathesis against a real server (issue 11, item 3):
no server error, no undocumented status code, no response that breaks the
OpenAPI document, 405s with the right Allow, bad input refused.

Bounded: a fixed seed and a few examples per operation (a few minutes on a
loaded 2-core machine), on SQLite and on PostgreSQL where it runs. The check
`positive_data_acceptance` is left out: the schema cannot say everything the
server checks (a partition or account must exist, a script needs a #! line),
and those answers are 400/404 by design, with the field and the fix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from serverproc import DATA, STORES, ServerProc, store_args

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("TIDE_FUZZ_EXAMPLES", "8"))


def _st() -> str:
    exe = shutil.which("st", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("schemathesis is not installed (pip install -e '.[dev]')")
    return exe


def _fuzz(srv: ServerProc, out: Path) -> list[dict]:
    """schemathesis' failures, one dict per (operation, check, status)."""
    events = out / "events.ndjson"
    cmd = [
        _st(), "run", f"{srv.url}/openapi.json", "--checks", "all",
        "--exclude-checks", "positive_data_acceptance",
        "--seed", "20261201", "--max-examples", str(EXAMPLES), "--workers", "1",
        "--request-timeout", "60", "--suppress-health-check", "all",
        "-H", f"Authorization: Bearer {srv.admin_token}",
        "--report", "ndjson", "--report-ndjson-path", str(events),
    ]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    (out / "st.out").write_text(run.stdout + run.stderr)
    failures = []
    for line in events.read_text().splitlines():
        ev = json.loads(line)
        for kind, body in ev.items():
            if kind == "ScenarioFinished":
                for check in _checks(body):
                    failures.append(check)
    return failures


def _checks(body: dict) -> list[dict]:
    """Failed checks in one scenario's event: operation, check, message."""
    out = []
    for case in body.get("recorder", {}).get("checks", {}).values():
        for c in case:
            if c.get("status") != "success":
                failure = (c.get("failure_info") or {}).get("failure", {})
                out.append(
                    {
                        "operation": failure.get("operation", "?"),
                        "check": c.get("name"),
                        "message": failure.get("message", ""),
                    }
                )
    return out


@pytest.mark.parametrize("store", STORES)
def test_fuzzing_the_api_finds_nothing(tmp_path: Path, store: str) -> None:
    args = ["--cluster", str(DATA / "tiny.yaml"), "--executor", "none", "--bf-interval", "5"]
    with store_args(store) as db:
        srv = ServerProc(tmp_path / "data", [*args, *db]).start()
        try:
            failures = _fuzz(srv, tmp_path)
            with srv.client() as c:
                assert c.get("/v1/whoami").json()["role"] == "admin"  # still administrable
        finally:
            srv.stop()
    log = (tmp_path / "data" / "server.log").read_text()
    assert "Traceback" not in log or "internal error" not in log
    summary = "\n".join(f"{f['operation']}: {f['check']}: {f['message']}" for f in failures)
    assert not failures, summary + "\n" + (tmp_path / "st.out").read_text()[-4000:]
