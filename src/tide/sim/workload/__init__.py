"""Workloads for the twin: readers (SWF, tide JSONL, Alibaba openb), the
synthetic generator and its presets, all producing `SimJob`s."""

from tide.sim.workload.base import SimJob, Workload, WorkloadError, WorkloadInfo
from tide.sim.workload.generate import generate, generate_iter, parse_shares, write_preset
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
