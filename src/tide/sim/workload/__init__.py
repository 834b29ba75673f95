"""Workloads for the twin: readers (SWF, tide JSONL, Alibaba openb), the
synthetic generator and its presets, all producing `SimJob`s.

The names below load on first use: a replay of one SWF log does not import
the generator, its presets or the other readers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tide.lazy import lazy_names
from tide.sim.workload.base import SimJob, Workload, WorkloadError, WorkloadInfo

if TYPE_CHECKING:
    from tide.sim.workload.generator import generate, generate_iter, parse_shares, write_preset
    from tide.sim.workload.jsonl import read_jsonl, write_jsonl
    from tide.sim.workload.model import Dist, Estimates, FixedJob, GeneratorModel, Stream
    from tide.sim.workload.openb import openb_cluster, read_openb
    from tide.sim.workload.presets import PRESETS, preset
    from tide.sim.workload.swf import SwfInfo, read_swf

__all__ = [
    "PRESETS",
    "Dist",
    "Estimates",
    "FixedJob",
    "GeneratorModel",
    "SimJob",
    "Stream",
    "SwfInfo",
    "Workload",
    "WorkloadError",
    "WorkloadInfo",
    "generate",
    "generate_iter",
    "openb_cluster",
    "parse_shares",
    "preset",
    "read_jsonl",
    "read_openb",
    "read_swf",
    "write_jsonl",
    "write_preset",
]
_HOME = {
    **dict.fromkeys(("generate", "generate_iter", "parse_shares", "write_preset"), "generator"),
    **dict.fromkeys(("read_jsonl", "write_jsonl"), "jsonl"),
    **dict.fromkeys(("Dist", "Estimates", "FixedJob", "GeneratorModel", "Stream"), "model"),
    **dict.fromkeys(("openb_cluster", "read_openb"), "openb"),
    **dict.fromkeys(("PRESETS", "preset"), "presets"),
    **dict.fromkeys(("SwfInfo", "read_swf"), "swf"),
}


__getattr__ = lazy_names(__name__, _HOME, globals())
