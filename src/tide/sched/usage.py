"""Decayed usage for fair-share, as Slurm's priority/multifactor keeps it.

Usage is a number per user association, keyed "account/user". The caller (the
controller or the twin) owns the clock: every PriorityCalcPeriod it decays the
stored usage by the time that passed, then charges what running jobs consumed
in that period:

    usage = decay(usage, now - last, config.decay_half_life)
    for job in running:
        amount = billing(cpus, gpus, mem_mb, weights) * (now - last) * qos.usage_factor
        usage = charge(usage, f"{job.account}/{job.user}", amount)

Unit: tide charges GPU-seconds by default, i.e. TRES billing where one GPU weighs
1 and nothing else counts (Slurm's default bills CPU-seconds; a GPU cluster
cares about GPUs). Pass TRESBillingWeights-style weights to `billing` to change
that. Account usage is never stored: fair-share sums it from the users below.

Decay follows PriorityDecayHalfLife (slurm.conf; priority_multifactor.html):
usage seen `elapsed` seconds ago counts 0.5 ** (elapsed / half_life); a half life
of 0 disables decay. slurmctld approximates the per-second factor with
1 - 0.693 / half_life; the exact power of two used here differs from it by less
than 0.1% for half lives of an hour or more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tide.model import AccountTree
from tide.model.sched_config import SchedulerConfig

# TRESBillingWeights that make one GPU-second cost 1 (tide's default unit).
GPU_SECONDS: dict[str, float] = {"gres/gpu": 1.0}


def decay_factor(elapsed_s: float, half_life_s: float) -> float:
    """The multiplier for usage that is `elapsed_s` seconds old.

    1.0 when the half life is 0 (PriorityDecayHalfLife=0: no decay) or when no
    time passed; clocks that step back never make usage grow.
    """
    if half_life_s <= 0 or elapsed_s <= 0:
        return 1.0
    return float(0.5 ** (elapsed_s / half_life_s))


def decay(usage: Mapping[str, float], elapsed_s: float, half_life_s: float) -> dict[str, float]:
    """A new usage dict with every value decayed by `elapsed_s` seconds."""
    f = decay_factor(elapsed_s, half_life_s)
    return {k: v * f for k, v in usage.items()}


def charge(usage: Mapping[str, float], key: str, amount: float) -> dict[str, float]:
    """A new usage dict with `amount` added to `key` ("account/user").

    Negative amounts are ignored: usage only grows by charging and only shrinks
    by decay, as in Slurm.
    """
    out = dict(usage)
    out[key] = out.get(key, 0.0) + max(0.0, amount)
    return out


def charge_all(
    usage: Mapping[str, float], charges: Iterable[tuple[str, float]]
) -> dict[str, float]:
    """`charge` for many (key, amount) pairs with one copy of the dict."""
    out = dict(usage)
    for key, amount in charges:
        out[key] = out.get(key, 0.0) + max(0.0, amount)
    return out


def billing(
    cpus: float,
    gpus: float,
    mem_mb: float,
    weights: Mapping[str, float] | None = None,
    max_tres: bool = False,
) -> float:
    """Billable TRES of an allocation per second (TRESBillingWeights).

    `weights` uses Slurm's TRES names: "cpu" per CPU, "mem" per MB (a config
    value written "0.25G" is 0.25 / 1024 per MB), "gres/gpu" per GPU; names
    are case-insensitive and others are ignored. None means GPU_SECONDS.
    By default the weighted TRES are summed; `max_tres` takes their maximum
    instead (PriorityFlags=MAX_TRES).
    """
    w = {k.lower(): float(v) for k, v in (GPU_SECONDS if weights is None else weights).items()}
    parts = (
        cpus * w.get("cpu", 0.0),
        mem_mb * w.get("mem", 0.0),
        gpus * w.get("gres/gpu", 0.0),
    )
    return max(parts) if max_tres else sum(parts)


def job_charge(
    cpus: float,
    gpus: float,
    mem_mb: float,
    seconds: float,
    qos: str,
    config: SchedulerConfig,
    accounts: AccountTree,
) -> float:
    """The fair-share usage a job's allocation adds in `seconds`: its billable
    TRES (TRESBillingWeights, PriorityFlags=MAX_TRES) x seconds x its QOS's
    UsageFactor. The one charge rule: the live loop and the twin both call it."""
    q = accounts.qos.get(qos)
    factor = q.usage_factor if q is not None else 1.0
    max_tres = "MAX_TRES" in {f.upper() for f in config.priority_flags}
    units = billing(cpus, gpus, mem_mb, config.billing_weights, max_tres)
    return units * max(0.0, seconds) * factor


def bills_memory(config: SchedulerConfig) -> bool:
    """Whether memory counts in the charge (a driver may skip reading it)."""
    return any(k.lower() == "mem" for k in (config.billing_weights or {}))
