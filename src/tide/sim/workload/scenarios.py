"""Small workloads shipped with tide (tide/data/scenarios/NAME.jsonl).

Each file starts with "# key: value" header lines (preset, seed, cluster,
shares) and is byte-identical to `write_preset(NAME, seed, path)`, which
tests/sim/test_workload_generate.py checks.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tide.sim.workload.base import Workload, WorkloadError
from tide.sim.workload.jsonl import read_jsonl

# name -> (preset, seed) that generated the file. Only presets whose cluster is a bundled
# cluster file are shipped as JSONL: the others (seed000, month1000) build their Cluster in
# code, so `tide sim --scenario NAME` generates them from the preset instead.
BUNDLED: dict[str, tuple[str, int]] = {"demo": ("demo", 0)}


def scenario_path(name: str) -> Path:
    """The path of a bundled scenario, or a WorkloadError listing them."""
    if name not in BUNDLED:
        raise WorkloadError(
            f"no bundled scenario {name!r}; choose one of {', '.join(sorted(BUNDLED))}, "
            "or generate one with `tide sim generate --preset NAME --out FILE.jsonl`"
        )
    return Path(str(resources.files("tide") / "data" / "scenarios" / f"{name}.jsonl"))


def read_scenario(name: str) -> Workload:
    return read_jsonl(scenario_path(name))
