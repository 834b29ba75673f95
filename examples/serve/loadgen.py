"""Replay the Azure LLM inference trace against a service, at a chosen speed,
bounded in requests and time, on this machine only.

    python examples/serve/loadgen.py http://127.0.0.1:PORT \\
        --trace ../shared/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv \\
        --speed 2 --max-requests 500 --max-seconds 120

Each trace line (arrival time, context tokens, generated tokens) becomes one
POST /v1/completions with "prompt_tokens" and "max_tokens" scaled by
--token-scale (the example model is small; 1/16 keeps a request near a second
of CPU) and capped, sent at its arrival time divided by --speed (open loop:
a slow service does not slow the arrivals). Streams the answer and records
the time to the first token and to the end. Refuses any address that is not
this machine's loopback. Prints p50/p95/p99 and errors; --json for a line of
JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import ipaddress
import json
import socket
import sys
import time
from urllib.parse import urlsplit

import httpx


def loopback_only(url: str) -> str:
    host = urlsplit(url).hostname or ""
    try:
        addrs = {ai[4][0] for ai in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        raise SystemExit(f"loadgen: cannot resolve {host!r}") from None
    if not addrs or not all(ipaddress.ip_address(a).is_loopback for a in addrs):
        raise SystemExit(f"loadgen: {url} is not on this machine's loopback; this tool only "
                         "loads local services (use 127.0.0.1)")  # fmt: skip
    return url.rstrip("/")


def read_trace(path: str, limit: int) -> list[tuple[float, int, int]]:
    from datetime import datetime

    out: list[tuple[float, int, int]] = []
    with open(path, newline="") as f:
        rows = csv.reader(f)
        next(rows, None)
        for row in rows:
            t = datetime.fromisoformat(row[0].strip()[:26]).timestamp()
            out.append((t, int(row[1]), int(row[2])))
            if len(out) >= limit:
                break
    out.sort()
    t0 = out[0][0] if out else 0.0
    return [(t - t0, c, g) for t, c, g in out]


async def one(client: httpx.AsyncClient, url: str, prompt: int, new: int) -> tuple[float, float]:
    """(time to the first token, to the end); raises on an error."""
    t0 = time.perf_counter()
    first = None
    body = {"prompt_tokens": prompt, "max_tokens": new, "stream": True}
    async with client.stream("POST", url + "/v1/completions", json=body) as r:
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
        async for _ in r.aiter_bytes():
            if first is None:
                first = time.perf_counter() - t0
    return first if first is not None else time.perf_counter() - t0, time.perf_counter() - t0


async def run(args: argparse.Namespace) -> dict[str, object]:
    url = loopback_only(args.url)
    trace = read_trace(args.trace, args.max_requests)
    ttft: list[float] = []
    e2e: list[float] = []
    errors: list[str] = []
    start = time.perf_counter()
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=args.timeout, limits=limits) as client:

        async def fire(ctx: int, gen: int) -> None:
            prompt = max(1, min(int(ctx * args.token_scale), args.max_prompt))
            new = max(1, min(int(gen * args.token_scale), args.max_new))
            try:
                a, b = await one(client, url, prompt, new)
                ttft.append(a)
                e2e.append(b)
            except Exception as e:  # every failure is counted, none stops the replay
                errors.append(f"{type(e).__name__}: {e}")

        tasks = []
        for t, ctx, gen in trace:
            due = start + t / args.speed
            if due - start > args.max_seconds:
                break
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(fire(ctx, gen)))
        left = max(0.0, args.max_seconds - (time.perf_counter() - start)) + args.timeout
        done, pending = await asyncio.wait(tasks, timeout=left) if tasks else (set(), set())
        for task in pending:
            task.cancel()
            errors.append("unfinished at the time bound")
        del done
    return {
        "sent": len(tasks), "ok": len(e2e), "errors": len(errors),
        "first_errors": errors[:3], "seconds": round(time.perf_counter() - start, 2),
        "ttft": _pct(ttft), "e2e": _pct(e2e),
    }  # fmt: skip


def _pct(values: list[float]) -> dict[str, float | None]:
    v = sorted(values)
    if not v:
        return {"p50": None, "p95": None, "p99": None}
    return {f"p{q}": round(v[min(len(v) - 1, int(q / 100 * len(v)))], 4) for q in (50, 95, 99)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", help="the service's address, e.g. http://127.0.0.1:18000")
    p.add_argument("--trace", required=True, help="an Azure LLM trace CSV")
    p.add_argument("--speed", type=float, default=1.0, help="times faster than the trace")
    p.add_argument("--max-requests", type=int, default=200)
    p.add_argument("--max-seconds", type=float, default=60.0)
    p.add_argument("--token-scale", type=float, default=1 / 16)
    p.add_argument("--max-prompt", type=int, default=1024)
    p.add_argument("--max-new", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=64, help="connections at most")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not (args.speed > 0 and 0 < args.max_requests <= 100_000 and 0 < args.max_seconds <= 3600):
        p.error("--speed > 0, --max-requests 1..100000, --max-seconds 1..3600")
    res = asyncio.run(run(args))
    if args.json:
        print(json.dumps(res))
    else:
        print(f"sent {res['sent']}, ok {res['ok']}, errors {res['errors']} in {res['seconds']} s")
        print(f"first token p50/p95/p99: {res['ttft']}")
        print(f"end to end  p50/p95/p99: {res['e2e']}")
        for e in res["first_errors"]:  # type: ignore[attr-defined]
            print(f"  error: {e}")
    return 0 if res["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
