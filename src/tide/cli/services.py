"""`tide service`: inference services, kubectl's habits (apply -f, get, scale,
rollout restart/status, delete, logs). They talk to the server's /v1/services."""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any

import typer

from tide.client.cli_support import JsonOpt, api, fail
from tide.display import duration, print_json, table, timestamp

service_app = typer.Typer(
    name="service",
    help="Inference services: replicas, router, autoscaling (docs/services.md).\n\n"
    "Example: tide service apply -f chat.yaml",
    no_args_is_help=True,
)
Name = Annotated[str, typer.Argument(help="the service's name")]


@service_app.command("apply")
def apply(
    file: Annotated[str, typer.Option("-f", "--file", help="service YAML ('-' = stdin)")],
    as_json: JsonOpt = False,
) -> None:
    """Create a service, or update it to this spec (a changed command, env or shape
    rolls out new replicas; new counts and autoscaling apply at once).

    Example: tide service apply -f examples/serve/chat.yaml
    """
    import yaml

    try:
        if file == "-":
            text = sys.stdin.read()
        else:
            with open(file, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        fail(f"cannot read {file}: {e.strerror}", "give the path of a service YAML file")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        fail(f"{file}: not valid YAML: {e}".splitlines()[0], "check the indentation and quoting")
    with api() as c:
        out = c.post("/v1/services", {"service": doc, "cwd": os.getcwd()})
    if as_json:
        print_json(out)
        return
    print(
        f"service/{out['name']} {out['result']} (generation {out['generation']}, "
        f"{out['desired']} replicas wanted) at {out['url']}"
    )


@service_app.command("ls")
def ls(as_json: JsonOpt = False) -> None:
    """List services (yours; operators see all), like kubectl get deployments.

    STATUS: Active (all desired replicas ready), Progressing (replicas starting),
    Degraded (one failed or is not ready), CrashLoopBackOff (replicas end before
    ever being ready: REASON has the last exit and when the next one starts),
    Deleting.

    Example: tide service ls
    """
    with api() as c:
        items = c.get("/v1/services")["services"]
    if as_json:
        print_json(items)
        return
    now = time.time()
    rows = [
        [
            s["name"],
            s["user"],
            f"{s['ready']}/{s['desired']}",
            s["replicas"],
            s["generation"],
            s["url"],
            s.get("status", s["state"]),
            duration(now - s["created"]),
            s.get("status_reason", "") if s.get("status") not in (None, "Active") else "",
        ]
        for s in items
    ]
    table(["NAME", "USER", "READY", "REPLICAS", "GEN", "URL", "STATUS", "AGE", "REASON"], rows)


@service_app.command("show")
def show(name: Name, as_json: JsonOpt = False) -> None:
    """Everything about a service: replicas, traffic, recent events, GPU-hours.

    Example: tide service show chat
    """
    with api() as c:
        s = c.get(f"/v1/services/{name}")
    if as_json:
        print_json(s)
        return
    _print_show(s)


def _print_show(s: dict[str, Any]) -> None:
    print(
        f"Service={s['name']} User={s['user']} Account={s['account']} "
        f"Partition={s['partition']} State={s['state']} Status={s.get('status', '')}"
    )
    if s.get("status_reason"):
        print(f"   Reason={s['status_reason']}")
    print(
        f"   URL={s['url']} Generation={s['generation']} Desired={s['desired']} "
        f"Ready={s['ready']} GPUHours={s['gpu_hours']:.3f}"
    )
    if s.get("last_scale"):
        print(f"   LastScale={timestamp(s.get('last_scale_time'))} {s['last_scale']}")
    t = s.get("traffic")
    if t:
        ttfb, lat = t["ttfb"], t["latency"]
        print(
            f"   Requests={t['requests']} InFlight={t['inflight']} Buffered={t['buffered']} "
            f"Errors={t['errors']} Retries={t['retries']} Codes={t['codes']}"
        )
        print(
            f"   Last {t['window_seconds']:g}s: {t['answered_in_window']} answered, "
            f"first byte p50/p95/p99 {_ms(ttfb)}, total {_ms(lat)}"
        )
    reps = [r for r in s["replicas"] if r["state"] not in ("Stopped", "Failed")][-20:]
    if reps:
        print()
        table(
            ["REPLICA", "JOB", "GEN", "STATE", "ADDRESS", "READY_AFTER"],
            [
                [
                    r["id"],
                    r["job_id"],
                    r["generation"],
                    r["state"],
                    r["address"],
                    f"{r['ready_after']:.1f}s" if r["ready_after"] is not None else "",
                ]
                for r in reps
            ],
        )
    if s["events"]:
        print()
        for e in s["events"][-15:]:
            print(f"{timestamp(e['time'])} {e['kind']:<8} {e['message']}")


def _ms(p: dict[str, Any]) -> str:
    vals = [p.get(k) for k in ("p50", "p95", "p99")]
    return "/".join("-" if v is None else f"{v * 1000:.1f}" for v in vals) + " ms"


@service_app.command("scale")
def scale(
    name: Name,
    replicas: Annotated[int | None, typer.Argument(help="a fixed count (autoscaling off)")] = None,
    min_replicas: Annotated[int | None, typer.Option("--min", help="autoscaling minimum")] = None,
    max_replicas: Annotated[int | None, typer.Option("--max", help="autoscaling maximum")] = None,
) -> None:
    """Set a fixed number of replicas, or the autoscaler's bounds.

    Example: tide service scale chat 3        (or: tide service scale chat --min 1 --max 8)
    """
    body = {"replicas": replicas, "min_replicas": min_replicas, "max_replicas": max_replicas}
    with api() as c:
        out = c.post(f"/v1/services/{name}/scale", body)
    print(f"service/{name} scaled: {out['desired']} replicas wanted")


@service_app.command("rollout")
def rollout(
    name: Name,
    action: Annotated[str, typer.Argument(help="restart | status")] = "status",
    wait: Annotated[bool, typer.Option("--wait", help="status: wait until done")] = False,
    timeout: Annotated[float, typer.Option(help="seconds --wait waits at most")] = 600.0,
) -> None:
    """Restart every replica, rolling (no request dropped), or show the rollout's progress.

    Example: tide service rollout chat restart && tide service rollout chat status --wait
    """
    if action not in ("restart", "status"):
        fail(f"unknown rollout action {action!r}", "use restart or status")
    with api() as c:
        if action == "restart":
            out = c.post(f"/v1/services/{name}/rollout", {"restart": True})
            print(f"service/{name} restarting: rolling update to generation {out['generation']}")
            return
        deadline = time.time() + timeout
        while True:
            out = c.get(f"/v1/services/{name}/rollout")
            print(
                f"generation {out['generation']}: {out['updated_ready']} of {out['desired']} "
                f"updated replicas ready, {out['old']} old left"
            )
            if out["done"] or not wait:
                break
            if time.time() > deadline:
                fail(
                    f"rollout of {name} not done after {timeout:g} s",
                    f"see `tide service show {name}`",
                )
            time.sleep(1.0)
    if out["done"]:
        print(f'service "{name}" successfully rolled out')


@service_app.command("delete")
def delete(name: Name) -> None:
    """Delete a service: its replicas drain (requests in flight finish), then stop.

    Example: tide service delete chat
    """
    with api() as c:
        c.delete(f"/v1/services/{name}")
    print(f"service/{name} deleting (replicas draining)")


@service_app.command("logs")
def logs(
    name: Name,
    replica: Annotated[int | None, typer.Option("--replica", "-r", help="one replica")] = None,
    tail: Annotated[int, typer.Option("--tail", "-n", help="lines per replica")] = 50,
) -> None:
    """The last lines each live replica wrote (stdout and stderr).

    Example: tide service logs chat --tail 20
    """
    with api() as c:
        out = c.get(f"/v1/services/{name}/logs", replica=replica, tail=tail)
    for r in out["replicas"]:
        print(f"==> replica {r['replica']} (job {r['job_id']}) {r['path']} <==")
        for line in r["lines"]:
            print(line)


@service_app.command("pools")
def pools(as_json: JsonOpt = False) -> None:
    """The serving pools and what each lends to borrowed work now.

    Example: tide service pools
    """
    with api() as c:
        items = c.get("/v1/pools")["pools"]
    if as_json:
        print_json(items)
        return
    rows = [
        [p["name"], p["partition"], p["lend_partition"] or "-", p["mode"], p["gpus"],
         p["replica_gpus"], p["pending_gpus"], p["borrowed_gpus"], p["budget"], p["held"],
         p["grace"], ",".join(f"{k}={v}" for k, v in sorted(p["sides"].items())) or "-"]
        for p in items
    ]  # fmt: skip
    table(["POOL", "PARTITION", "LENDS_TO", "MODE", "GPUS", "REPLICAS", "PENDING", "BORROWED",
           "BUDGET", "HELD", "GRACE", "NODES"], rows)  # fmt: skip
