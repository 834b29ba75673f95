"""Standard Workload Format (SWF, Parallel Workloads Archive) reader.

An SWF line has 18 whitespace-separated fields (extended logs such as the
Alea ones append more; they are kept in `original["extra"]`). Header lines
start with ';' and carry `MaxProcs`, `MaxNodes` and `UnixStartTime`.

Two filters:

- `strong`: exactly predictsim's `strong_filter_all_swf` (SC'15), in its order:
  1. drop allocated procs (f5) > MaxProcs, then requested procs (f8) > MaxProcs;
  2. if both f5 and f8 are > 0 keep them, else copy the positive one into the
     other, and drop the job if neither is;
  3. drop run time (f4) <= 0;  4. drop requested time (f9) <= 0;
  5. if f9 < f4 set f4 = f9;   6. drop submit (f2) < 0.
  KTH-SP2 keeps 28,481 jobs, SDSC-SP2 4.2-cln 53,999.
- `none`: keeps every record that has an arrival and a size (see
  docs/workloads.md for the rule applied to each -1 field).

Processors become GPUs: see `_request` and docs/workloads.md.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from tide.model import Cluster, Gpu, JobRequest, Node, Partition
from tide.sim.workload.base import SimJob, Workload, WorkloadError, WorkloadInfo, ceil_div

SwfFilter = Literal["strong", "none"]
Estimates = Literal["user", "exact"]

FIELDS = (
    "job", "submit", "wait", "run", "procs_alloc", "cpu_avg", "mem_used", "procs_req",
    "time_req", "mem_req", "status", "user", "group", "exe", "queue", "partition",
    "preceding", "think",
)  # fmt: skip
_EPOCH_LIKE = 1e8  # a first submit above this (~3 years) is an epoch time, not an offset


@dataclass(slots=True)
class SwfInfo(WorkloadInfo):
    gpus_per_node: int = 1

    def flat_cluster(self, gpus_per_node: int | None = None, gpu_type: str = "") -> Cluster:
        """ceil(MaxProcs / gpus_per_node) identical nodes, no topology, one
        default partition "batch". One processor of the log is one GPU."""
        gpn = gpus_per_node or self.gpus_per_node
        if not self.max_procs:
            raise WorkloadError(
                f"{self.source}: no '; MaxProcs:' header, so the machine's size is unknown; "
                "give it with --max-procs N (processors), or a cluster with --cluster"
            )
        count = ceil_div(self.max_procs, gpn)
        width = max(3, len(str(count)))
        nodes = [
            Node(
                name=f"n{i:0{width}d}",
                cpus=gpn,
                cores_per_socket=gpn,
                real_memory=1024 * gpn,
                gpus=[Gpu(index=g, type=gpu_type) for g in range(gpn)],
                partitions=("batch",),
            )
            for i in range(1, count + 1)
        ]
        name = Path(self.source).name.split(".")[0] or "swf"
        part = Partition("batch", nodes=tuple(n.name for n in nodes), default=True)
        return Cluster(name=name, nodes=nodes, partitions=[part])


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="latin-1")
    return path.open(encoding="latin-1")


def _read_header(path: Path, info: SwfInfo) -> None:
    with _open(path) as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if not s.startswith(";"):
                break
            key, _, value = s[1:].partition(":")
            key, value = key.strip(), value.strip()
            try:
                if key == "MaxProcs":
                    info.max_procs = int(value)
                elif key == "MaxNodes":
                    info.max_nodes = int(value)
                elif key == "UnixStartTime":
                    info.unix_start_time = int(value)
            except ValueError:
                info.notes.append(f"header {key}: {value!r} is not an integer; ignored")


def read_swf(
    path: str | Path,
    *,
    filter: SwfFilter = "strong",
    estimates: Estimates = "user",
    gpus_per_node: int = 1,
    max_procs: int | None = None,
    keep_original: bool = False,
) -> Workload:
    """Stream the jobs of an SWF log (`.swf` or `.swf.gz`) in file order.

    `max_procs` overrides the header's MaxProcs (the strong filter needs one).
    `estimates="exact"` sets every time limit to the (capped) run time.
    """
    p = Path(path)
    if not p.is_file():
        raise WorkloadError(f"SWF file {str(p)!r} does not exist")
    if filter not in ("strong", "none"):
        raise WorkloadError(f"filter={filter!r}: use 'strong' or 'none'")
    if estimates not in ("user", "exact"):
        raise WorkloadError(f"estimates={estimates!r}: use 'user' or 'exact'")
    if gpus_per_node < 1:
        raise WorkloadError(f"gpus_per_node={gpus_per_node}: must be >= 1")
    info = SwfInfo(source=str(p), kind="swf", gpus_per_node=gpus_per_node)
    _read_header(p, info)
    if max_procs is not None:
        info.max_procs = max_procs
    if filter == "strong" and not info.max_procs:
        raise WorkloadError(
            f"{p}: no '; MaxProcs:' header, and the strong filter drops jobs wider than "
            "the machine; give its size with --max-procs N (processors), or --swf-filter none"
        )

    def jobs(inf: WorkloadInfo) -> Iterator[SimJob]:
        assert isinstance(inf, SwfInfo)
        return _jobs(p, inf, filter, estimates, keep_original)

    return Workload(info, jobs)


def _fields(line: str, lineno: int, path: Path) -> list[float]:
    parts = line.split()
    if len(parts) < 18:
        raise WorkloadError(
            f"{path}:{lineno}: {len(parts)} fields, SWF needs 18; fix or remove the line"
        )
    try:
        return [float(x) for x in parts[:18]]
    except ValueError as e:
        msg = f"{path}:{lineno}: not a number ({e}); fix or remove the line"
        raise WorkloadError(msg) from None


def _jobs(
    path: Path, info: SwfInfo, filt: SwfFilter, estimates: Estimates, keep: bool
) -> Iterator[SimJob]:
    origin: float | None = 0.0 if info.unix_start_time is not None else None
    with _open(path) as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith(";"):
                continue
            raw = _fields(s, lineno, path)
            info.read += 1
            v = _strong(raw, info) if filt == "strong" else _lenient(raw, info)
            if v is None:
                continue
            if origin is None:  # no UnixStartTime: rebase epoch-like submits (Alea logs)
                origin = v[1] if v[1] > _EPOCH_LIKE else 0.0
                if origin:
                    info.unix_start_time = int(origin)
                    info.notes.append(f"submit times are epoch seconds; rebased to {origin:.0f}")
            job = _to_job(v, raw, info, estimates, origin)
            if keep:
                job.original = dict(zip(FIELDS, raw, strict=True))
                extra = s.split()[18:]
                if extra:
                    job.original["extra"] = extra
            yield job


def _strong(f: list[float], info: SwfInfo) -> list[float] | None:
    """predictsim's strong filter, rule by rule, in its order (1-based fields)."""
    m = info.max_procs or 0
    if f[4] > m:
        info.drop("allocated procs > MaxProcs")
        return None
    if f[7] > m:
        info.drop("requested procs > MaxProcs")
        return None
    f = list(f)
    if not (f[7] > 0 and f[4] > 0):
        if f[7] > 0:
            f[4] = f[7]
            info.adjust("allocated procs <= 0: set to requested")
        elif f[4] > 0:
            f[7] = f[4]
            info.adjust("requested procs <= 0: set to allocated")
        else:
            info.drop("no processor count (allocated and requested <= 0)")
            return None
    if f[3] <= 0:
        info.drop("run time <= 0")
        return None
    if f[8] <= 0:
        info.drop("requested time <= 0")
        return None
    if f[8] < f[3]:
        f[3] = f[8]
        info.adjust("run time > requested time: run capped at request")
    if f[1] < 0:
        info.drop("submit < 0")
        return None
    return f


def _lenient(f: list[float], info: SwfInfo) -> list[float] | None:
    """Filter `none`: keep every record with an arrival and a size."""
    f = list(f)
    if f[1] < 0:
        info.drop("submit time missing (-1)")
        return None
    if f[7] <= 0:
        if f[4] <= 0:
            info.drop("no processor count (allocated and requested <= 0)")
            return None
        f[7] = f[4]
        info.adjust("requested procs missing: set to allocated")
    if f[3] < 0:
        f[3] = 0.0
        info.adjust("run time missing (never ran): duration 0")
    if f[8] <= 0:
        f[8] = max(1.0, math.ceil(f[3]))
        info.adjust("requested time missing: limit = run time")
    if info.max_procs and f[7] > info.max_procs:
        info.adjust("wider than MaxProcs: kept, can never start")
    return f


def _to_job(
    f: list[float], raw: list[float], info: SwfInfo, estimates: Estimates, origin: float
) -> SimJob:
    jid, run, procs = int(f[0]), f[3], int(f[7])
    limit = int(f[8]) if estimates == "user" else max(1, math.ceil(run))
    uid, gid = int(raw[11]), int(raw[12])
    user = f"u{uid}" if uid >= 0 else "unknown"
    account = f"g{gid}" if gid >= 0 else "unknown"
    req = _request(procs, info, limit, f"job{jid}", account)
    return SimJob(
        id=jid, submit=f[1] - origin, duration=run, request=req, user=user, account=account
    )


def _request(procs: int, info: SwfInfo, limit: int, name: str, account: str) -> JobRequest:
    """One processor = one GPU. With one GPU per node a job of P processors
    asks for P nodes with one GPU each; with G > 1 GPUs per node it asks for
    P GPUs in total (--gpus=P) on ceil(P/G) to min(P, node count) nodes."""
    gpn = info.gpus_per_node
    if gpn == 1:
        return JobRequest(
            name=name, nodes_min=procs, nodes_max=procs, gpus_per_node=1,
            time_limit=limit, account=account,
        )  # fmt: skip
    nodes_total = ceil_div(info.max_procs, gpn) if info.max_procs else procs
    lo = ceil_div(procs, gpn)
    return JobRequest(
        name=name, nodes_min=lo, nodes_max=max(lo, min(procs, nodes_total)), gpus=procs,
        time_limit=limit, account=account,
    )  # fmt: skip
