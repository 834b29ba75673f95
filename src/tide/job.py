"""Helpers for code running inside a tide job: the checkpoint protocol (docs/recovery.md).

    import tide.job as job

    job.install_signal_handler()          # --signal / preemption warning -> should_checkpoint()
    start = 0
    if (last := job.latest_checkpoint()) is not None:
        step, path = last                   # a restarted job resumes here
        start = load(path) + 1
    job.declare_model(params=7e9)          # for MFU: FLOPs per token = 6 x params
    for step in range(start, steps):
        train_one_step()
        job.notify_step(step, tokens=batch * seq_len)  # tokens/s, step time, MFU
        if step % 100 == 0 or job.should_checkpoint():
            save(job.checkpoint_path(step))  # write, then
            job.notify_checkpoint(step)      # tell tide: work before this survives

Only the standard library (and tide.efficiency, which uses nothing else) is
used, so the helper works in any environment with tide's source on the path
(tide puts it in TIDE_PYTHONPATH). Outside a
tide job the functions still work: the checkpoint dir defaults to
./checkpoints and reports are skipped. A report that cannot reach the server
prints a warning and never stops training.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Any

from tide.efficiency import bucket

_CKPT = re.compile(r"^ckpt-(\d+)\.[A-Za-z0-9]+$")
STEP_EVERY = 1.0  # seconds between step reports


def _new_state() -> dict[str, Any]:
    return {
        "warned": False,
        "last_step": -1e9,  # monotonic time of the last report sent
        "tokens": 0.0,  # tokens since the last report sent
        "model": {},
        "prev": None,  # (step, monotonic time) of the previous notify_step call
        "sketch": {},  # step-time bucket -> steps since the last report sent
        "unsent": None,  # the step of a call not reported yet (sent at exit)
        "atexit": False,
    }


_state = _new_state()


def job_id() -> str:
    """This job's id ("" outside a job)."""
    return os.environ.get("SLURM_JOB_ID", "")


def restart_count() -> int:
    """How many times this job was requeued: 0 on its first run."""
    text = os.environ.get("TIDE_RESTART_COUNT") or os.environ.get("SLURM_RESTART_COUNT") or "0"
    return int(text) if text.isdigit() else 0


def rank() -> int:
    """The task's global rank (0 in the batch script)."""
    text = os.environ.get("RANK") or os.environ.get("SLURM_PROCID") or "0"
    return int(text) if text.isdigit() else 0


def checkpoint_dir() -> Path:
    """The job's checkpoint directory: one per job, kept across its restarts."""
    path = Path(os.environ.get("TIDE_CHECKPOINT_DIR") or "checkpoints")
    path.mkdir(parents=True, exist_ok=True)
    return path


def checkpoint_path(step: int, suffix: str = "pt") -> Path:
    """Where the checkpoint of `step` goes: <checkpoint_dir>/ckpt-<step>.<suffix>.
    Write to a temporary name and rename (atomic_write does): a crash in the
    middle of a save must not leave a checkpoint that looks whole."""
    return checkpoint_dir() / f"ckpt-{step:09d}.{suffix}"


def latest_checkpoint() -> tuple[int, Path] | None:
    """(step, path) of the newest complete checkpoint, or None on a first run."""
    found = []
    for p in checkpoint_dir().iterdir():
        m = _CKPT.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return max(found) if found else None


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see all of it or nothing."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def install_signal_handler(*signals: int) -> None:
    """Catch the warning tide sends before a time limit or a preemption
    (--signal, SIGUSR1 by default; SIGTERM at the kill itself), so the job can
    save: should_checkpoint() then answers True once."""
    for sig in signals or (signal.SIGUSR1, signal.SIGTERM):
        signal.signal(sig, _on_warning)


def _on_warning(_sig: int, _frame: FrameType | None) -> None:
    _state["warned"] = True


def should_checkpoint() -> bool:
    """True once after the warning signal arrived."""
    warned = bool(_state["warned"])
    _state["warned"] = False
    return warned


def declare_model(params: float | None = None, flops_per_token: float | None = None) -> None:
    """Declare the model's size for MFU: its training FLOPs per token, or its
    parameter count (FLOPs per token = 6 x params). Sent with the next step
    report; a --comment declaration of the job does the same."""
    if flops_per_token is not None:
        _state["model"] = {"flops_per_token": float(flops_per_token)}
    elif params is not None:
        _state["model"] = {"params": float(params)}


def notify_step(step: int, every: float = STEP_EVERY, tokens: float = 0) -> None:
    """Report training step `step` and the `tokens` it processed (rank 0 only;
    others return at once). At most one report per `every` seconds goes out
    (the first always does): a fast loop must not turn into one HTTP request
    and one commit per step. Tokens of the steps in between add up and go
    with the next report, so tokens/s stays exact; so does each step's time:
    the time between two calls, divided over the steps between them, goes
    into a small histogram (2 % buckets) sent with the report, so step time
    percentiles are per step, not per report. What is left at exit is sent
    then."""
    if rank() != 0:
        return
    now = time.monotonic()
    _measure(int(step), now)
    _state["tokens"] += float(tokens)
    _state["unsent"] = int(step)
    if not _state["atexit"]:
        atexit.register(_flush)
        _state["atexit"] = True
    if now - _state["last_step"] < every:
        return
    _state["last_step"] = now
    _send_step(int(step))


def _measure(step: int, now: float) -> None:
    """Add the steps since the previous call to the sketch, each taking the
    interval's time divided by their count (exact when called every step)."""
    prev = _state["prev"]
    if prev is not None and step > prev[0] and now > prev[1]:
        n = step - prev[0]
        k = bucket((now - prev[1]) / n)
        _state["sketch"][k] = _state["sketch"].get(k, 0) + n
    if prev is None or step != prev[0]:  # a step going back (a reload) starts over
        _state["prev"] = (step, now)


def _send_step(step: int) -> None:
    body: dict[str, object] = {"event": "step", "step": step}
    if _state["tokens"]:
        body["tokens"] = _state["tokens"]
    if _state["sketch"]:
        body["step_times"] = {str(k): n for k, n in _state["sketch"].items()}
    body.update(_state["model"])
    _state["tokens"], _state["sketch"], _state["unsent"] = 0.0, {}, None
    _notify(body)


def _flush() -> None:
    """At exit: the steps since the last report, if any (their tokens and times)."""
    if _state["unsent"] is not None and (_state["tokens"] or _state["sketch"]):
        _send_step(_state["unsent"])


def notify_checkpoint(step: int) -> None:
    """Report that the checkpoint of `step` is complete and durable (rank 0 only):
    a failure after this loses only the work done since."""
    _notify({"event": "checkpoint", "step": int(step)})


def _notify(body: dict[str, object]) -> None:
    url, token, jid = os.environ.get("TIDE_URL"), os.environ.get("TIDE_JOB_TOKEN"), job_id()
    if rank() != 0 or not (url and token and jid):
        return
    req = urllib.request.Request(
        f"{url.rstrip('/')}/v1/jobs/{jid}/notify",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
    except (urllib.error.URLError, OSError) as e:
        print(f"tide.job: could not report {body} to {url}: {e}", file=sys.stderr, flush=True)
