"""COMPLETING jobs in the live controller's snapshot (issue 13: one rule, both
worlds). A killed job whose processes are not gone yet gives Snapshot.completing,
as the twin's killed jobs do, so the `slurm` policy's backfill thread sees
completing nodes as Slurm's does (counted free when it places a job; a place
that uses one waits). Real controller, real local executor and processes; the
executor holds a job's kill until the test lets it go, as a slow epilog would."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from serverproc import DATA, wait_for

from tide.exec.local import LocalExecutor
from tide.model import JobState
from tide.sched.types import Decisions, Snapshot
from tide.server.controller import Controller
from tide.server.schemas import SubmitBody
from tide.server.services import jobs as jobservice
from tide.server.services import submit as submitting
from tide.server.settings import Settings
from tide.server.snapshot import load
from tide.store import jobs as jobrepo


class HoldsKills(LocalExecutor):
    """The real local executor; the kill of a job in `held` waits for release()."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.held: set[int] = set()
        self.asked: set[int] = set()
        self._lock = threading.Lock()

    def cancel(self, job_id: int, grace: float = 30.0) -> None:
        with self._lock:
            if job_id in self.held:
                self.asked.add(job_id)
                return
        super().cancel(job_id, grace)

    def release(self, job_id: int) -> None:
        with self._lock:
            self.held.discard(job_id)
        super().cancel(job_id, 0.0)


class Live:
    """An in-process controller on `cluster`, with alice's identity to submit."""

    def __init__(self, tmp: Path, cluster: Path) -> None:
        self.tmp = tmp
        self.executor = HoldsKills(tmp / "exec", kill_wait=2)
        settings = Settings(data_dir=tmp / "d", cluster_file=cluster, kill_wait=2)
        self.ctl = Controller(settings, executor=self.executor)

    def __enter__(self) -> Live:
        self.ctl.start()
        token = (self.tmp / "d" / "admin.token").read_text().strip()
        self.who = self.ctl.auth.principal(f"Bearer {token}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.executor.held.clear()
        self.ctl.stop()

    def submit(self, script: str, *argv: str) -> int:
        body = SubmitBody(script=script, argv=list(argv), cwd=str(self.tmp))
        prepared = submitting.prepare(self.ctl, self.who, body)
        self.ctl.writer.submit(prepared.rows).result(timeout=60)
        self.ctl.loop.wake()
        return prepared.job_ids[0]

    def row(self, job_id: int) -> tuple[str, str]:
        with self.ctl.sessions() as s:
            r = jobrepo.get(s, job_id)
            assert r is not None
            return r.state, r.nodelist or ""

    def state(self, job_id: int) -> str:
        return self.row(job_id)[0]

    def cancel(self, job_id: int) -> None:
        out = jobservice.cancel(self.ctl, self.who, str(job_id))
        assert [o["state"] for o in out] == ["COMPLETING"], out

    def snapshot(self, main_pass: bool = True) -> Snapshot:
        return load(self.ctl, self.ctl.active, time.time(), True, main_pass=main_pass).snapshot


def _started(path: Path) -> str:
    return f"#!/bin/sh\ntouch {path}\nsleep 600\n"


def test_the_live_snapshot_lists_a_killed_job_until_it_is_gone(tmp_path: Path) -> None:
    with Live(tmp_path, DATA / "tiny.yaml") as live:
        flag = tmp_path / "started"
        jid = live.submit(_started(flag), "--gpus-per-node=2")
        wait_for("the job to run", flag.exists, 60)
        other = live.submit(_started(tmp_path / "other"), "--gpus-per-node=1")
        wait_for("the other job to run", lambda: live.state(other) == "RUNNING", 60)
        assert live.snapshot().completing == ()
        live.executor.held.add(jid)
        live.cancel(jid)
        assert jid in live.executor.asked  # the kill is held: the job completes
        snap = live.snapshot(main_pass=False)
        mine = [r.alloc for r in snap.running if r.job.id == jid]
        # what it holds, the same allocation it keeps in `running` while it completes;
        # the job still running is not listed
        assert snap.completing == tuple(mine) and len(mine) == 1
        assert mine[0].gpu_count == 2 and snap.main_pass is False
        live.executor.release(jid)
        wait_for("the killed job to be gone", lambda: live.state(jid) == "CANCELLED", 60)
        snap = live.snapshot()
        assert snap.completing == () and snap.main_pass is True
        assert [r.job.id for r in snap.running] == [other]


# Three 4-GPU nodes, the `slurm` policy planning as Slurm's will-run test. Job `big`
# (all three nodes) waits first in the queue, so the main pass stops at it; `small`
# (3 GPUs, short) is for the backfill pass alone.
CLUSTER = """
name: cg
nodes:
- names: g[1-3]
  cpus: 4
  sockets: 1
  cores_per_socket: 4
  threads_per_core: 1
  real_memory: 8000
  gpus: {count: 4, type: a100}
partitions:
- {name: gpu, nodes: 'g[1-3]', default: true, max_time: 1h, default_time: 30m}
scheduler:
  policy: slurm
  bf_interval: 1s
  will_run_batches: true
accounts:
  root: {}
  physics: {}
users:
- {user: alice, account: physics, default_account: true}
"""


@pytest.fixture
def cg(tmp_path: Path) -> Iterator[Live]:
    path = tmp_path / "cg.yaml"
    path.write_text(CLUSTER)
    with Live(tmp_path, path) as live:
        yield live


Pass = tuple[bool, bool, frozenset[int], tuple[int, ...]]


def _record(live: Live) -> list[Pass]:
    """(main_pass, backfill, COMPLETING jobs in `running`, jobs in `completing`) of
    every pass from now on; the loop's own policy driver still decides."""
    seen: list[Pass] = []
    real: Callable[[Snapshot], Decisions] = live.ctl.loop._schedule

    def schedule(snap: Snapshot) -> Decisions:
        going = frozenset(r.job.id for r in snap.running if r.job.state is JobState.COMPLETING)
        listed = tuple(a.job_id for a in snap.completing)
        seen.append((snap.main_pass, snap.backfill, going, listed))
        return real(snap)

    live.ctl.loop._schedule = schedule
    return seen


@pytest.mark.slow
def test_backfill_waits_for_the_completing_node_it_picks(cg: Live, tmp_path: Path) -> None:
    live = cg
    one = live.submit(_started(tmp_path / "one"), "-w", "g1", "--gpus-per-node=1")
    killed = live.submit(_started(tmp_path / "killed"), "-w", "g1", "--gpus-per-node=3")
    far = live.submit(_started(tmp_path / "far"), "-w", "g3", "--gpus-per-node=4")
    for jid in (one, killed, far):
        wait_for(f"job {jid} to run", lambda jid=jid: live.state(jid) == "RUNNING", 60)
    live.executor.held.add(killed)
    live.cancel(killed)  # g1: 1 GPU held by `one`, 3 by the completing job
    big = live.submit("#!/bin/sh\nsleep 1\n", "-N3", "--gpus-per-node=4", "-t", "5")
    small = live.submit("#!/bin/sh\nsleep 600\n", "--gpus-per-node=3", "-t", "2")
    seen = _record(live)

    def ticks() -> list[Pass]:  # backfill ticks no event asked for, the job completing
        return [p for p in seen if p[1] and not p[0] and killed in p[2]]

    # g2 is free now, but Slurm's backfill places `small` with g1's completing GPUs
    # counted free, picks g1 (best fit: 3 GPUs) and waits for it
    wait_for("three backfill ticks while the job completes", lambda: len(ticks()) >= 3, 90)
    assert all(p[3] == (killed,) for p in ticks())  # Snapshot.completing: that job
    assert live.state(small) == "PENDING" and live.state(killed) == "COMPLETING"
    assert live.state(big) == "PENDING"
    live.executor.release(killed)
    wait_for("the small job to start", lambda: live.state(small) != "PENDING", 90)
    assert live.row(small) == ("RUNNING", "g1")
    assert live.state(killed) == "CANCELLED"


# Two 4-GPU nodes, the `tide` policy (victims by lost work); QOS high preempts lowc
# (PreemptMode=CANCEL, 1 s grace).
CANCELS = """
name: cv
nodes:
- names: g[1-2]
  cpus: 4
  sockets: 1
  cores_per_socket: 4
  threads_per_core: 1
  real_memory: 8000
  gpus: {count: 4, type: a100}
partitions:
- {name: gpu, nodes: 'g[1-2]', default: true, max_time: 1h, default_time: 30m}
scheduler:
  policy: tide
  bf_interval: 1s
  preempt_type: preempt/qos
qos:
  normal: {}
  lowc: {preempt_mode: CANCEL, grace_time: 1s}
  high: {priority: 1000, preempt: [lowc]}
accounts:
  root: {}
  physics: {}
"""

Seen = tuple[float, bool, bool, tuple[int, ...]]


@pytest.mark.slow
def test_a_killed_cancel_victim_stays_committed_while_it_completes(tmp_path: Path) -> None:
    """A CANCEL victim killed but not gone is its preemptor's, as a parked REQUEUE
    victim is: no pass chooses it again, nor another job in its place. Before, its
    phase was cleared at the kill: it was no longer committed, and every pass chose it
    again (a no-op; seen 26 times while it completed). Which victim such a pass takes
    is the core's cost order (tests/server/test_killed_victim_shape.py shows the
    needless second victim); here the passes are observed on the real loop."""
    path = tmp_path / "cv.yaml"
    path.write_text(CANCELS)
    with Live(tmp_path, path) as live:
        low = ("-A", "physics", "--qos=lowc")
        cheap = live.submit(_started(tmp_path / "b"), *low, "-w", "g2", "--gpus-per-node=2")
        wait_for("the cheap job to run", lambda: live.state(cheap) == "RUNNING", 60)
        time.sleep(8.0)  # its lost work: 2 GPUs x 8 s ahead of the victim's
        # it ignores its grace's SIGTERM, so it is killed (and held) at the grace's end
        keeps = f"#!/bin/sh\ntrap '' TERM\ntouch {tmp_path / 'a'}\nsleep 600\n"
        victim = live.submit(keeps, *low, "-w", "g1", "--gpus-per-node=4")
        live.executor.held.add(victim)  # its kill waits, as a slow epilog would
        wait_for("the victim to run", lambda: live.state(victim) == "RUNNING", 60)
        starts = _starts(live, cheap, victim)
        seen: list[Seen] = []
        real: Callable[[Snapshot], Decisions] = live.ctl.loop._schedule

        def schedule(snap: Snapshot) -> Decisions:
            d = real(snap)
            going = any(r.job.id == victim and r.job.state is JobState.COMPLETING
                        for r in snap.running)  # fmt: skip
            seen.append((snap.now, going, victim in snap.preempting,
                         tuple(p.victim for p in d.preemptions)))  # fmt: skip
            return d

        live.ctl.loop._schedule = schedule
        urgent = live.submit("#!/bin/sh\nsleep 1\n", "-A", "physics", "--qos=high",
                             "--gpus-per-node=4", "-t", "5")  # fmt: skip
        first = wait_for("the first victim", lambda: [v for p in seen for v in p[3]], 60)
        # chosen while its lost work (4 GPUs since its start) was the cheaper
        assert first == [victim], (first, starts)
        wait_for("the victim's kill", lambda: live.state(victim) == "COMPLETING", 60)
        assert victim in live.executor.asked
        # passes while it completes, once its lost work is past the cheap job's:
        # 4 (now - a) > 2 (now - b)
        crossed = 2 * starts[victim] - starts[cheap]

        def late() -> list[Seen]:
            live.ctl.loop.wake()  # an event: a main pass
            return [p for p in seen if p[1] and p[0] > crossed + 1.0]

        wait_for("three passes past the crossover", lambda: len(late()) >= 3, 90)
        chosen = [v for p in seen for v in p[3]]
        # no second victim, and not the same one again
        assert chosen == [victim], (chosen, cheap, victim)
        assert all(p[2] for p in late())  # committed to its preemptor
        assert live.state(cheap) == "RUNNING" and live.state(urgent) == "PENDING"
        assert live.state(victim) == "COMPLETING"
        live.executor.release(victim)
        wait_for("the urgent job to start", lambda: live.state(urgent) != "PENDING", 90)
        assert live.row(urgent)[1] == "g1" and live.state(victim) == "PREEMPTED"
        assert live.state(cheap) == "RUNNING"
        wait_for("the phase cleared", lambda: _phase(live, victim) == "", 60)


def _starts(live: Live, *ids: int) -> dict[int, float]:
    with live.ctl.sessions() as s:
        rows = {j: jobrepo.get(s, j) for j in ids}
    return {j: float(r.start_time or 0.0) for j, r in rows.items() if r is not None}


def _phase(live: Live, job_id: int) -> str:
    with live.ctl.sessions() as s:
        r = jobrepo.get(s, job_id)
        assert r is not None
        return r.preempt_phase
