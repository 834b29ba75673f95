"""The fair-share charge, once in the core (issue 13 item 2;
tide.sched.usage.job_charge): billable TRES (TRESBillingWeights, MAX_TRES) x
seconds x the QOS's UsageFactor, for the live loop and the twin alike."""

from __future__ import annotations

import pytest

from tide.model import AccountTree, JobRequest, Qos
from tide.model.sched_config import PriorityWeights, SchedulerConfig
from tide.sched.usage import bills_memory, job_charge
from tide.sim.engine import Engine
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster

ACCOUNTS = AccountTree(qos={"normal": Qos("normal"), "cheap": Qos("cheap", usage_factor=0.5)})


@pytest.mark.parametrize(
    ("weights", "flags", "qos", "expected"),
    [
        (None, (), "normal", 4 * 100.0),  # tide's default unit: GPU-seconds
        ({"cpu": 1.0}, (), "normal", 16 * 100.0),  # Slurm's without weights: CPU-seconds
        ({"cpu": 1.0, "gres/gpu": 2.0}, (), "normal", (16 + 8) * 100.0),  # summed
        ({"cpu": 1.0, "gres/gpu": 2.0}, ("MAX_TRES",), "normal", 16 * 100.0),  # the largest
        ({"mem": 1 / 1024}, (), "normal", 64 * 100.0),  # per GB of 65536 MB
        (None, (), "cheap", 4 * 100.0 * 0.5),  # UsageFactor
        (None, (), "unknown", 4 * 100.0),  # a QOS not defined: factor 1
    ],
)
def test_job_charge(weights: dict[str, float] | None, flags: tuple[str, ...], qos: str,
                    expected: float) -> None:  # fmt: skip
    cfg = SchedulerConfig(billing_weights=weights, priority_flags=flags)
    assert job_charge(16, 4, 65536, 100.0, qos, cfg, ACCOUNTS) == pytest.approx(expected)


def test_no_charge_for_no_time() -> None:
    assert job_charge(16, 4, 0, -5.0, "normal", SchedulerConfig(), ACCOUNTS) == 0.0


def test_memory_is_read_only_when_billed() -> None:
    assert not bills_memory(SchedulerConfig())
    assert bills_memory(SchedulerConfig(billing_weights={"Mem": 0.1}))


def test_the_twin_charges_the_qos_usage_factor() -> None:
    """A 1-GPU job of QOS cheap runs 0..600; the recalculation at 600 charges
    600 GPU-s x 0.5 (the twin charged 600 before: no UsageFactor)."""
    cfg = SchedulerConfig(weights=PriorityWeights(fairshare=1000), priority_calc_period=300)
    c = flat_cluster(1)
    cheap = JobRequest(gpus=1, time_limit=1000, qos="cheap")
    jobs = [SimJob(1, 0.0, 600.0, cheap, user="u", account="a"),
            SimJob(2, 600.0, 10.0, JobRequest(gpus=1, time_limit=1000), user="v", account="b")]
    engine = Engine(c, cfg, "slurm", accounts=ACCOUNTS)
    engine.run(jobs)
    assert engine.fs_usage.get("a/u") == pytest.approx(300.0, rel=0.01)
