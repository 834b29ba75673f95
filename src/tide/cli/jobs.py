"""Everyday commands, with Slurm's habits: sbatch, queue (squeue), cancel
(scancel), show (scontrol show), acct (sacct), report (sreport), share
(sshare), prio (sprio), hold/release/requeue/update (scontrol), nodes (sinfo),
node drain/resume, notify. They talk to the server at TIDE_URL with the token
from TIDE_TOKEN or the local token file (see tide.client.discovery).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any

import typer

from tide.client import render
from tide.client.cli_support import JsonOpt, api, csv_list, fail
from tide.display import midnight, parse_time, print_json

Ids = Annotated[list[str], typer.Argument(help="job ids: 12, 12_3 (array task), 12 (whole array)")]
_PASS = {"allow_extra_args": True, "ignore_unknown_options": True}
# top-level words that need neither the twin nor the cluster tools (tide.cli.main)
FAST_COMMANDS = frozenset(
    {
        "sbatch",
        "submit",
        "queue",
        "cancel",
        "hold",
        "release",
        "requeue",
        "update",
        "acct",
        "report",
        "share",
        "prio",
        "nodes",
        "show",
        "node",
        "notify",
        "admin",
        "service",
    }
)


def register(app: typer.Typer) -> None:
    """Add these commands to the top-level `tide` app."""
    for name, fn in _COMMANDS:
        kw: dict[str, Any] = {"context_settings": _PASS} if name in ("sbatch", "submit") else {}
        doc = fn.__doc__ or ""
        short = " ".join(doc.split("\n\n")[0].split()).split(": ")[0].split(", like")[0]
        app.command(name, help=doc, short_help=short.rstrip("."), **kw)(fn)  # type: ignore[type-var]
    app.add_typer(show_app, name="show")
    app.add_typer(node_app, name="node")
    app.add_typer(notify_app, name="notify")


# --- sbatch ------------------------------------------------------------------------


def sbatch(ctx: typer.Context) -> None:
    """Submit a batch script, exactly as sbatch takes it: options, then the script and
    its arguments; #SBATCH lines in the script are read too. Prints
    "Submitted batch job ID" (--parsable: the id alone; --test-only: when it would
    start, submitting nothing; --wait: returns the job's exit code).

    Example: tide sbatch -N2 --gpus-per-node=8 --time=2:00:00 train.sh --lr 3e-4
    """
    from tide.slurm.main import main

    code = main("sbatch", list(ctx.args))
    if code:
        raise typer.Exit(code)


def submit(ctx: typer.Context) -> None:
    """Same as `tide sbatch`.

    Example: tide submit --array=0-9%2 sweep.sh
    """
    sbatch(ctx)


# --- squeue ------------------------------------------------------------------------


def queue(
    user: Annotated[list[str] | None, typer.Option("-u", "--user", help="user(s)")] = None,
    account: Annotated[list[str] | None, typer.Option("-A", "--account")] = None,
    partition: Annotated[list[str] | None, typer.Option("-p", "--partition")] = None,
    states: Annotated[list[str] | None, typer.Option("-t", "--states", help="e.g. PD,R")] = None,
    jobs: Annotated[list[str] | None, typer.Option("-j", "--jobs")] = None,
    name: Annotated[list[str] | None, typer.Option("-n", "--name")] = None,
    start: Annotated[bool, typer.Option("--start", help="planned start of pending jobs")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List pending and running jobs, like squeue: NODELIST(REASON) shows the
    nodes of a running job or why a pending one waits.

    Example: tide queue --start -u alice
    """
    from tide.cli.queue_fast import filters

    params = filters(*map(csv_list, (user, account, partition, states, jobs, name)))
    with api() as c:
        if not as_json:
            # the server renders squeue text from its in-memory queue: fast at 100k jobs
            fmt = "squeue-start" if start else "squeue"
            sys.stdout.write(c.get_text("/v1/jobs", format=fmt, **params))
            return
        data = c.get("/v1/jobs", format="columns", **params)
    cols = data["columns"]
    print_json([dict(zip(cols, r, strict=True)) for r in data["rows"]])


# --- scancel / scontrol --------------------------------------------------------------


def cancel(
    ids: Ids,
    signal: Annotated[str | None, typer.Option("-s", "--signal", help="send SIG instead")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Cancel jobs (pending ones end at once, running ones are killed), or send
    them a signal with --signal.

    Example: tide cancel 12 13_4 --signal USR1
    """
    out = []
    with api() as c:
        for i in ids:
            out += c.delete(f"/v1/jobs/{i}", signal=signal)["jobs"]
    if as_json:
        print_json(out)


def _act(action: str, ids: list[str], as_json: bool) -> None:
    out = []
    with api() as c:
        for i in ids:
            out += c.post(f"/v1/jobs/{i}/{action}")["jobs"]
    if as_json:
        print_json(out)


def hold(ids: Ids, as_json: JsonOpt = False) -> None:
    """Hold pending jobs (scontrol hold): they stay pending until released.

    Example: tide hold 12
    """
    _act("hold", ids, as_json)


def release(ids: Ids, as_json: JsonOpt = False) -> None:
    """Release held jobs (scontrol release).

    Example: tide release 12
    """
    _act("release", ids, as_json)


def requeue(ids: Ids, as_json: JsonOpt = False) -> None:
    """Requeue jobs (scontrol requeue): a running job is killed and waits again.

    Example: tide requeue 12
    """
    _act("requeue", ids, as_json)


def update(
    ids: Ids,
    time_limit: Annotated[str | None, typer.Option("-t", "--time", help="new limit")] = None,
    priority: Annotated[int | None, typer.Option(help="operators: fixed priority")] = None,
    nice: Annotated[int | None, typer.Option(help="nice value")] = None,
    name: Annotated[str | None, typer.Option("-J", "--name")] = None,
    partition: Annotated[str | None, typer.Option("-p", "--partition")] = None,
    qos: Annotated[str | None, typer.Option("-q", "--qos")] = None,
    account: Annotated[str | None, typer.Option("-A", "--account")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a job (scontrol update): time limit, priority, nice, name; partition,
    QOS and account while pending.

    Example: tide update 12 --time 30:00 --nice 100
    """
    body: dict[str, Any] = {
        "priority": priority,
        "nice": nice,
        "name": name,
        "partition": partition,
        "qos": qos,
        "account": account,
    }
    if time_limit is not None:
        from tide.jobspec.timefmt import parse_job_time

        try:
            body["time_limit"] = parse_job_time(time_limit)
        except ValueError as e:
            fail(f"--time={time_limit}: {e}", "use minutes, H:M:S or D-H:M:S")
    body = {k: v for k, v in body.items() if v is not None}
    out = []
    with api() as c:
        for i in ids:
            out += c.patch(f"/v1/jobs/{i}", body)["jobs"]
    if as_json:
        print_json(out)


# --- scontrol show --------------------------------------------------------------------

show_app = typer.Typer(
    help="Show one job, node or partition in detail (scontrol show).", no_args_is_help=True
)


@show_app.command("job")
def show_job(
    job_id: Annotated[str, typer.Argument(help="job id")], as_json: JsonOpt = False
) -> None:
    """Everything about a job: request, allocation, phases, history (scontrol show job).

    Example: tide show job 12
    """
    with api() as c:
        jobs = c.get(f"/v1/jobs/{job_id}")["jobs"]
    if as_json:
        print_json(jobs)
        return
    now = time.time()
    for j in jobs:
        render.show_job(j, now)


@show_app.command("node")
def show_node(name: str, as_json: JsonOpt = False) -> None:
    """One node: state, reason, CPUs, GPUs, jobs (scontrol show node).

    Example: tide show node gpu001
    """
    with api() as c:
        node = c.get(f"/v1/nodes/{name}")
    if as_json:
        print_json(node)
        return
    from tide.slurm import show

    print("\n   ".join(show.node(node)) + "\n")


@show_app.command("partition")
def show_partition(name: str, as_json: JsonOpt = False) -> None:
    """One partition (scontrol show partition).

    Example: tide show partition gpu
    """
    with api() as c:
        parts = [p for p in c.get("/v1/partitions")["partitions"] if p["name"] == name]
    if not parts:
        fail(f"partition {name!r} not found", "list them with `tide nodes`")
    if as_json:
        print_json(parts[0])
        return
    from tide.slurm import show

    with api() as c:
        nodes = {n["name"]: n for n in c.get("/v1/nodes")["nodes"]}
        mode = (c.get("/v1/cluster").get("config") or {}).get("PreemptMode", "OFF")
    print("\n   ".join(show.partition(parts[0], nodes, mode)) + "\n")


# --- sacct / sreport / sshare / sprio -----------------------------------------------------


def acct(
    jobs: Annotated[list[str] | None, typer.Option("-j", "--jobs")] = None,
    user: Annotated[list[str] | None, typer.Option("-u", "--user")] = None,
    account: Annotated[list[str] | None, typer.Option("-A", "--account")] = None,
    states: Annotated[list[str] | None, typer.Option("-s", "--state")] = None,
    starttime: Annotated[
        str | None, typer.Option("-S", "--starttime", help="default: today 00:00")
    ] = None,
    endtime: Annotated[str | None, typer.Option("-E", "--endtime")] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "-o", "--format", help="fields, e.g. JobID,State,Elapsed,AllocGPUS,GPUHours,NodeList"
        ),
    ] = "",
    allusers: Annotated[bool, typer.Option("-a", "--allusers")] = False,
    parsable: Annotated[bool, typer.Option("-P", "--parsable2", help="'|'-separated")] = False,
    efficiency: Annotated[
        bool,
        typer.Option(
            "--efficiency", help="per account: tokens, tokens/s, step time p50/p95, MFU"
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Accounting records of jobs, like sacct: your jobs since midnight by default.
    Fields: JobID JobIDRaw JobName User Account Partition QOS State ExitCode Submit
    Start End Elapsed ElapsedRaw Timelimit NNodes NodeList AllocCPUS AllocGPUS ReqGPUS
    GPUSeconds GPUHours Restarts Preemptions Preemptor LostGPUSeconds Reason Priority,
    and training efficiency: Tokens TokensPerSec StepTimeP50 StepTimeP95 MFU MFUEffective
    (NAME%WIDTH truncates).

    Example: tide acct -S now-2days --format JobID,JobName%20,State,Elapsed,GPUHours,MFU
    Example: tide acct --efficiency -a -S now-7days
    """
    try:
        start = parse_time(starttime) if starttime else midnight()
        end = parse_time(endtime) if endtime else None
        render.acct_fields(fmt or render.DEFAULT_ACCT)
    except ValueError as e:
        fail(str(e))
        return
    with api() as c:
        users = csv_list(user)
        if not users and not allusers:
            users = [c.get("/v1/whoami")["user"]]
        ids = csv_list(jobs)
        data = c.get(
            "/v1/jobs",
            all=True,
            job=ids,
            user=users,
            account=csv_list(account),
            state=[s.upper() for s in csv_list(states)] or None,
            start=None if ids else start,
            end=end,
            efficiency=render.wants_efficiency(fmt) or None,
        )
        accounts = None
        if efficiency:
            wanted = csv_list(account) or None
            accounts = c.get("/v1/efficiency", since=start, account=wanted)["accounts"]
    if as_json:
        print_json({"jobs": data["jobs"], "accounts": accounts} if efficiency else data["jobs"])
        return
    if efficiency and accounts is not None:
        render.efficiency_by_account(accounts, parsable)
        return
    render.acct(data["jobs"], fmt, time.time(), parsable)


def report(
    starttime: Annotated[str, typer.Option("-S", "--starttime")] = "now-1day",
    endtime: Annotated[str, typer.Option("-E", "--endtime")] = "now",
    by: Annotated[str, typer.Option(help="user or account")] = "user",
    as_json: JsonOpt = False,
) -> None:
    """GPU-hours and cost by account and user over a period, like sreport
    (cost uses the prices set with `tide admin price set`).

    Example: tide report -S 2026-01-01 -E 2026-02-01 --by account
    """
    try:
        s, e = parse_time(starttime), parse_time(endtime)
    except ValueError as err:
        fail(str(err))
        return
    with api() as c:
        data = c.get("/v1/usage/report", start=s, end=e, by=by)
    if as_json:
        print_json(data)
        return
    render.report(data)


def share(
    quota: Annotated[bool, typer.Option("--quota", help="only the quota table")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fair-share of every account and user (sshare -l style): shares, usage, factor;
    then, when the cluster has quotas, per account and cohort and GPU type: nominal,
    in use, borrowed and lent GPUs ([name] = a cohort).

    Example: tide share --quota
    """
    with api() as c:
        data = c.get("/v1/share")
    if as_json:
        print_json(data.get("quotas", []) if quota else data)
        return
    if not quota:
        render.share(data["rows"])
    if data.get("quotas"):
        if not quota:
            print()
        render.quotas(data["quotas"])
    elif quota:
        print("no quotas: the cluster file has no `quotas:` section (docs/preemption.md)")


def prio(
    jobs: Annotated[list[str] | None, typer.Option("-j", "--jobs")] = None,
    user: Annotated[list[str] | None, typer.Option("-u", "--user")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Priority of pending jobs, factor by factor (sprio): age, fair-share, size...

    Example: tide prio -u alice
    """
    with api() as c:
        rows = c.get("/v1/priority", job=csv_list(jobs), user=csv_list(user))["jobs"]
    if as_json:
        print_json(rows)
        return
    render.prio(rows)


# --- sinfo / scontrol update node ------------------------------------------------------


def nodes(
    by_switch: Annotated[bool, typer.Option("--switch", help="group by leaf switch")] = False,
    long: Annotated[bool, typer.Option("-N", "--long", help="one line per node")] = False,
    partition: Annotated[str | None, typer.Option("-p", "--partition")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Nodes and partitions, like sinfo: grouped by partition and state (default),
    by switch (--switch), or one line per node (-N).

    Example: tide nodes --switch
    """
    with api() as c:
        ns = c.get("/v1/nodes")["nodes"]
        parts = c.get("/v1/partitions")["partitions"]
    if partition:
        parts = [p for p in parts if p["name"] == partition]
        keep = {n for p in parts for n in p["nodes"]}
        ns = [n for n in ns if n["name"] in keep]
    if as_json:
        print_json({"nodes": ns, "partitions": parts})
    elif long:
        render.nodes_long(ns)
    elif by_switch:
        render.nodes_by_switch(ns)
    else:
        render.nodes_by_partition(parts, ns)


node_app = typer.Typer(
    help="Change node state: drain, resume, down (scontrol update node).", no_args_is_help=True
)


def _node_state(action: str, names: str, reason: str) -> None:
    with api() as c:
        res = c.post(f"/v1/nodes/{names}/{action}", {"reason": reason})
    for n in res["nodes"]:
        print(f"{n['name']}: {n['state']}" + (f" ({n['reason']})" if n["reason"] else ""))


@node_app.command("drain")
def node_drain(
    names: Annotated[str, typer.Argument(help="node names or a hostlist: gpu[01-04]")],
    reason: Annotated[str, typer.Option("--reason", "-r", help="why (required)")] = "",
) -> None:
    """Drain nodes: running jobs finish, no new ones start.

    Example: tide node drain gpu[01-02] --reason "bad NVLink"
    """
    if not reason:
        fail("--reason is required to drain a node", 'e.g. --reason "replacing a GPU"')
    _node_state("drain", names, reason)


@node_app.command("resume")
def node_resume(names: Annotated[str, typer.Argument(help="node names or a hostlist")]) -> None:
    """Return drained or down nodes to service.

    Example: tide node resume gpu[01-02]
    """
    _node_state("resume", names, "")


@node_app.command("down")
def node_down(
    names: Annotated[str, typer.Argument(help="node names or a hostlist")],
    reason: Annotated[str, typer.Option("--reason", "-r")] = "",
) -> None:
    """Mark nodes DOWN (unusable): their jobs are killed and end NODE_FAIL (or wait
    again if submitted with --requeue), as Slurm does.

    Example: tide node down gpu03 --reason "PSU failure"
    """
    if not reason:
        fail("--reason is required to mark a node down", 'e.g. --reason "PSU failure"')
    _node_state("down", names, reason)


@node_app.command("fail")
def node_fail(
    names: Annotated[str, typer.Argument(help="node names or a hostlist")],
    reason: Annotated[str, typer.Option("--reason", "-r")] = "",
) -> None:
    """Simulate a node failure (local executor): the node's agent is killed, the
    node goes DOWN, its jobs lose it (requeued when they may be, else NODE_FAIL),
    and it stays out of scheduling until `tide node resume`.

    Example: tide node fail gpu03 --reason "chaos test"
    """
    _node_state("fail", names, reason)


# --- notify (from inside a job) --------------------------------------------------------------

notify_app = typer.Typer(
    help="Report a job's progress from inside it (phase timestamps).", no_args_is_help=True
)


def _notify(event: str, step: int | None, job: str | None, **extra: float | None) -> None:
    from tide.client import connect

    job_id = job or os.environ.get("SLURM_JOB_ID") or os.environ.get("TIDE_JOB_ID")
    if not job_id:
        fail("no job id: not inside a job", "run it in a job script, or pass --job ID")
    from tide.client import ClientError

    client = connect(token=os.environ.get("TIDE_JOB_TOKEN") or None)
    try:
        body = {"event": event, "step": step, **{k: v for k, v in extra.items() if v is not None}}
        client.post(f"/v1/jobs/{job_id}/notify", body)
    except ClientError as e:
        fail(e.error, e.fix)
    finally:
        client.close()


@notify_app.command("step")
def notify_step(
    step: Annotated[int, typer.Argument(help="training step number", min=0)],
    tokens: Annotated[
        float | None, typer.Option(help="tokens processed since the previous report", min=0)
    ] = None,
    flops_per_token: Annotated[
        float | None, typer.Option(help="the model's training FLOPs per token (for MFU)")
    ] = None,
    params: Annotated[
        float | None, typer.Option(help="the model's parameters: FLOPs per token = 6 x params")
    ] = None,
    job: Annotated[str | None, typer.Option(help="default: $SLURM_JOB_ID")] = None,
) -> None:
    """Report training step N (the first report is the job's first-step time), with
    the tokens processed since the previous report: tide derives tokens/s, step
    time p50/p95 and MFU (docs/dashboard.md). The model's size can be declared
    here or in the job's --comment (flops_per_token=X or params=P).

    Example: tide notify step 100 --tokens 524288 --params 7e9
    """
    for name, v in (("--flops-per-token", flops_per_token), ("--params", params)):
        if v is not None and not v > 0:
            fail(f"{name}={v}: must be positive", f"e.g. {name}=7e9")
    _notify("step", step, job, tokens=tokens, flops_per_token=flops_per_token, params=params)


@notify_app.command("running")
def notify_running(
    job: Annotated[str | None, typer.Option(help="default: $SLURM_JOB_ID")] = None,
) -> None:
    """Report that all tasks of the job are running.

    Example: srun --ntasks=1 tide notify running
    """
    _notify("tasks_running", None, job)


@notify_app.command("checkpoint")
def notify_checkpoint(
    step: Annotated[int | None, typer.Argument(help="training step saved (optional)")] = None,
    job: Annotated[str | None, typer.Option(help="default: $SLURM_JOB_ID")] = None,
) -> None:
    """Report a completed checkpoint: a preemption or a failure after it loses only
    the work done since.

    Example: tide notify checkpoint 1200
    """
    _notify("checkpoint", step, job)


_COMMANDS = [
    ("sbatch", sbatch),
    ("submit", submit),
    ("queue", queue),
    ("cancel", cancel),
    ("hold", hold),
    ("release", release),
    ("requeue", requeue),
    ("update", update),
    ("acct", acct),
    ("report", report),
    ("share", share),
    ("prio", prio),
    ("nodes", nodes),
]
