"""A REQUEUE victim whose end a restarted controller learns of (docs/preemption.md,
"The live server"): the controller stops during the victim's grace, the victim
ends while none runs, and the next controller collects that end at its start
(lifecycle.reconcile) before its preemption tick looks at the grace.

An end after the kill time is the preemption's kill (services.grace): the history
says "preempted by job N", the lost work is counted once and the requeue once.
Before, the end collected first went down the "left within its grace" path
whatever its time: requeued and parked, but never recorded as preempted by its
preemptor (a loaded CI run of test_preemption_e2e's restart test lost the event
this way). An end before the kill time is still a victim that left within its
grace: not killed. Real controllers, real local executor and processes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from serverproc import wait_for
from test_completing_live import Live

from tide.exec import jobdir
from tide.store import accounting
from tide.store import jobs as jobrepo
from tide.store.models import AttemptRow, JobEventRow, JobRow

pytestmark = pytest.mark.slow
GRACE = 5.0  # long enough that the first controller is stopped before the kill time

CLUSTER = """
name: gr
nodes:
- names: g1
  cpus: 4
  sockets: 1
  cores_per_socket: 4
  threads_per_core: 1
  real_memory: 8000
  gpus: {count: 4, type: a100}
partitions:
- {name: gpu, nodes: g1, default: true, max_time: 1h, default_time: 30m}
scheduler:
  bf_interval: 1s
  preempt_type: preempt/qos
qos:
  normal: {}
  low: {preempt_mode: REQUEUE, grace_time: 5s}
  high: {priority: 1000, preempt: [low]}
accounts:
  root: {}
  physics: {}
"""


def _victim(tmp: Path) -> str:
    """Runs through its signal, and ends when the test says so; its rerun ends at once."""
    return (f"#!/bin/bash\n[ \"$SLURM_RESTART_COUNT\" = 1 ] && exit 0\n"
            f"trap 'echo USR1 >> {tmp}/sig' USR1\ntouch {tmp}/ready\n"
            f"while [ ! -e {tmp}/go ]; do sleep 0.1; done\n")  # fmt: skip


def _read(live: Live, job_id: int) -> tuple[JobRow, list[JobEventRow], list[AttemptRow]]:
    with live.ctl.sessions() as s:
        row = jobrepo.get(s, job_id)
        assert row is not None
        s.expunge(row)
        return row, jobrepo.events(s, job_id), accounting.attempts(s, [job_id])


@pytest.mark.parametrize("ends", ["after the kill time", "within the grace"])
def test_an_end_seen_by_a_restarted_controller_is_the_kill_once_the_grace_is_over(
    tmp_path: Path, ends: str
) -> None:
    path = tmp_path / "gr.yaml"
    path.write_text(CLUSTER)
    with Live(tmp_path, path) as live:
        victim = live.submit(_victim(tmp_path), "-A", "physics", "--qos=low",
                             "--gpus-per-node=4", "--signal=B:USR1@5")  # fmt: skip
        wait_for("the victim's trap", (tmp_path / "ready").exists, 60)
        urgent = live.submit("#!/bin/sh\nsleep 1\n", "-A", "physics", "--qos=high",
                             "--gpus-per-node=4", "-t", "5")  # fmt: skip
        wait_for("the grace", lambda: _read(live, victim)[0].preempt_phase == "grace", 60)
    # the controller is down: the victim runs on (its signal trapped), in its grace
    row = _read(live, victim)[0]
    assert row.state == "RUNNING" and row.preempt_kill_at is not None
    kill_at = row.preempt_kill_at
    exit_file = live.executor.job_dir(victim) / jobdir.EXIT
    if ends == "after the kill time":
        time.sleep(max(0.0, kill_at - time.time()) + 0.5)
    (tmp_path / "go").touch()
    wait_for("the victim's end", exit_file.exists, 60)
    time.sleep(max(0.0, kill_at - time.time()) + 0.5)  # the grace is over either way
    with Live(tmp_path, path) as live:
        wait_for("the victim's rerun", lambda: _read(live, victim)[0].state == "COMPLETED", 90)
        row, events, attempts = _read(live, victim)
        u = _read(live, urgent)[0]
    first, late = attempts[0], ends == "after the kill time"
    assert first.end_time is not None and (first.end_time >= kill_at) == late
    assert (tmp_path / "sig").read_text().split() == ["USR1"]  # it got its signal once
    kills = [e for e in events if e.reason.startswith(f"preempted by job {urgent} ")]
    if late:
        # the kill it stands for, at its real end: after the whole grace
        assert len(kills) == 1 and kills[0].time == pytest.approx(first.end_time)
        assert kills[0].time - (row.preempt_time or 0.0) >= GRACE
    else:
        assert kills == []  # it left within its grace: not killed
    # requeued once, parked until its preemptor started, lost work counted once
    assert row.restarts == 1 and row.preemptions == 1 and len(attempts) == 2
    assert u.state == "COMPLETED" and u.start_time is not None
    assert attempts[1].start_time >= u.start_time
    lost = 4 * (first.end_time - first.start_time)  # no checkpoint: since its start
    assert row.preempt_lost == pytest.approx(lost, abs=0.5)
    assert row.lost_gpu_seconds == pytest.approx(lost, abs=0.5)
    assert first.lost_gpu_seconds == pytest.approx(lost, abs=0.5)
    assert row.preempt_phase == ""
