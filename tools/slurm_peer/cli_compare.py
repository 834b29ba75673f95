"""Slurm's commands on the real Slurm 22.05 peer and on tide's shims: the same
scenario, the same commands and flags, outputs recorded side by side.

    # the real side (root; a peer of 4 nodes x 8 GPUs, own dir and ports):
    python tools/slurm_peer/cli_compare.py record-slurm --peer-dir /tmp/slurm-peer-cli \\
        --out tests/data/slurm_cli/slurm.json
    # tide's side, against a tide server started from the same conf/ folder:
    TIDE_URL=... TIDE_TOKEN=... python tools/slurm_peer/cli_compare.py record-tide --out tide.json

tests/slurm/test_vs_real_slurm.py replays the scenario on a tide server of its own
and compares with the recorded real outputs, with `normalize` (job ids numbered in
order of appearance, times and dates masked): same lines, same columns.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# The scenario: run on 4 idle nodes of 8 GPUs and 64 CPUs (start.sh NODES=4).
SUBMITS = [
    ["--parsable", "-J", "long", "-N1", "--gres=gpu:8", "--wrap", "sleep 120"],
    ["--parsable", "-J", "arr", "--array=0-5%2", "-N1", "--gres=gpu:8", "--wrap", "sleep 120"],
    ["--parsable", "-J", "big", "-N4", "--gres=gpu:8", "-t", "10", "--wrap", "sleep 60"],
    ["--parsable", "-J", "quick", "-N1", "-c", "2", "--wrap", "true"],
]
COMMANDS = [
    ["squeue"],
    ["squeue", "-l"],
    ["squeue", "-r"],
    ["squeue", "-t", "PD"],
    ["squeue", "--me", "-p", "gpu"],
    ["squeue", "-h", "-o", "%i %t %j %D"],
    ["squeue", "-O", "Name,State,NumNodes,ReasonList"],
    ["sinfo"],
    ["sinfo", "-s"],
    ["sinfo", "-N"],
    ["sinfo", "-l"],
    ["sinfo", "-N", "-l"],
    ["sacct", "-X"],
    ["sacct"],
    ["sacct", "-b"],
    ["sacct", "-X", "-n"],
    ["sacct", "-P", "--format", "JobID,JobName,State,ExitCode,AllocCPUS,NNodes"],
    ["sacct", "-X", "-s", "CD", "-o", "JobID,JobName%15,State,ExitCode"],
    ["scontrol", "show", "hostnames", "node[001-003]"],
    ["scontrol", "show", "partition", "gpu"],
    ["scontrol", "show", "node", "node004"],
]

Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]


def record(
    run: Runner, settled: Callable[[list[str]], bool] | None = None, timeout: float = 90.0
) -> dict[str, object]:
    """Submit the scenario, wait until it settled (long and two array tasks running,
    quick ended; 6 s when no check is given), run every command; then cancel it all."""
    ids = []
    for argv in SUBMITS:
        done = run(["sbatch", *argv])
        ids.append(done.stdout.strip().split(";")[0])
        time.sleep(0.5)
    test_only = run(["sbatch", "--test-only", "-N1", "--gres=gpu:1", "--wrap", "true"])
    deadline = time.time() + (timeout if settled else 6.0)
    while time.time() < deadline and not (settled and settled(ids)):
        time.sleep(0.5)
    out: dict[str, object] = {"ids": ids, "test_only": test_only.stderr.strip()}
    for cmd in COMMANDS:
        done = run(cmd)
        out[" ".join(cmd)] = {"rc": done.returncode, "stdout": done.stdout}
    run(["scancel", *ids])
    return out


def slurm_runner(peer_dir: Path) -> Runner:
    env = {**os.environ, "SLURM_CONF": str(peer_dir / "etc" / "slurm.conf")}
    return lambda argv: subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def tide_runner(python: str = sys.executable, cwd: str | None = None) -> Runner:
    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        cmd = [python, "-m", "tide.slurm", *argv]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=cwd)

    return run


_TIMES = [  # dates first: masked after the times, they held "<T>" and the day showed
    (re.compile(r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\b"), "<DATE>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\b"), "<TS>"),
    (re.compile(r"\b(\d+-)?\d{1,2}:\d\d(:\d\d)?\b"), "<T>"),
    (re.compile(r"\bUNLIMITED\b"), "<T>"),  # Slurm shows some running jobs' limit as 365 days
]
_JOBID = re.compile(r"^(\s*)(\d+)(?=[_.\s|]|$)", re.MULTILINE)  # a line's first word


def normalize(text: str, ids: list[str]) -> str:
    """Times masked; the scenario's job ids (and array ids) named J1, J2... in
    submission order, so that a tide id and a Slurm id of the same job compare equal."""
    names = {jid: f"J{i + 1}" for i, jid in enumerate(ids)}
    for pattern, mask in _TIMES:
        text = pattern.sub(mask, text)
    return _JOBID.sub(lambda m: m.group(1) + names.get(m.group(2), m.group(2)), text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("side", choices=["record-slurm", "record-tide"])
    p.add_argument("--peer-dir", type=Path, default=Path("/tmp/slurm-peer-cli"))
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    run = slurm_runner(a.peer_dir) if a.side == "record-slurm" else tide_runner()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record(run), indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
