"""examples/train_ddp.py outside tide (one process): a run resumed from its last
checkpoint ends with the same final loss as one that never stopped, also when
that checkpoint is the last step and no step is left to run (issue 15, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "torch", reason="examples/train_ddp.py needs torch; `make test` installs it where it can"
)

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "train_ddp.py"
SRC = Path(__file__).resolve().parents[2] / "src"


def _train(ckpt: Path, steps: int, every: int) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TIDE_"))}
    env |= {"TIDE_CHECKPOINT_DIR": str(ckpt), "PYTHONPATH": str(SRC)}
    cmd = [sys.executable, str(SCRIPT), "--steps", str(steps), "--every", str(every)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _final(lines: list[str]) -> str:
    (final,) = [ln for ln in lines if ln.startswith("final loss ")]
    return final


def test_resume_after_the_last_step_reports_the_checkpointed_loss(tmp_path: Path) -> None:
    whole = _train(tmp_path / "whole", steps=12, every=6)
    last_step = [ln for ln in whole if ln.startswith("step 11 ")]
    assert last_step and _final(whole) != "final loss None"
    # the same checkpoint dir again: the newest checkpoint is step 11, nothing is left to run
    again = _train(tmp_path / "whole", steps=12, every=6)
    assert again[0].startswith("start step 12 ")
    assert not [ln for ln in again if ln.startswith("step ")]
    assert _final(again) == _final(whole)
    assert float(_final(whole).split()[-1]) == pytest.approx(float(last_step[0].split()[3]))


def test_resume_in_the_middle_ends_with_the_same_loss(tmp_path: Path) -> None:
    whole = _train(tmp_path / "whole", steps=12, every=6)
    _train(tmp_path / "cut", steps=6, every=6)  # stops after the step-5 checkpoint
    resumed = _train(tmp_path / "cut", steps=12, every=6)
    assert resumed[0].startswith("start step 6 ")
    assert _final(resumed) == _final(whole)
