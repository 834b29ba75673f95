"""Helpers for the local executor's tests: an executor on a temp state dir
that cleans up after itself, and helpers to build specs and wait for exits."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tide.exec.base import ExitReport, LaunchSpec, NodeLaunch
from tide.exec.local import LocalExecutor

if not sys.platform.startswith("linux"):
    pytest.skip("the local executor's process tests need Linux (/proc)", allow_module_level=True)

PY = sys.executable


def node(name: str, gpus: tuple[int, ...] = (), cores: tuple[int, ...] = (0,), ntasks: int = 1):
    return NodeLaunch(name, "", gpus, cores, 1000, ntasks)


def make_spec(workdir: Path, job_id: int, script: str, **kw: object) -> LaunchSpec:
    fields: dict[str, object] = dict(
        job_id=job_id,
        name=f"job{job_id}",
        user="alice",
        account="physics",
        partition="gpu",
        script=script,
        workdir=str(workdir),
        submit_dir=str(workdir),
        nodes=[node("node01")],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir)},
    )
    fields.update(kw)
    if "ntasks" not in kw:
        fields["ntasks"] = sum(n.ntasks for n in fields["nodes"])  # type: ignore[attr-defined]
    return LaunchSpec(**fields)  # type: ignore[arg-type]


@dataclass
class Runner:
    """An executor plus the exits it has reported so far."""

    ex: LocalExecutor
    workdir: Path
    seen: dict[int, ExitReport] = field(default_factory=dict)

    def launch(self, job_id: int, script: str, **kw: object) -> LaunchSpec:
        spec = make_spec(self.workdir, job_id, script, **kw)
        self.ex.launch(spec)
        return spec

    def wait(self, job_id: int, timeout: float = 15.0) -> ExitReport:
        deadline = time.monotonic() + timeout
        while job_id not in self.seen:
            for r in self.ex.poll():
                self.seen[r.job_id] = r
            if job_id in self.seen:
                break
            if time.monotonic() > deadline:
                log = self.ex.job_dir(job_id) / "supervisor.log"
                text = log.read_text() if log.exists() else "(no log)"
                raise AssertionError(f"job {job_id} did not end within {timeout} s\n{text}")
            time.sleep(0.05)
        return self.seen[job_id]

    def read(self, name: str) -> str:
        return (self.workdir / name).read_text()


def wait_for_files(paths: list[Path], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() and p.read_text().strip() for p in paths):
        if time.monotonic() > deadline:
            missing = [str(p) for p in paths if not p.exists()]
            raise AssertionError(f"files never appeared: {missing}")
        time.sleep(0.05)


def make_executor(state: Path, **kw: object) -> LocalExecutor:
    opts: dict[str, object] = dict(kill_wait=1.0, step_grace=1.0, cluster_name="testcluster")
    opts.update(kw)
    return LocalExecutor(state, **opts)  # type: ignore[arg-type]


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Runner]:
    work = tmp_path / "work"
    work.mkdir()
    ex = make_executor(tmp_path / "state")
    yield Runner(ex, work)
    # Never leave a job behind, whatever the test did.
    for job_id in ex.running():
        ex.cancel(job_id, grace=0)
    deadline = time.monotonic() + 10
    while ex.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    ex.close()
