"""Services over the API: apply, list, show, scale, rollout, delete, logs.

Same rules as jobs: a user sees and changes only their own services,
operators all of them; a service's replicas are checked at apply exactly as
a job would be at submission (account, QOS, partition, a node that can hold
one replica), so a spec that could never run is refused with the field and
the fix before anything is stored.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

from tide.serve import replicas as rep
from tide.serve.health import ReplicaFacts, service_health
from tide.serve.spec import SpecError, parse_service
from tide.server.auth import Principal
from tide.server.errors import bad_request, conflict, forbidden, not_found
from tide.server.ports import Ctl
from tide.store import services as svcrepo
from tide.store.services import ACTIVE, DELETING, ServiceRow

# spec keys whose change needs new replicas (a rolling update); the others
# (replica counts, autoscaling, rollout, timeouts) apply to the running ones
_SCALING_KEYS = {"replicas", "autoscaling", "rollout", "drainSeconds", "bufferSeconds",
                 "startupSeconds", "routerPort"}  # fmt: skip
LOG_LINES = 10_000


def _parse(doc: Any) -> tuple[Any, dict[str, Any]]:
    try:
        return parse_service(doc)
    except SpecError as e:
        raise bad_request(str(e), e.field, e.fix) from None


def _owner(who: Principal, row: ServiceRow, action: str) -> None:
    if row.user != who.user and not who.operator:
        raise forbidden(
            f"service {row.name} belongs to {row.user!r}; you may not {action} it",
            "act on your own services, or ask an operator",
        )


def _row(s: Any, who: Principal, name: str, action: str) -> ServiceRow:
    row = svcrepo.get(s, name)
    if row is None or (row.user != who.user and not who.operator):
        raise not_found("service", name, "list yours with `tide service ls`")
    _owner(who, row, action)
    return row


def _check_replica_job(ctl: Ctl, spec: Any, user: str) -> tuple[str, str, str]:
    """Account, QOS and partition of the replicas, checked as a job's would be."""
    from tide.server.services import feasible
    from tide.server.services import submit as submitting

    body = rep.submit_body(spec, 0, 0, "127.0.0.1", spec.workdir)
    req, _, _, _ = submitting.build_request(body, time.time())
    req, account, qos, parts = submitting.resolve(ctl, req, user)
    feasible.check(ctl.cluster, req, parts, ctl.feasible_cache)
    return account, qos, parts[0].name


def _check_port(ctl: Ctl, spec: Any) -> None:
    """A fixed port on the local executor: every replica binds 127.0.0.1:PORT, so a
    second one (a scale-up, a rolling update's surge) could never start (it would
    crash-loop). Kubernetes gives each pod its own address; here only port 0 does."""
    if not spec.port or ctl.settings.executor == "ray":
        return
    auto = spec.autoscaling
    most = max(spec.replicas, auto.max_replicas if auto.enabled else 0)
    surge = spec.rollout.resolve(max(1, most))[0]
    if most > 1 or surge > 0:
        raise bad_request(
            f"spec.port {spec.port} is fixed, but on the local executor every replica "
            f"listens on 127.0.0.1: a second replica ({most} asked, maxSurge "
            f"{surge}) could not bind it",
            "spec.port",
            "use port: 0 (tide gives each replica its own $PORT), or keep one replica "
            "with rollout: {maxSurge: 0, maxUnavailable: 1}",
        )


def _template(stored: dict[str, Any], account: str, qos: str, partition: str) -> str:
    spec = {k: v for k, v in stored["spec"].items() if k not in _SCALING_KEYS}
    return json.dumps([spec, account, qos, partition], sort_keys=True)


def _initial(spec: Any, now: float) -> int:
    auto = spec.autoscaling
    if not auto.enabled:
        return spec.replicas
    low = auto.min_replicas
    if auto.schedule is not None:
        low = max(low, auto.schedule.minimum_at(now))
    return min(low, auto.max_replicas)


def apply(ctl: Ctl, who: Principal, doc: Any, cwd: str) -> dict[str, Any]:
    if who.role == "job":
        raise forbidden("a job token cannot manage services", "use your own token")
    spec, stored = _parse(doc)
    _check_port(ctl, spec)
    if not spec.workdir:
        spec.workdir = cwd or "/tmp"
        stored["spec"]["workdir"] = spec.workdir
    now = time.time()
    with ctl.sessions() as s:
        old = svcrepo.get(s, spec.name)
        owner = old.user if old is not None else who.user
        if old is not None:
            _owner(who, old, "change")
            if old.state == DELETING:
                raise conflict(
                    f"service {spec.name} is being deleted",
                    "metadata.name",
                    "wait until `tide service ls` no longer lists it, then apply again",
                )
        _check_router_port(spec_router_port(stored), old)
    account, qos, partition = _check_replica_job(ctl, spec, owner)
    text = json.dumps(stored, sort_keys=True)
    result = "created"
    with ctl.sessions.begin() as s:
        row = svcrepo.get(s, spec.name)
        if row is None:
            port = spec_router_port(stored) or rep.free_port()
            row = ServiceRow(name=spec.name, user=owner, account=account, qos=qos, state=ACTIVE,
                             partition=partition, spec=text, generation=1,
                             desired=_initial(spec, now), router_port=port, created=now,
                             updated=now, last_scale_time=now,
                             last_scale="created")  # fmt: skip
            s.add(row)
            svcrepo.event(s, spec.name, now, "apply", f"created by {who.user}")
        else:
            old_doc = json.loads(row.spec)
            changed = _template(old_doc, row.account, row.qos, row.partition) != _template(
                stored, account, qos, partition
            )
            result = "unchanged" if row.spec == text and not changed else "configured"
            if changed:
                row.generation += 1
                svcrepo.event(s, spec.name, now, "rollout",
                              f"replica template changed: rolling update to generation "
                              f"{row.generation}")  # fmt: skip
            if result == "configured":
                svcrepo.event(s, spec.name, now, "apply", f"configured by {who.user}")
            row.desired = _clamp(spec, row.desired, now)
            row.spec, row.account, row.qos, row.partition = text, account, qos, partition
            row.updated = now
        answer = _summary(row, ctl)
    if ctl.services is not None:
        ctl.services.wait_router(spec.name)
    return {**answer, "result": result}


def _check_router_port(want: int, old: Any) -> None:
    """A fixed routerPort must be free when the service is created (else its router
    could never listen), and stays what it was (the service's stable address)."""
    if not want:
        return
    if old is not None:
        if want != old.router_port:
            raise bad_request(
                f"spec.routerPort {want}: the service's address is port {old.router_port}",
                "spec.routerPort",
                f"keep routerPort {old.router_port} (or leave it out); to move the service, "
                "delete it and apply again",
            )
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", want))
        except OSError as e:
            raise conflict(
                f"spec.routerPort {want} is in use on this machine ({e.strerror})",
                "spec.routerPort",
                "choose a free port, or 0 (tide picks one)",
            ) from None


def spec_router_port(stored: dict[str, Any]) -> int:
    return int(stored["spec"].get("routerPort", 0) or 0)


def _clamp(spec: Any, desired: int, now: float) -> int:
    auto = spec.autoscaling
    if not auto.enabled:
        return spec.replicas
    return max(_initial(spec, now), min(desired, auto.max_replicas))


def listing(ctl: Ctl, who: Principal) -> list[dict[str, Any]]:
    now = time.time()
    with ctl.sessions() as s:
        rows = svcrepo.listing(s, None if who.operator else who.user)
        live = svcrepo.live_replicas(s)
        recent = {row.name: svcrepo.recent_replicas(s, row.name) for row in rows}
    out = []
    for row in rows:
        mine = [r for r in live if r.service == row.name]
        item = _summary(row, ctl)
        item["ready"] = sum(r.state == "Ready" for r in mine)
        item["replicas"] = len([r for r in mine if r.state != "Draining"])
        item.update(_health(ctl, row, mine + recent[row.name], now))
        out.append(item)
    return out


def _health(ctl: Ctl, row: ServiceRow, reps: list[Any], now: float) -> dict[str, str]:
    """The service's status word and its reason (tide.serve.health)."""
    facts = {
        r.id: ReplicaFacts(
            r.id, r.job_id, r.generation, r.state, r.created, r.ready, r.ended, r.reason
        )
        for r in reps
    }
    until = ctl.services.backoff_until(row.name) if ctl.services else None
    h = service_health(row.state, row.desired, row.generation, list(facts.values()), now, until)
    return {"status": h.status, "status_reason": h.reason}


def _summary(row: ServiceRow, ctl: Ctl) -> dict[str, Any]:
    host = getattr(ctl.services, "router_host", "127.0.0.1") if ctl.services else "127.0.0.1"
    return {
        "name": row.name,
        "user": row.user,
        "account": row.account,
        "partition": row.partition,
        "state": row.state,
        "desired": row.desired,
        "generation": row.generation,
        "url": f"http://{host}:{row.router_port}",
        "created": row.created,
        "last_scale": row.last_scale,
        "last_scale_time": row.last_scale_time,
    }


def show(ctl: Ctl, who: Principal, name: str) -> dict[str, Any]:
    now = time.time()
    with ctl.sessions() as s:
        row = _row(s, who, name, "see")
        reps = svcrepo.replicas(s, name, live=False)[-50:]
        live = svcrepo.replicas(s, name, live=True)
        events = svcrepo.events(s, name, limit=40)
        gpu_seconds = svcrepo.gpu_seconds(s, name, now)
    out = _summary(row, ctl)
    out.update(_health(ctl, row, live + reps, now))
    out["spec"] = json.loads(row.spec)
    out["replicas"] = [
        {"id": r.id, "job_id": r.job_id, "generation": r.generation, "state": r.state,
         "address": f"{r.host}:{r.port}" if r.host else "", "created": r.created,
         "ready": r.ready, "ended": r.ended, "reason": r.reason,
         "ready_after": (r.ready - r.decided) if r.ready else None}
        for r in reps
    ]  # fmt: skip
    out["ready"] = sum(r.state == "Ready" for r in reps)
    out["events"] = [
        {"time": e.time, "kind": e.kind, "message": e.message, "value": e.value} for e in events
    ]
    out["gpu_hours"] = gpu_seconds / 3600.0
    stats = ctl.services.snapshot().get(name) if ctl.services else None
    out["traffic"] = _traffic(stats)
    return out


def _traffic(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    win = stats["window"]
    return {
        "requests": stats["requests"],
        "codes": stats["codes"],
        "errors": stats["errors"],
        "retries": stats["retries"],
        "inflight": stats["inflight"],
        "buffered": stats["buffered"],
        "window_seconds": win["seconds"],
        "answered_in_window": win["answered"],
        "ttfb": win["ttfb"],
        "latency": win["latency"],
    }


def scale(
    ctl: Ctl, who: Principal, name: str, replicas: int | None, lo: int | None, hi: int | None
) -> dict[str, Any]:
    """A fixed count (autoscaling off), or new autoscaling bounds."""
    now = time.time()
    with ctl.sessions.begin() as s:
        row = _row(s, who, name, "scale")
        doc = json.loads(row.spec)
        spec = doc["spec"]
        if replicas is not None:
            spec["replicas"] = replicas
            spec.pop("autoscaling", None)
            what = f"scaled to {replicas} replicas by {who.user} (autoscaling off)"
        else:
            if "autoscaling" not in spec:
                raise bad_request(
                    f"service {name} does not autoscale",
                    "min_replicas",
                    "give a count (tide service scale NAME N) or add `autoscaling:` to the spec",
                )
            if lo is not None:
                spec["autoscaling"]["minReplicas"] = lo
            if hi is not None:
                spec["autoscaling"]["maxReplicas"] = hi
            what = f"autoscaling bounds set by {who.user}: {lo}..{hi}"
        parsed, stored = _parse(doc)
        _check_port(ctl, parsed)
        parsed.workdir = stored["spec"].get("workdir", "")
        row.spec = json.dumps(stored, sort_keys=True)
        new = _clamp(parsed, row.desired, now)
        if new != row.desired:
            row.last_scale_time, row.last_scale = now, what
        row.desired = new
        row.updated = now
        svcrepo.event(s, name, now, "scale", what)
        answer = _summary(row, ctl)
    _wake(ctl)
    return answer


def rollout(ctl: Ctl, who: Principal, name: str, restart: bool) -> dict[str, Any]:
    """`restart`: new replicas for all (kubectl rollout restart); always: the status."""
    now = time.time()
    with ctl.sessions.begin() as s:
        row = _row(s, who, name, "roll out")
        if restart:
            row.generation += 1
            row.updated = now
            svcrepo.event(
                s,
                name,
                now,
                "rollout",
                f"restart by {who.user}: rolling update to generation {row.generation}",
            )
        reps = svcrepo.replicas(s, name, live=True)
        gen, desired = row.generation, row.desired
    if restart:
        _wake(ctl)
    new = [r for r in reps if r.generation == gen and r.state != "Draining"]
    old = [r for r in reps if r.generation != gen]
    ready_new = sum(r.state == "Ready" for r in new)
    return {
        "name": name,
        "generation": gen,
        "desired": desired,
        "updated": len(new),
        "updated_ready": ready_new,
        "old": len(old),
        "done": not old and ready_new >= desired and len(new) == desired,
    }


def delete(ctl: Ctl, who: Principal, name: str) -> dict[str, Any]:
    now = time.time()
    with ctl.sessions.begin() as s:
        row = _row(s, who, name, "delete")
        if row.state != DELETING:
            row.state = DELETING
            row.updated = now
            svcrepo.event(s, name, now, "delete", f"deletion asked by {who.user}: draining")
    _wake(ctl)
    return {"name": name, "state": DELETING}


def logs(ctl: Ctl, who: Principal, name: str, replica: int | None, tail: int) -> dict[str, Any]:
    from tide.store.models import JobRow

    tail = max(1, min(tail, LOG_LINES))
    with ctl.sessions() as s:
        row = _row(s, who, name, "read the logs of")
        reps = svcrepo.replicas(s, name, live=False)
        if replica is not None:
            reps = [r for r in reps if r.id == replica]
            if not reps:
                raise not_found("replica", replica, f"see `tide service show {name}`")
        else:
            live = [r for r in reps if r.state in svcrepo.LIVE_REPLICA]
            reps = live or reps[-1:]
        workdir = json.loads(row.spec)["spec"].get("workdir", "")
        out = []
        for r in reps:
            job = s.get(JobRow, r.job_id) if r.job_id else None
            path = job.stdout_path if job is not None else ""
            if not path and r.job_id:  # the pattern replicas are submitted with
                path = str(Path(workdir or "/tmp") / rep.output_name(name, r.job_id))
            uid = _reader_uid(ctl, job.user) if job is not None else _reader_uid(ctl, "")
            out.append({"replica": r.id, "job_id": r.job_id, "path": path,
                        "lines": _tail(path, tail, uid)})  # fmt: skip
    return {"name": name, "replicas": out}


def _reader_uid(ctl: Ctl, user: str) -> int | None:
    """When jobs run as their users, the uid a log must belong to (-1: none can);
    None in single-user mode, where every job's files are the server user's."""
    users = getattr(ctl, "job_users", None)
    if users is None or not users.per_user:
        return None
    from tide.exec import identity

    try:
        return identity.lookup(users.os_user(user)).uid if user else -1
    except identity.IdentityError:
        return -1


def _tail(path: str, n: int, uid: int | None = None) -> list[str]:
    """The last `n` lines of a replica's log. The server may be root and the path is
    the job's: no link is followed, a FIFO does not block, and a file that is not
    the job user's (`uid`) is not shown (it could be anyone's, linked in)."""
    if not path:
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return [f"(cannot read {path}: {e.strerror})"]
    try:
        st = os.fstat(fd)
        if uid is not None and st.st_uid != uid:
            return [f"(cannot read {path}: it does not belong to the job's user)"]
        if not stat.S_ISREG(st.st_mode):
            return [f"(cannot read {path}: not a regular file)"]
        os.lseek(fd, max(0, st.st_size - 256 * n), os.SEEK_SET)
        data = b""
        while len(data) < 256 * n and (chunk := os.read(fd, 256 * n - len(data))):
            data += chunk
    except OSError as e:
        return [f"(cannot read {path}: {e.strerror})"]
    finally:
        os.close(fd)
    return data.decode(errors="replace").splitlines()[-n:]


def pools(ctl: Ctl) -> list[dict[str, Any]]:
    """Each pool's configuration and, after the last pass, what it lends."""
    config = getattr(ctl, "pools", None)
    pooled = getattr(ctl, "pooled", None)
    status = dict(pooled.status) if pooled is not None else {}
    out = []
    for p in config.pools if config is not None else ():
        st = status.get(p.name)
        out.append({
            "name": p.name, "partition": p.partition, "lend_partition": p.lend_partition,
            "mode": p.mode, "lend_after": p.lend_after, "keep_idle": p.keep_idle,
            "reclaim_objective": p.reclaim_objective, "startup": p.startup,
            "gpus": st.gpus if st else None,
            "replica_gpus": st.replica_gpus if st else None,
            "pending_gpus": st.pending_gpus if st else None,
            "borrowed_gpus": st.borrowed_gpus if st else None,
            "budget": st.budget if st else None,
            "held": st.held if st else None,
            "grace": st.grace if st else None,
            "sides": dict(st.sides) if st else {},
        })  # fmt: skip
    return out


def _wake(ctl: Ctl) -> None:
    if getattr(ctl, "services", None) is not None:
        ctl.services.wake()
