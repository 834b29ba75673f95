"""`make test` runs `pytest -n 2 --dist loadgroup` so that every test marked
xdist_group("ray") (tests/exec_ray/conftest.py) shares one Ray cluster on one worker.
That needs pytest and pytest-xdist versions that agree on how a test's id is kept
(pytest 9.2 moved it; xdist 3.8's grouping then silently did nothing, and CI started
two Ray clusters). This runs a small suite the way `make test` does and checks that
grouped tests all ran on one worker while the others were spread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONFTEST = '''
import pytest

@pytest.fixture(scope="session")
def shared():
    return 1

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if "shared" in item.fixturenames:
            item.add_marker(pytest.mark.xdist_group("one"))
'''

TESTS = '''
import os, time

def _log(name):
    with open(os.environ["WHERE"], "a") as f:
        f.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")
    time.sleep(0.05)

''' + "".join(
    f"def test_grouped_{i}(shared):\n    _log('grouped')\n\n"
    f"def test_free_{i}():\n    _log('free')\n\n"
    for i in range(8)
)


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(TESTS)
    where = tmp_path / "where.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "WHERE": str(where)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in where.read_text().splitlines()]
    grouped = {w for kind, w in rows if kind == "grouped"}
    assert sum(kind == "grouped" for kind, _ in rows) == 16
    assert len(grouped) == 1, f"grouped tests ran on workers {sorted(grouped)}"
