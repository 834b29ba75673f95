"""Prometheus metrics of the services (added to the controller's /metrics):
replicas by state, desired replicas, each service's status, and what each service's router
measured (requests by status class, router errors, retries, in flight,
buffered, latency histograms to the first byte and to the end)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)


def collect(services: Any) -> Iterator[Any]:
    with services.lock:
        runtimes = list(services.runtimes.values())
    reps = GaugeMetricFamily(
        "tide_service_replicas", "Replicas by state", labels=["service", "state"]
    )
    desired = GaugeMetricFamily("tide_service_desired_replicas", "Replicas asked for",
                                labels=["service"])  # fmt: skip
    for rt in runtimes:
        desired.add_metric([rt.name], rt.desired)
        for state, n in sorted(rt.counts.items()):
            reps.add_metric([rt.name, state], n)
    yield reps
    yield desired
    yield from _traffic([(rt.name, rt.stats) for rt in runtimes if rt.stats is not None])


def status(ctl: Any) -> GaugeMetricFamily:
    """1 for each service's status (tide.serve.health), as kube-state-metrics gives a
    pod's waiting reason: alert on tide_service_status{status="CrashLoopBackOff"}."""
    from tide.serve.replicas import SERVICE_ACTOR
    from tide.server.services import serving

    g = GaugeMetricFamily("tide_service_status", "1 for the service's status (tide service ls)",
                          labels=["service", "status"])  # fmt: skip
    for item in serving.listing(ctl, SERVICE_ACTOR):
        g.add_metric([item["name"], item["status"]], 1)
    return g


def _traffic(stats: list[tuple[str, dict[str, Any]]]) -> Iterator[Any]:
    req = CounterMetricFamily("tide_service_requests", "Requests answered, by status class",
                              labels=["service", "code"])  # fmt: skip
    err = CounterMetricFamily(
        "tide_service_router_errors",
        "Answers the router made itself (no ready replica, replica failed, timeout)",
        labels=["service"],
    )
    retries = CounterMetricFamily("tide_service_retries", "Requests retried on another replica",
                                  labels=["service"])  # fmt: skip
    inflight = GaugeMetricFamily("tide_service_inflight", "Requests in flight at replicas",
                                 labels=["service"])  # fmt: skip
    buffered = GaugeMetricFamily("tide_service_buffered", "Requests waiting for a ready replica",
                                 labels=["service"])  # fmt: skip
    ttfb = HistogramMetricFamily("tide_service_first_byte_seconds",
                                 "Seconds from the request to the first response byte",
                                 labels=["service"])  # fmt: skip
    total = HistogramMetricFamily("tide_service_request_seconds",
                                  "Seconds from the request to the end of the response",
                                  labels=["service"])  # fmt: skip
    for name, s in stats:
        for code, n in sorted(s["codes"].items()):
            req.add_metric([name, code], n)
        err.add_metric([name], s["errors"])
        retries.add_metric([name], s["retries"])
        inflight.add_metric([name], s["inflight"] - s["buffered"])  # the router counts both
        buffered.add_metric([name], s["buffered"])
        ttfb.add_metric([name], _buckets(s["ttfb"]), s["ttfb"]["sum"])
        total.add_metric([name], _buckets(s["latency"]), s["latency"]["sum"])
    yield from (req, err, retries, inflight, buffered, ttfb, total)


def _buckets(h: dict[str, Any]) -> list[tuple[str, float]]:
    out, running = [], 0
    for bound, n in zip([*h["buckets"], float("inf")], h["counts"], strict=True):
        running += n
        out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
    return out
