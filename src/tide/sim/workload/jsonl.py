"""tide JSONL workloads: one job per line, read and written.

A line is a JSON object with `submit` and `duration` (seconds from the trace
start) and the job's shape, either as `sbatch` (a string of sbatch options,
parsed by tide.jobspec.sbatch) or as structured fields (`STRUCTURED`).
Blank lines and lines starting with '#' are skipped. docs/workloads.md has
the full field list and an example.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import IO, Any

from tide.hostlist import compress
from tide.model import JobRequest
from tide.sim.workload import fields as fp
from tide.sim.workload.base import SimJob, TrainModel, Workload, WorkloadError, WorkloadInfo


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r}: must be an integer >= 0")
    return value


# JSON key -> (JobRequest attribute, parser)
_SIMPLE: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "gpus": ("gpus", _count),
    "gpus_per_node": ("gpus_per_node", _count),
    "gpus_per_task": ("gpus_per_task", _count),
    "gpu_type": ("gpu_type", fp.text),
    "ntasks": ("ntasks", fp.positive_int),
    "ntasks_per_node": ("ntasks_per_node", fp.positive_int),
    "cpus_per_task": ("cpus_per_task", fp.positive_int),
    "cpus_per_gpu": ("cpus_per_gpu", fp.positive_int),
    "mem": ("mem_per_node", fp.memory_mb),
    "mem_per_gpu": ("mem_per_gpu", fp.memory_mb),
    "mem_per_cpu": ("mem_per_cpu", fp.memory_mb),
    "time_limit": ("time_limit", fp.slurm_time),
    "time_min": ("time_min", fp.slurm_time),
    "partition": ("partitions", fp.names),
    "account": ("account", fp.text),
    "qos": ("qos", fp.text),
    "constraint": ("constraint", fp.text),
    "reservation": ("reservation", fp.text),
    "exclusive": ("exclusive", fp.boolean),
    "requeue": ("requeue", fp.boolean),
    "hold": ("hold", fp.boolean),
    "nice": ("nice", fp.integer),
    "priority": ("priority", fp.integer),
    "nodelist": ("nodelist", fp.hostlist),
    "exclude": ("exclude", fp.hostlist),
    "begin": ("begin", fp.seconds),
}
STRUCTURED = frozenset({*_SIMPLE, "nodes", "switches"})
TRAIN_KEYS = ("params", "flops_per_token", "tokens_per_step", "mfu")
_JOB_KEYS = frozenset(
    {"id", "submit", "duration", "user", "name", "checkpoint_interval", "checkpoint_cost",
     "sbatch", "request", "meta", "array_job_id", "array_task_id", "state", *TRAIN_KEYS}
)  # fmt: skip


def _fail(where: str, key: str, msg: str) -> WorkloadError:
    return WorkloadError(f"{where}: field {key!r}: {msg}")


def _get(obj: dict[str, Any], key: str, parse: Callable[[Any], Any], where: str) -> Any:
    try:
        return parse(obj[key])
    except ValueError as e:
        raise _fail(where, key, str(e)) from None


def structured_request(obj: dict[str, Any], name: str, where: str) -> JobRequest:
    """A JobRequest from the structured fields of one line."""
    kw: dict[str, Any] = {"name": name}
    for key, (attr, parse) in _SIMPLE.items():
        if key in obj:
            kw[attr] = _get(obj, key, parse, where)
    if "nodes" in obj:
        kw["nodes_min"], kw["nodes_max"] = _get(obj, "nodes", fp.node_range, where)
    if "switches" in obj:
        kw["switches"], kw["switches_wait"] = _get(obj, "switches", fp.switches, where)
    return JobRequest(**kw)


def _sbatch_request(
    text: str, name: str, default_name: str, now: float, where: str, original: dict[str, Any]
) -> JobRequest:
    """Parse `sbatch` with tide.jobspec.sbatch when it is installed; until then
    keep the string in original["sbatch"] for the engine to parse later."""
    original["sbatch"] = text
    try:
        from tide.jobspec.sbatch import parse_args  # type: ignore[import-not-found]
    except ImportError:
        return JobRequest(name=name or default_name)
    try:
        out = parse_args(shlex.split(text), now=now)  # --begin=now+1hour: from the submit
    except ValueError as e:  # JobSpecError: its message names the option and the fix
        raise _fail(where, "sbatch", str(e)) from None
    req = getattr(out, "request", out)
    if isinstance(req, tuple):
        req = req[0]
    if not isinstance(req, JobRequest):
        raise _fail(where, "sbatch", f"the parser returned {type(out).__name__}, not a request")
    if name or req.name in ("", "sbatch"):  # the line's "name" wins over -J
        req = replace(req, name=name or default_name)
    return req


def parse_line(obj: Any, seq: int, where: str) -> SimJob:
    """One decoded JSON line -> SimJob. `seq` is the default id."""
    if not isinstance(obj, dict):
        raise WorkloadError(f"{where}: a line must be a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - STRUCTURED - _JOB_KEYS)
    if unknown:
        raise _fail(where, unknown[0], "unknown field; see docs/workloads.md for the list")
    for key in ("submit", "duration"):
        if key not in obj:
            raise _fail(where, key, "missing; every job needs submit and duration (seconds)")
    jid = _get(obj, "id", fp.integer, where) if "id" in obj else seq
    submit = _get(obj, "submit", fp.seconds, where)
    given = _get(obj, "name", fp.text, where) if "name" in obj else ""
    original: dict[str, Any] = {}
    if "meta" in obj:
        original["meta"] = obj["meta"]
    if "request" in obj:  # a job exported from the controller: its stored request, whole
        others = sorted((STRUCTURED | {"sbatch"}) & set(obj))
        if others:
            raise _fail(where, others[0], "give the shape in one of 'request', 'sbatch' or "
                        "fields, not several")  # fmt: skip
        request = _stored_request(obj["request"], where)
        original["request"] = True
    elif "sbatch" in obj:
        both = sorted(STRUCTURED & set(obj))
        if both:
            raise _fail(where, both[0], "give the shape either in 'sbatch' or as fields, not both")
        text = _get(obj, "sbatch", fp.text, where)
        request = _sbatch_request(text, given, f"job{jid}", submit, where, original)
    else:
        request = structured_request(obj, given or f"job{jid}", where)
    interval = obj.get("checkpoint_interval")
    return SimJob(
        id=jid,
        submit=submit,
        duration=_get(obj, "duration", fp.seconds, where),
        request=request,
        user=_get(obj, "user", fp.text, where) if "user" in obj else "user",
        account=request.account,
        name=request.name,
        checkpoint_interval=None if interval is None else _get(
            obj, "checkpoint_interval", fp.seconds, where),
        checkpoint_cost=_get(obj, "checkpoint_cost", fp.seconds, where)
        if "checkpoint_cost" in obj else 0.0,
        original=original,
        train=train_model(obj, where),
        array=_array(obj, where),
        end_state=_end_state(obj, where),
    )  # fmt: skip


END_STATES = ("COMPLETED", "FAILED")


def _array(obj: dict[str, Any], where: str) -> tuple[int, int] | None:
    """An array task: `array_job_id` (the array's id, as dependencies name it) and
    `array_task_id` together; the throttle (%N) comes from the job's --array."""
    if "array_job_id" not in obj and "array_task_id" not in obj:
        return None
    for key in ("array_job_id", "array_task_id"):
        if key not in obj:
            raise _fail(where, key, "missing; an array task needs array_job_id and "
                        "array_task_id")  # fmt: skip
    return (_get(obj, "array_job_id", fp.integer, where),
            _get(obj, "array_task_id", fp.integer, where))  # fmt: skip


def _end_state(obj: dict[str, Any], where: str) -> str:
    """The state a job ends in when its `duration` is up before its limit (a recorded
    failure: FAILED; dependencies such as afterok/afternotok look at it)."""
    state = str(obj.get("state", "COMPLETED")).upper()
    if state not in END_STATES:
        raise _fail(where, "state", f"{obj['state']!r}: use one of {', '.join(END_STATES)}")
    return sys.intern(state)  # one string per state, not one per job (kept after it ends)


def _stored_request(value: Any, where: str) -> JobRequest:
    """`request`: a JobRequest as the controller stores it (tide.store.codec)."""
    from tide.store.codec import request_from_dict

    if not isinstance(value, dict):
        raise _fail(where, "request", "must be an object (tide sim export writes it)")
    try:
        return request_from_dict(value)
    except (TypeError, ValueError, KeyError) as e:
        raise _fail(where, "request", f"not a stored job request ({e})") from None


def train_model(obj: dict[str, Any], where: str) -> TrainModel | None:
    """A training job's model from `params` (FLOPs per token = 6 x params) or
    `flops_per_token`, with `tokens_per_step` and `mfu`; None when the line
    declares none of them."""
    given = [k for k in TRAIN_KEYS if k in obj]
    if not given:
        return None
    if "flops_per_token" in obj:
        fpt = _get(obj, "flops_per_token", fp.amount, where)
    elif "params" in obj:
        fpt = 6.0 * _get(obj, "params", fp.amount, where)
    else:
        raise _fail(where, given[0], "declares no model: add params (e.g. \"7B\") or "
                    "flops_per_token")  # fmt: skip
    return TrainModel(
        flops_per_token=fpt,
        tokens_per_step=_get(obj, "tokens_per_step", fp.amount, where)
        if "tokens_per_step" in obj else None,
        mfu=_get(obj, "mfu", fp.fraction, where) if "mfu" in obj else None,
    )  # fmt: skip


def read_jsonl(path: str | Path) -> Workload:
    """Stream the jobs of a tide JSONL file; submit times must not decrease."""
    p = Path(path)
    if not p.is_file():
        raise WorkloadError(f"JSONL file {str(p)!r} does not exist")
    info = WorkloadInfo(source=str(p), kind="jsonl", meta=read_header(p))
    return Workload(info, lambda inf: _jobs(p, inf))


def read_header(path: Path) -> dict[str, str]:
    """The "# key: value" comment lines before the first job (cluster, preset,
    seed, shares), as write_jsonl writes them."""
    meta: dict[str, str] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s and not s.startswith("#"):
                break
            key, sep, value = s.lstrip("#").partition(":")
            if sep and key.strip() and " " not in key.strip():
                meta[key.strip()] = value.strip()
    return meta


def _jobs(path: Path, info: WorkloadInfo) -> Iterator[SimJob]:
    last = -math.inf
    seen: dict[int, int] = {}  # id -> line: the engine keys jobs by id
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(s)
            except json.JSONDecodeError as e:
                msg = f"{where}: not valid JSON ({e.msg} at column {e.colno})"
                raise WorkloadError(msg) from None
            info.read += 1
            job = parse_line(obj, info.read, where)
            if job.submit < last:
                raise _fail(where, "submit", f"{job.submit:g} is earlier than the line before "
                            f"({last:g}); sort the file by submit")  # fmt: skip
            last = job.submit
            if job.id in seen:
                raise _fail(where, "id", f"{job.id} is already used on line {seen[job.id]}; "
                            "ids must be unique")  # fmt: skip
            seen[job.id] = lineno
            yield job


# ---------------------------------------------------------------- writing

_DEFAULTS = JobRequest()


def _num(x: float) -> int | float:
    """Integral floats as ints, so files read like hand-written ones."""
    return int(x) if float(x).is_integer() else x


def _hms(s: int) -> str:
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def job_to_dict(job: SimJob) -> dict[str, Any]:
    """The structured (or sbatch) JSON form of a job; raises WorkloadError if
    the request has something the format cannot say (dependencies, arrays)."""
    out: dict[str, Any] = {"id": job.id, "submit": _num(job.submit),
                           "duration": _num(job.duration), "name": job.name}  # fmt: skip
    if job.user != "user":
        out["user"] = job.user
    r = job.request
    if job.original.get("request"):
        from tide.store.codec import request_to_dict

        out["request"] = request_to_dict(job.request)
    elif "sbatch" in job.original:
        out["sbatch"] = job.original["sbatch"]
    else:
        _check_expressible(job.id, r)
        out.update(_request_dict(r))
    if job.checkpoint_interval is not None:
        out["checkpoint_interval"] = _num(job.checkpoint_interval)
    if job.checkpoint_cost:
        out["checkpoint_cost"] = _num(job.checkpoint_cost)
    if job.train is not None:
        out["flops_per_token"] = _num(job.train.flops_per_token)
        if job.train.tokens_per_step is not None:
            out["tokens_per_step"] = _num(job.train.tokens_per_step)
        if job.train.mfu is not None:
            out["mfu"] = job.train.mfu
    if "meta" in job.original:
        out["meta"] = job.original["meta"]
    if job.array is not None:
        out["array_job_id"], out["array_task_id"] = job.array
    if job.end_state != "COMPLETED":
        out["state"] = job.end_state
    return out


_WRITTEN = {"name", "warnings", "nodes_min", "nodes_max", "switches", "switches_wait",
            *(attr for attr, _ in _SIMPLE.values())}  # fmt: skip
_UNWRITTEN = tuple(f.name for f in fields(JobRequest) if f.name not in _WRITTEN)


def _check_expressible(job_id: int, r: JobRequest) -> None:
    bad = [a for a in _UNWRITTEN if getattr(r, a) != getattr(_DEFAULTS, a)]
    if r.nodes_max is not None and r.nodes_min is None:
        bad.append("nodes_max without nodes_min")
    if r.switches_wait is not None and r.switches is None:
        bad.append("switches_wait without switches")
    if bad:
        raise WorkloadError(f"job {job_id}: write_jsonl cannot express {', '.join(bad)}")


def _request_dict(r: JobRequest) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if r.nodes_min is not None:
        hi = r.nodes_max or r.nodes_min
        out["nodes"] = r.nodes_min if hi == r.nodes_min else f"{r.nodes_min}-{hi}"
    for key, (attr, _) in _SIMPLE.items():
        value = getattr(r, attr)
        if value == getattr(_DEFAULTS, attr):
            continue
        if attr == "partitions":
            value = ",".join(value)
        elif attr in ("nodelist", "exclude"):
            value = compress(value)
        elif attr == "begin":
            value = _num(value)
        out[key] = value
    if r.switches is not None:
        w = r.switches_wait
        out["switches"] = r.switches if w is None else f"{r.switches}@{_hms(w)}"
    return out


def write_jsonl(
    jobs: Iterable[SimJob], path: str | Path | IO[str], header: Mapping[str, str] | None = None
) -> int:
    """Write jobs one per line (keys in a fixed order) after optional
    "# key: value" header lines; returns the number of jobs."""
    if isinstance(path, str | Path):
        with Path(path).open("w", encoding="utf-8") as f:
            return write_jsonl(jobs, f, header)
    for key, value in (header or {}).items():
        path.write(f"# {key}: {' '.join(str(value).split())}\n")
    n = 0
    for job in jobs:
        path.write(json.dumps(job_to_dict(job), separators=(", ", ": ")) + "\n")
        n += 1
    return n
