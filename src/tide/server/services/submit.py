"""Submission: sbatch script/options or a JSON spec -> checked job rows.

Everything is checked before anything is stored; the rows of one submission
(all tasks of an array) are inserted in one transaction by the writer, so a
bad submission stores nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from tide.model import JobRequest, Partition
from tide.model.sched_config import SchedulerConfig
from tide.server.auth import Principal
from tide.server.errors import bad_request, forbidden, not_found
from tide.server.ports import Ctl
from tide.server.schemas import JobSpec, SubmitBody
from tide.server.services import feasible
from tide.store import codec

MAX_JOB_ID = 2**31 - 1  # larger ids name no job (the store's INTEGER ids)


@dataclass(slots=True)
class Prepared:
    rows: list[dict[str, Any]]
    warnings: list[str]
    request: JobRequest | None = None  # as stored (every task of an array shares it)

    @property
    def job_ids(self) -> list[int]:
        return [r["id"] for r in self.rows]


def build_request(
    body: SubmitBody, now: float, config: SchedulerConfig | None = None
) -> tuple[JobRequest, str, list[str], list[str]]:
    """(request, script, script_args, warnings) from a submit body.

    `argv` is sbatch's command line after "sbatch" (options, then optionally
    the script's path and its arguments), read with the script's #SBATCH
    lines and the SBATCH_* variables of `env`, in sbatch's precedence; the
    site's limits (MaxArraySize, max_script_size) come from `config`."""
    from tide.jobspec.errors import JobSpecError
    from tide.jobspec.sbatch import parse_args, parse_script

    cfg = config or SchedulerConfig()
    script = body.script
    _check_script_size(script, cfg.max_script_size)
    argv = list(body.argv)
    if body.wrap:
        if script:
            raise bad_request("give either a script or --wrap, not both", "wrap", "drop one")
        argv += ["--wrap", body.wrap]
    warnings: list[str] = []
    script_args = list(body.script_args)
    try:
        if script:
            parsed = parse_script(
                script, argv, now, env=body.env, max_array_size=cfg.max_array_size
            )
            req, script = parsed.request, parsed.script
            script_args = list(parsed.script_args) or script_args
        elif argv:
            args = parse_args(argv, now, env=body.env, max_array_size=cfg.max_array_size)
            req, script = args.request, args.script or ""
            script_args = list(args.remainder[1:]) or script_args
        else:
            req = JobRequest()
    except JobSpecError as e:
        raise bad_request(str(e), _option_of(e), _fix_of(e)) from e
    if body.job:
        req = _overlay(req, body.job)
    if not script:
        raise bad_request(
            "no batch script: the job has nothing to run",
            "script",
            "send the script body in 'script' (starting with #!) or a command in 'wrap'",
        )
    if not script.startswith("#!"):
        raise bad_request(
            "this does not look like a batch script: the first line must start with #! "
            "followed by the path to an interpreter",
            "script",
            "add a first line such as #!/bin/bash",
        )
    _check_script_size(script, cfg.max_script_size)  # a --wrap command too
    return req, script, script_args, warnings + list(req.warnings)


def _check_script_size(script: str, limit: int) -> None:
    size = len(script.encode("utf-8"))
    if size > limit:
        raise bad_request(
            f"the batch script is {size:,} bytes, more than this site's max_script_size "
            f"({limit:,} bytes)",
            "script",
            "keep data out of the script: read it from a file the script names",
        )


def _overlay(req: JobRequest, job: JobSpec) -> JobRequest:
    """The fields `job` gives (already checked by the schema) over `req`."""
    spec = job.model_dump(exclude_unset=True)
    given = codec.request_from_dict(spec)
    return replace(req, **{k: getattr(given, k) for k in spec})


def _option_of(e: Exception) -> str:
    return str(getattr(e, "option", "") or "script")


def _fix_of(e: Exception) -> str:
    """JobSpecError's `accepted` says what to write instead (when it names an option)."""
    if getattr(e, "option", ""):
        return str(getattr(e, "accepted", "") or "see `tide sbatch --help`")
    return "edit the batch script as the error says (see `tide sbatch --help`)"


def prepare(ctl: Ctl, who: Principal, body: SubmitBody) -> Prepared:
    now = time.time()
    if who.role == "job":
        raise forbidden("a job token cannot submit jobs", "use your own token")
    user = who.user
    if body.user and body.user != who.user:
        if not who.operator:
            raise forbidden(
                f"only operators may submit as another user (you are {who.user!r})",
                "drop 'user' from the request",
            )
        _check_user_exists(ctl, body.user)
        ctl.job_users.check_acting(who.role, who.user, body.user)
        user = body.user
    ctl.job_users.check(user)  # an OS account to run as; single-user mode: the server's
    req, script, script_args, warnings = build_request(body, now, ctl.config)
    check_privileges(who, req.priority, req.nice)
    req, account, qos, parts = resolve(ctl, req, user)
    feasible.check(ctl.cluster, req, parts, ctl.feasible_cache)
    _check_dependency(ctl, req)
    # stored without the hold flag: that is the job's `held`, so a release clears it
    stored = replace(req, hold=False)
    held = req.hold
    rows = _rows(ctl, stored, held, user, account, qos, script, script_args, body, now, warnings)
    ctl.active.prime({r["id"]: stored for r in rows})
    return Prepared(rows, warnings, stored)


def check_privileges(who: Principal, priority: int | None, nice: int | None) -> None:
    """--priority and a negative --nice raise a job over others: operators only,
    at submit as at update (Slurm's rule)."""
    if priority is not None and not who.operator:
        raise forbidden(
            f"only operators may set a job's priority (--priority={priority})",
            "drop --priority; use --nice=N (N >= 0) to lower your own job's priority",
        )
    if nice is not None and nice < 0 and not who.operator:
        raise forbidden(
            f"only operators may set a negative nice (--nice={nice})",
            "use a nice >= 0",
        )


def _check_user_exists(ctl: Ctl, user: str) -> None:
    from tide.store import accounts as acctrepo

    with ctl.sessions() as s:
        known = acctrepo.get_user(s, user) is not None
    with ctl.lock:
        known = known or any(u.user == user for u in ctl.tree.users)
    if not known:
        raise not_found(
            "user", user, f"create the user first: tide admin user add {user} --account ACCOUNT"
        )


def resolve(ctl: Ctl, req: JobRequest, user: str) -> tuple[JobRequest, str, str, list[Partition]]:
    """Fill account, QOS, partitions and the time limit the way slurmctld does."""
    with ctl.lock:
        tree = ctl.tree
    account = req.account or tree.default_account(user) or ""
    if not account:
        if ctl.settings.enforce_associations:
            raise bad_request(
                f"user {user!r} has no account",
                "account",
                f"ask an admin: tide admin user add {user} --account ACCOUNT",
            )
        account = "root"
    if account not in tree.accounts:
        raise bad_request(
            f"InvalidAccount: --account={account}: no such account",
            "account",
            f"use one of: {', '.join(sorted(tree.accounts))}",
        )
    assoc = tree.assoc(user, account)
    mine = sorted({u.account for u in tree.user_assocs_of(user)})
    # Without enforcement a user with no association at all may use any account
    # (a fresh local install just works); one with associations uses only those.
    if assoc is None and (ctl.settings.enforce_associations or mine):
        raise bad_request(
            f"InvalidAccount: --account={account}: user {user!r} is not a member of this account",
            "account",
            f"use one of your accounts: {', '.join(mine)}"
            if mine
            else f"ask an admin: tide admin user add {user} --account {account}",
        )
    qos = req.qos or (assoc.default_qos if assoc else "") or tree.accounts[account].default_qos
    qos = qos or "normal"
    if qos not in tree.qos:
        raise bad_request(
            f"InvalidQOS: --qos={qos}: no such QOS",
            "qos",
            f"use one of: {', '.join(sorted(tree.qos))}",
        )
    allowed = (assoc.qos if assoc else ()) or tree.accounts[account].qos
    if allowed and qos not in allowed:
        raise bad_request(
            f"InvalidQOS: --qos={qos} is not in the QOS list of user {user!r} on account "
            f"{account!r}",
            "qos",
            f"use one of: {', '.join(allowed)} (or ask an admin to add {qos})",
        )
    names = list(req.partitions)
    if not names:
        default = ctl.cluster.default_partition()
        if default is None:
            raise bad_request("the cluster has no partition", "partition", "fix the cluster file")
        names = [default.name]
    parts = []
    for name in names:
        p = ctl.cluster.partition(name)
        if p is None:
            raise bad_request(
                f"--partition={name}: no such partition",
                "partition",
                f"use one of: {', '.join(x.name for x in ctl.cluster.partitions)}",
            )
        if p.state == "INACTIVE":
            raise bad_request(
                f"--partition={name}: partition is INACTIVE and takes no jobs",
                "partition",
                "pick another partition",
            )
        if p.refuses_account(account):
            raise bad_request(
                f"AccountNotAllowed: --partition={name}: account {account!r} may not use "
                "this partition",
                "partition",
                f"accounts allowed: {', '.join(p.allow_accounts)}"
                if p.allow_accounts
                else f"accounts denied: {', '.join(p.deny_accounts)}; use another account "
                "or partition",
            )
        if p.refuses_qos(qos):
            raise bad_request(
                f"QOSNotAllowed: --partition={name}: QOS {qos!r} may not use this partition",
                "partition",
                f"QOS allowed: {', '.join(p.allow_qos)}"
                if p.allow_qos
                else f"QOS denied: {', '.join(p.deny_qos)}; use another QOS or partition",
            )
        parts.append(p)
    most = max(len(p.nodes) for p in parts)  # a range is bounded by the cluster, as Slurm does
    if req.nodes_max is not None and req.nodes_max > most:
        req = replace(req, nodes_max=max(most, req.nodes_min or 1))
    limit = req.time_limit
    if limit is None:
        p0 = parts[0]
        limit = p0.default_time if p0.default_time is not None else p0.max_time
    if req.time_limit is not None and req.time_limit <= 0:
        raise bad_request("--time must be positive", "time", "e.g. --time=1:00:00")
    req = replace(req, account=account, qos=qos, partitions=tuple(names), time_limit=limit)
    return req, account, qos, parts


def _check_dependency(ctl: Ctl, req: JobRequest) -> None:
    """Dependencies must name jobs tide knows (the core treats unknown as done)."""
    if req.dependency is None:
        return
    from tide.store import jobs as jobrepo

    wanted = {j.split("_", 1)[0] for item in req.dependency.items for j in item.job_ids}
    ids = {int(j) for j in wanted if j.isdigit()}
    bad = sorted(wanted - {str(i) for i in ids})
    if bad:
        raise bad_request(
            f"--dependency: {bad[0]!r} is not a job id", "dependency", "e.g. afterok:123"
        )
    huge = sorted(i for i in ids if i > MAX_JOB_ID)
    if huge:
        raise bad_request(
            f"--dependency: job {huge[0]} does not exist",
            "dependency",
            "name jobs that `tide queue` or `tide acct` shows",
        )
    if not ids:
        return
    with ctl.sessions() as s:
        f = jobrepo.JobFilter(ids=tuple(ids), array_ids=tuple(ids))
        found = {r[0] for r in jobrepo.query_columns(s, ["id"], f)}
        found |= {r[0] for r in jobrepo.query_columns(s, ["array_job_id"], f) if r[0]}
    missing = sorted(ids - found)
    if missing:
        raise bad_request(
            f"--dependency: job {missing[0]} does not exist",
            "dependency",
            "name jobs that `tide queue` or `tide acct` shows",
        )


def _rows(
    ctl: Ctl,
    req: JobRequest,
    held: bool,
    user: str,
    account: str,
    qos: str,
    script: str,
    script_args: list[str],
    body: SubmitBody,
    now: float,
    warnings: list[str],
) -> list[dict[str, Any]]:
    tasks: list[int | None] = [None]
    if req.array is not None:
        if not req.array.task_ids:
            raise bad_request("--array: no task ids", "array", "e.g. --array=0-15%4")
        top = max(req.array.task_ids)
        limit = ctl.config.max_array_size
        if top >= limit:
            raise bad_request(
                f"--array: index {top} is not below MaxArraySize={limit}",
                "array",
                f"use indexes 0-{max(0, limit - 1)} (split a bigger sweep into several arrays)",
            )
        tasks = list(req.array.task_ids)
    # sbatch always sends its cwd; an API client that does not gets its HOME (or /tmp)
    cwd = body.cwd or body.env.get("HOME", "") or "/tmp"
    ids = ctl.next_ids(len(tasks))
    lo, _ = req.node_range()
    common = {
        "name": req.name,
        "user": user,
        "account": account,
        "partition": ",".join(req.partitions),
        "qos": qos,
        "state": "PENDING",
        "reason": "JobHeldUser" if held else "None",
        "held": "user" if held else "",
        "nice": req.nice,
        "priority_override": req.priority,
        "dependency": codec.dependency_text(req.dependency),
        "request": codec.request_json(req),
        "script": script,
        "script_args": json.dumps(script_args),
        "env": json.dumps(_exported_env(req.export, body.env)),
        "workdir": req.chdir or cwd,
        "submit_dir": cwd,
        "time_limit": req.time_limit,
        "gpus_req": req.total_gpus(lo),
        "nodes_req": lo,
        "submit_time": now,
        "warnings": json.dumps(warnings),
    }
    rows = []
    for job_id, task in zip(ids, tasks, strict=True):
        row = dict(common, id=job_id)
        if task is not None:
            row["array_job_id"] = ids[0]
            row["array_task_id"] = task
        rows.append(row)
    return rows


def _exported_env(export: str, env: dict[str, str]) -> dict[str, str]:
    """--export: ALL (default), NONE, or a list of names / NAME=value (with ALL)."""
    parts = [p for p in (export or "ALL").split(",") if p]
    names = {p.upper() for p in parts}
    out = dict(env) if "ALL" in names else {}
    for p in parts:
        if p.upper() in ("ALL", "NONE"):
            continue
        if "=" in p:
            k, v = p.split("=", 1)
            out[k] = v
        elif p in env:
            out[p] = env[p]
    if "SLURM_UMASK" in env:  # whatever is exported, the job keeps the submitter's umask
        out.setdefault("SLURM_UMASK", env["SLURM_UMASK"])
    return out


def test_only(ctl: Ctl, who: Principal, body: SubmitBody) -> dict[str, Any]:
    """sbatch --test-only: the job is checked as a submission is, and a scheduling
    pass on a copy of the queue says when and where it would start; nothing is
    stored (the id it is shown under is not given to any job)."""
    from tide.model.job import Job

    now = time.time()
    ctl.job_users.check(who.user)
    req, _, _, warnings = build_request(body, now)
    req, account, qos, parts = resolve(ctl, req, who.user)
    feasible.check(ctl.cluster, req, parts, ctl.feasible_cache)
    _check_dependency(ctl, req)
    (job_id,) = ctl.next_ids(1)
    job = Job(job_id, replace(req, hold=False), user=who.user, account=account, qos=qos, submit=now)
    w = ctl.loop.will_run(job)
    return {
        "job_id": job_id,
        "start": w.start,
        "nodes": w.nodes,
        "partition": w.partition or (parts[0].name if parts else ""),
        "cpus": w.cpus,
        "reason": w.reason,
        "warnings": warnings,
    }
