"""Install torch into the running Python for examples/train_ddp.py and its tests
(`make test` runs this with the venv's Python).

The release is tide[torch]'s in pyproject.toml (the one the tests ran on). A CPU
build is preferred: the PyTorch CPU index is added beside the machine's own index
when it answers (pip then takes `X+cpu` over the plain `X`, the higher version),
since PyPI's Linux build carries CUDA (several GB) that the example never uses.
Where that index is out of reach, the machine's index serves the same release,
then any release. If none installs, this says so and exits 0: the tests that need
torch skip with a message, everything else still runs.

TIDE_TORCH_INDEX=URL names another CPU index; TIDE_TORCH_INDEX=none skips it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def tested_requirement() -> str:
    """tide[torch]'s requirement, e.g. torch==2.13.0."""
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    return str(extras["torch"][0])


def have_torch() -> bool:
    probe = [sys.executable, "-c", "import torch"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def answers(index: str, timeout: float = 5.0) -> bool:
    """Whether the index serves a torch page now (a closed network fails fast)."""
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/torch/", timeout=timeout) as r:
            return bool(r.status == 200)
    except (OSError, ValueError):
        return False


def pip_install(*args: str) -> bool:
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *args]
    print("+", " ".join(cmd[2:]), flush=True)
    return subprocess.run(cmd).returncode == 0


def attempts(requirement: str) -> list[tuple[str, list[str]]]:
    index = os.environ.get("TIDE_TORCH_INDEX", CPU_INDEX)
    tries: list[tuple[str, list[str]]] = []
    if index != "none" and answers(index):
        tries.append((f"CPU build from {index}", ["--extra-index-url", index, requirement]))
    elif index != "none":
        print(f"[torch] {index} does not answer: using this machine's package index", flush=True)
    tries.append((f"{requirement} from the package index", [requirement]))
    tries.append(("any torch release from the package index", ["torch"]))
    return tries


def main() -> int:
    if have_torch():
        print("[torch] already installed", flush=True)
        return 0
    requirement = tested_requirement()
    for what, args in attempts(requirement):
        print(f"[torch] installing {what} (for examples/train_ddp.py)", flush=True)
        if pip_install(*args) and have_torch():
            return 0
    print(
        "[torch] could not be installed from any index this machine reaches: "
        "the tests of examples/train_ddp.py will be skipped",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
