"""Draw a synthetic workload from a GeneratorModel, reproducibly.

All randomness comes from one numpy.random.default_rng(seed), drawn in a
fixed order (stream by stream, field by field, whole arrays at once), so the
same model and seed give the same jobs on every machine. Streams are drawn
as arrays and SimJobs are built one at a time while iterating, so even the
month-long preset costs little memory until someone keeps the list.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tide.model import Cluster, JobRequest
from tide.sim.workload.base import SimJob, WorkloadError
from tide.sim.workload.model import GeneratorModel, Stream


@dataclass(slots=True)
class _Drawn:
    """One stream's jobs as parallel arrays (local order = arrival order)."""

    stream: Stream
    submit: list[float]
    gpus: list[int]
    duration: list[float]
    limit: list[int]
    account: list[int]  # index into stream.accounts
    user: list[int]  # user number within the account, from 1
    switches: list[bool]
    model: list[int]  # index into stream.models ([] when the stream has none)


def _weights(pairs: tuple[tuple[object, float], ...]) -> np.ndarray:
    w = np.array([p[1] for p in pairs], dtype=float)
    return w / w.sum()


def _draw(s: Stream, horizon: float, rng: np.random.Generator) -> _Drawn:
    end = horizon if s.end is None else s.end
    # A Poisson process on [start, end): a Poisson count, then uniform times.
    n = int(rng.poisson(s.rate * max(0.0, end - s.start)))
    submit = np.round(np.sort(rng.uniform(s.start, end, n)), 3)
    sizes = np.array([g for g, _ in s.sizes])
    gpus = sizes[rng.choice(len(sizes), n, p=_weights(s.sizes))]
    e = s.estimates
    duration = np.round(np.minimum(s.duration.draw(rng, n), e.cap), 3)
    u = rng.random(n)
    factor = np.maximum(1.0, e.factor.draw(rng, n))
    limit = np.where(u < e.p_exact, duration, duration * factor)
    limit = np.where((u >= e.p_exact) & (u < e.p_exact + e.p_max), e.cap, limit)
    limit = np.minimum(np.ceil(np.maximum(limit, 1.0) / e.round_to) * e.round_to, e.cap)
    account = rng.choice(len(s.accounts), n, p=_weights(s.accounts))
    k = np.arange(1, s.users_per_account + 1)
    user = rng.choice(k, n, p=(1 / k) / (1 / k).sum())
    switches = rng.random(n) < s.switches
    # drawn last and only when there are models: the presets without keep their jobs
    model = rng.choice(len(s.models), n, p=_weights(s.models)).tolist() if s.models else []
    # Python lists: building 300,000 jobs from numpy scalars is several times slower
    return _Drawn(s, submit.tolist(), gpus.tolist(), duration.tolist(),
                  limit.astype(np.int64).tolist(), account.tolist(), user.tolist(),
                  switches.tolist(), model)  # fmt: skip


def _shape(gpus: int, gpn: int) -> tuple[int, int]:
    """(nodes, GPUs per node): one node up to a node's worth, else whole nodes."""
    return (1, gpus) if gpus <= gpn else (gpus // gpn, gpn)


def _stream_job(d: _Drawn, i: int, jid: int, gpn: int) -> SimJob:
    s = d.stream
    account = s.accounts[d.account[i]][0]
    gpus = d.gpus[i]
    sw = gpus > gpn and d.switches[i]
    nodes, per_node = _shape(gpus, gpn)
    req = JobRequest(
        name=s.name, time_limit=d.limit[i], account=account, qos=s.qos,
        partitions=(s.partition,) if s.partition else (),
        switches=1 if sw else None, switches_wait=s.switches_wait if sw else None,
        nodes_min=nodes, nodes_max=nodes, gpus_per_node=per_node,
    )  # fmt: skip
    return SimJob(
        id=jid, submit=d.submit[i], duration=d.duration[i], request=req,
        user=f"{account}-u{d.user[i]}", account=account, name=s.name,
        checkpoint_interval=s.checkpoint_interval, checkpoint_cost=s.checkpoint_cost,
        train=s.models[d.model[i]][0] if d.model else None,
    )  # fmt: skip


def generate_iter(model: GeneratorModel, seed: int) -> Iterator[SimJob]:
    """The model's jobs in submit order, ids from 1. Ties in submit time keep
    stream order, then fixed jobs, then draw order."""
    try:
        model.validate()
    except ValueError as e:
        raise WorkloadError(f"generator model {model.name!r}: {e}") from None
    rng = np.random.default_rng(seed)
    drawn = [_draw(s, model.horizon, rng) for s in model.streams]
    fixed_at = np.array([f.submit for f in model.fixed], dtype=float)
    submits = np.concatenate([*(np.asarray(d.submit, dtype=float) for d in drawn), fixed_at])
    source = np.concatenate(
        [*(np.full(len(d.submit), k) for k, d in enumerate(drawn)),
         np.full(len(fixed_at), -1)]
    ).astype(np.int64)  # fmt: skip
    local = np.concatenate(
        [*(np.arange(len(d.submit)) for d in drawn), np.arange(len(fixed_at))]
    ).astype(np.int64)
    order = np.argsort(submits, kind="stable")
    gpn = model.gpus_per_node
    src, loc = source.tolist(), local.tolist()
    for jid, pos in enumerate(order.tolist(), 1):
        k, i = src[pos], loc[pos]
        if k >= 0:
            yield _stream_job(drawn[k], i, jid, gpn)
        else:
            yield _fixed_job(model, i, jid)


def _fixed_job(model: GeneratorModel, i: int, jid: int) -> SimJob:
    f = model.fixed[i]
    nodes, per_node = _shape(f.gpus, model.gpus_per_node)
    req = JobRequest(name=f.name, time_limit=f.time_limit, account=f.account,
                     switches=f.switches, nodes_min=nodes, nodes_max=nodes,
                     gpus_per_node=per_node)  # fmt: skip
    return SimJob(id=jid, submit=float(f.submit), duration=float(f.duration), request=req,
                  user=f.user, account=f.account, name=f.name, train=f.train,
                  checkpoint_interval=f.checkpoint_interval,
                  checkpoint_cost=f.checkpoint_cost)  # fmt: skip


def generate(preset: str | GeneratorModel, seed: int = 0) -> tuple[str | Cluster, list[SimJob]]:
    """(cluster, jobs): the cluster is a bundled cluster's name ("seed004",
    "demo") or a Cluster built here; jobs are in submit order."""
    from tide.sim.workload.presets import preset as lookup

    model = lookup(preset) if isinstance(preset, str) else preset
    return model.cluster, list(generate_iter(model, seed))


def expected_jobs(model: GeneratorModel) -> float:
    """Mean number of jobs the model generates (for sizing runs)."""
    total = float(len(model.fixed))
    for s in model.streams:
        end = model.horizon if s.end is None else s.end
        total += s.rate * max(0.0, end - s.start)
    return math.floor(total)


def preset_header(model: GeneratorModel, seed: int) -> dict[str, str]:
    """The JSONL header that lets a reader find the cluster and the targets."""
    cluster = model.cluster if isinstance(model.cluster, str) else model.cluster.name
    return {
        "preset": model.name,
        "seed": str(seed),
        "cluster": cluster,
        "cluster_source": "bundled" if isinstance(model.cluster, str) else f"preset {model.name}",
        "shares": ",".join(f"{a}={w:g}" for a, w in model.shares),
        "description": model.description,
    }


def write_preset(preset: str | GeneratorModel, seed: int, path: str | Path) -> int:
    """`tide sim generate --preset X --seed N --out file.jsonl`: stream the
    preset's jobs to JSONL with a header; returns the number of jobs."""
    from tide.sim.workload.jsonl import write_jsonl
    from tide.sim.workload.presets import preset as lookup

    model = lookup(preset) if isinstance(preset, str) else preset
    return write_jsonl(generate_iter(model, seed), path, preset_header(model, seed))


def parse_shares(text: str) -> dict[str, float]:
    """ "a=0.5,b=0.3" (a header's shares line) -> {"a": 0.5, "b": 0.3}."""
    out: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise WorkloadError(f"shares {text!r}: use account=weight pairs joined by ','")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise WorkloadError(f"shares {text!r}: {value!r} is not a number") from None
    return out
