"""The twin survives any single job: a job the core cannot evaluate is
reported and left out, and every other job runs (tide.sched.isolate)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tide.model import JobRequest
from tide.model.sched_config import SchedulerConfig
from tide.sched.policies import POLICY_NAMES
from tide.sim.engine import Engine
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster

BAD = [
    {"gpus_per_node": -1},
    {"nice": "x"},
    {"begin": []},
    {"switches": "x"},
    {"gpus_per_node": "x"},
    {"time_limit": float("nan")},
]


def _good(i: int, submit: float) -> SimJob:
    req = JobRequest(name="good", nodes_min=1, gpus_per_node=8, time_limit=100)
    return SimJob(id=i, submit=submit, duration=50, request=req)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_bad_jobs_are_reported_and_the_others_run(policy: str) -> None:
    jobs = []
    for k, bad in enumerate(BAD):
        jobs.append(_good(2 * k + 1, float(k)))
        req = replace(JobRequest(name="bad", nodes_min=1, gpus_per_node=1, time_limit=100), **bad)
        jobs.append(SimJob(id=2 * k + 2, submit=float(k), duration=10, request=req))
    out = Engine(flat_cluster(2), SchedulerConfig(), policy).run(jobs)
    done = {r.job_id for r in out.results if r.state == "COMPLETED"}
    assert {j.id for j in jobs if j.name == "good"} <= done
    assert set(out.job_faults) <= {j.id for j in jobs if j.name == "bad"}
    assert 2 in out.job_faults and "r must be non-negative" in out.job_faults[2]
