"""Prometheus metrics at /metrics: queue size, loop timings, submissions.

Aggregates only (no job names or users), so it needs no token, like most
exporters. Values are read when scraped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from tide.server.ports import Ctl


class _Collector:
    def __init__(self, ctl: Ctl) -> None:
        self.ctl = ctl

    def collect(self) -> Iterator[Any]:
        ctl = self.ctl
        states: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        by_account: Counter[str] = Counter()
        gpus = 0
        for e in ctl.active.snapshot_entries():
            states[e.meta.state] += 1
            if e.meta.state == "PENDING":
                reasons[e.meta.reason] += 1
            if e.running is not None:
                gpus += e.running.alloc.gpu_count
                by_account[e.job.account] += e.running.alloc.gpu_count
        g = GaugeMetricFamily("tide_jobs", "Active jobs by state", labels=["state"])
        for st in ("PENDING", "RUNNING", "COMPLETING", "SUSPENDED"):
            g.add_metric([st], states.get(st, 0))
        yield g
        r = GaugeMetricFamily(
            "tide_jobs_pending_reason", "Pending jobs by pending reason", labels=["reason"]
        )
        for reason, n in sorted(reasons.items()):
            r.add_metric([reason], n)
        yield r
        a = GaugeMetricFamily(
            "tide_account_gpus_allocated", "GPUs held by live jobs per account", labels=["account"]
        )
        for account, n in sorted(by_account.items()):
            a.add_metric([account], n)
        yield a
        yield from _nodes(ctl)
        yield GaugeMetricFamily("tide_gpus_allocated", "GPUs held by live jobs", value=gpus)
        yield GaugeMetricFamily(
            "tide_gpus_total", "GPUs in the cluster", value=ctl.cluster.total_gpus
        )
        if ctl.writer is not None:
            yield CounterMetricFamily(
                "tide_submitted_jobs", "Jobs stored by the submit writer", value=ctl.writer.jobs
            )
            yield CounterMetricFamily(
                "tide_submit_commits", "Group commits of submissions", value=ctl.writer.commits
            )
        if ctl.loop is not None:
            st = ctl.loop.stats
            yield CounterMetricFamily("tide_sched_passes", "Scheduling passes", value=st.cycles)
            yield CounterMetricFamily(
                "tide_sched_started_jobs", "Jobs started by the loop", value=st.started
            )
            yield CounterMetricFamily("tide_sched_errors", "Failed passes", value=st.errors)
            yield CounterMetricFamily(
                "tide_sched_held_faulty_jobs",
                "Jobs held because the scheduler could not evaluate them",
                value=st.held_faulty,
            )
            p = GaugeMetricFamily(
                "tide_sched_last_pass_seconds", "Phases of the last pass", labels=["phase"]
            )
            p.add_metric(["load"], st.last_load)
            p.add_metric(["process"], st.last_process)
            p.add_metric(["apply"], st.last_apply)
            yield p
        if getattr(ctl, "services", None) is not None:
            from tide.serve.metrics import collect, status

            yield from collect(ctl.services)
            yield status(ctl)


def _nodes(ctl: Ctl) -> Iterator[Any]:
    """Nodes by administrative state (IDLE, DRAIN, DOWN, ...), as the controller holds it."""
    with ctl.lock:
        states = dict(ctl.node_states)
    counts: Counter[str] = Counter(
        str(states.get(n.name, (str(n.state), ""))[0]) for n in ctl.cluster.nodes
    )
    g = GaugeMetricFamily("tide_nodes", "Nodes by administrative state", labels=["state"])
    for st, n in sorted(counts.items()):
        g.add_metric([st], n)
    yield g


def render(ctl: Ctl) -> bytes:
    reg = CollectorRegistry()
    reg.register(_Collector(ctl))  # type: ignore[arg-type]
    return bytes(generate_latest(reg))
