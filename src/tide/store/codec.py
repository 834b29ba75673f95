"""JSON round-trips for the model objects the store keeps whole.

Explicit per type (not pickle, not a generic walker): the JSON is a stable
storage format and the API's wire format, so renaming a Python field must
not silently change it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from tide.model import (
    ArraySpec,
    Dependency,
    DependencyItem,
    DependencyType,
    JobRequest,
    Limits,
    SignalSpec,
)
from tide.sched.types import Allocation, NodeAlloc

_REQ_FIELDS = {f.name for f in fields(JobRequest)}
_TUPLE_FIELDS = {"partitions", "nodelist", "exclude", "warnings"}
_DEFAULTS = tuple((name, getattr(JobRequest(), name)) for name in sorted(_REQ_FIELDS))


def request_to_dict(req: JobRequest) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, default in _DEFAULTS:
        value = getattr(req, name)
        if value == default and name != "name":
            continue  # compact: only what differs from "not given"
        if name == "dependency":
            out[name] = dependency_to_dict(value)
        elif name == "array":
            out[name] = {"task_ids": list(value.task_ids), "max_running": value.max_running}
        elif name == "signal":
            out[name] = asdict(value)
        elif name in _TUPLE_FIELDS:
            out[name] = list(value)
        else:
            out[name] = value
    return out


def request_from_dict(data: dict[str, Any]) -> JobRequest:
    kw: dict[str, Any] = {}
    for name, value in data.items():
        if name not in _REQ_FIELDS:
            raise ValueError(f"unknown job field {name!r}")
        if value is None:
            kw[name] = None
        elif name == "dependency":
            kw[name] = dependency_from_dict(value)
        elif name == "array":
            kw[name] = ArraySpec(tuple(int(t) for t in value["task_ids"]), value.get("max_running"))
        elif name == "signal":
            kw[name] = SignalSpec(**value)
        elif name in _TUPLE_FIELDS:
            kw[name] = tuple(value)
        else:
            kw[name] = value
    return JobRequest(**kw)


def dependency_to_dict(dep: Dependency) -> dict[str, Any]:
    return {
        "any_of": dep.any_of,
        "items": [
            {"type": str(i.type), "job_ids": list(i.job_ids), "delay": i.delay} for i in dep.items
        ],
    }


def dependency_from_dict(data: dict[str, Any]) -> Dependency:
    items = tuple(
        DependencyItem(DependencyType(i["type"]), tuple(i.get("job_ids", ())), i.get("delay", 0))
        for i in data.get("items", ())
    )
    return Dependency(items, bool(data.get("any_of", False)))


def dependency_text(dep: Dependency | None) -> str:
    """Slurm's spelling: afterok:12:13,singleton (or '?' between items)."""
    if dep is None:
        return ""
    parts = []
    for i in dep.items:
        ids = "".join(f":{j}" + (f"+{i.delay // 60}" if i.delay else "") for j in i.job_ids)
        parts.append(f"{i.type}{ids}")
    return ("?" if dep.any_of else ",").join(parts)


def request_json(req: JobRequest) -> str:
    return json.dumps(request_to_dict(req), separators=(",", ":"))


def request_from_json(text: str) -> JobRequest:
    return request_from_dict(json.loads(text))


def alloc_to_dict(alloc: Allocation) -> dict[str, Any]:
    return {
        "job_id": alloc.job_id,
        "nodes": [
            {"node": n.node, "gpus": list(n.gpus), "cores": list(n.cores), "mem": n.mem}
            for n in alloc.nodes
        ],
    }


def alloc_from_dict(data: dict[str, Any]) -> Allocation:
    return Allocation(
        int(data["job_id"]),
        tuple(
            NodeAlloc(int(n["node"]), tuple(n["gpus"]), tuple(n["cores"]), int(n["mem"]))
            for n in data["nodes"]
        ),
    )


def alloc_json(alloc: Allocation) -> str:
    return json.dumps(alloc_to_dict(alloc), separators=(",", ":"))


def alloc_from_json(text: str) -> Allocation | None:
    return alloc_from_dict(json.loads(text)) if text else None


def limits_to_dict(limits: Limits) -> dict[str, Any]:
    default = Limits()
    return {k: v for k, v in asdict(limits).items() if v != getattr(default, k)}


def limits_from_dict(data: dict[str, Any]) -> Limits:
    known = {f.name for f in fields(Limits)}
    bad = set(data) - known
    if bad:
        raise ValueError(f"unknown limit {sorted(bad)[0]!r}; known: {', '.join(sorted(known))}")
    return Limits(**data)


def limits_json(limits: Limits) -> str:
    return json.dumps(limits_to_dict(limits), separators=(",", ":"))


def limits_from_json(text: str) -> Limits:
    return limits_from_dict(json.loads(text or "{}"))


def csv(items: tuple[str, ...] | list[str]) -> str:
    return ",".join(items)


def uncsv(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split(",") if x)
