"""Slurm-like text views of API answers: sacct, sinfo, sshare, sprio, sreport,
scontrol show. Pure functions of the JSON the server returns. (`tide queue`
prints the server's text, laid out by tide.queue_table.)"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any

from tide.display import (
    duration,
    hms,
    percent,
    seconds_short,
    si,
    table,
    timestamp,
)
from tide.hostlist import compress, expand
from tide.queue_table import job_id_text

LIVE = {"RUNNING", "COMPLETING", "SUSPENDED"}


def _jid(r: dict[str, Any]) -> str:
    return job_id_text(r["id"], r.get("array_job_id"), r.get("array_task_id"))


def _nnodes(r: dict[str, Any]) -> int:
    if r.get("nodelist"):
        try:
            return len(expand(r["nodelist"]))
        except ValueError:
            return r.get("nodes_req") or 1
    return r.get("nodes_req") or 1


# --- sacct ---------------------------------------------------------------------


def _elapsed(r: dict[str, Any], now: float) -> float:
    if r.get("start_time") is None:
        return 0.0
    return (r.get("end_time") or now) - r["start_time"]


ACCT_FIELDS: dict[str, Any] = {
    "jobid": ("JobID", lambda r, n: _jid(r)),
    "jobidraw": ("JobIDRaw", lambda r, n: str(r["id"])),
    "jobname": ("JobName", lambda r, n: r["name"]),
    "user": ("User", lambda r, n: r["user"]),
    "account": ("Account", lambda r, n: r["account"]),
    "partition": ("Partition", lambda r, n: r["run_partition"] or r["partition"]),
    "qos": ("QOS", lambda r, n: r["qos"]),
    "state": ("State", lambda r, n: r["state"]),
    "exitcode": ("ExitCode", lambda r, n: r["exit"] or "0:0"),
    "submit": ("Submit", lambda r, n: timestamp(r["submit_time"])),
    "start": ("Start", lambda r, n: timestamp(r["start_time"])),
    "end": ("End", lambda r, n: timestamp(r["end_time"])),
    "elapsed": ("Elapsed", lambda r, n: hms(_elapsed(r, n))),
    "elapsedraw": ("ElapsedRaw", lambda r, n: int(_elapsed(r, n))),
    "timelimit": ("Timelimit", lambda r, n: hms(r["time_limit"])),
    "nnodes": ("NNodes", lambda r, n: _nnodes(r)),
    "nodelist": ("NodeList", lambda r, n: r["nodelist"] or "None assigned"),
    "allocgpus": ("AllocGPUS", lambda r, n: r["gpus_alloc"]),
    "alloccpus": ("AllocCPUS", lambda r, n: r.get("cpus_alloc") or 0),
    "reqgpus": ("ReqGPUS", lambda r, n: r["gpus_req"]),
    "gpuseconds": ("GPUSeconds", lambda r, n: int(r["gpu_seconds"] + _live_gpu_s(r, n))),
    "gpuhours": ("GPUHours", lambda r, n: f"{(r['gpu_seconds'] + _live_gpu_s(r, n)) / 3600:.2f}"),
    "restarts": ("Restarts", lambda r, n: r["restarts"]),
    "preemptions": ("Preemptions", lambda r, n: r.get("preemptions") or 0),
    "preemptor": ("Preemptor", lambda r, n: r.get("preempted_by") or ""),
    "lostgpuseconds": ("LostGPUSeconds", lambda r, n: f"{r.get('lost_gpu_seconds') or 0:.0f}"),
    "reason": ("Reason", lambda r, n: r["reason"]),
    "tokens": ("Tokens", lambda r, n: si(_eff(r, "tokens"))),
    "tokenspersec": ("TokensPerSec", lambda r, n: si(_eff(r, "tokens_per_s"))),
    "steptimep50": ("StepTimeP50", lambda r, n: seconds_short(_eff(r, "step_p50"))),
    "steptimep95": ("StepTimeP95", lambda r, n: seconds_short(_eff(r, "step_p95"))),
    "mfu": ("MFU", lambda r, n: percent(_eff(r, "mfu"))),
    "mfueffective": ("MFUEffective", lambda r, n: percent(_eff(r, "mfu_effective"))),
    "priority": ("Priority", lambda r, n: int(r["priority"] or 0)),
}
DEFAULT_ACCT = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"  # sacct's default
EFFICIENCY_FIELDS = {"tokens", "tokenspersec", "steptimep50", "steptimep95", "mfu", "mfueffective"}


def _eff(r: dict[str, Any], key: str) -> Any:
    return (r.get("efficiency") or {}).get(key)


def wants_efficiency(spec: str) -> bool:
    return any(w.partition("%")[0].strip().lower() in EFFICIENCY_FIELDS for w in spec.split(","))


def _live_gpu_s(r: dict[str, Any], now: float) -> float:
    if r["state"] in LIVE and r.get("start_time"):
        return (now - r["start_time"]) * (r["gpus_alloc"] or 0)
    return 0.0


def acct_fields(spec: str) -> list[tuple[str, Any, int | None]]:
    """--format=JobID,JobName%30,...: (header, getter, width or None)."""
    out = []
    for word in [w for w in spec.split(",") if w]:
        name, _, width = word.partition("%")
        key = name.strip().lower()
        if key not in ACCT_FIELDS:
            known = ",".join(h for h, _ in ACCT_FIELDS.values())
            raise ValueError(f"--format: unknown field {name!r}; fields: {known}")
        header, getter = ACCT_FIELDS[key]
        out.append((header, getter, int(width) if width.isdigit() else None))
    return out


def acct(jobs: list[dict[str, Any]], spec: str, now: float, parsable: bool = False) -> None:
    fields = acct_fields(spec or DEFAULT_ACCT)
    rows = []
    for r in jobs:
        row = []
        for _, getter, width in fields:
            v = str(getter(r, now))
            row.append(v[:width] if width else v)
        rows.append(row)
    if parsable:
        lines = ["|".join(h for h, _, _ in fields)] + ["|".join(r) for r in rows]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    table([h for h, _, _ in fields], rows)


def _efficiency_row(a: dict[str, Any]) -> list[Any]:
    rates = [si(a["tokens"]), si(a["tokens_per_s"]), si(a["live_tokens_per_s"])]
    steps = [seconds_short(a["step_p50"]), seconds_short(a["step_p95"])]
    return [a["account"], a["jobs"], a["running"], *rates, *steps,
            percent(a["mfu"]), percent(a["mfu_effective"])]  # fmt: skip


def efficiency_by_account(accounts: list[dict[str, Any]], parsable: bool = False) -> None:
    """tide acct --efficiency: one line per account (docs/twin-metrics.md)."""
    headers = ["Account", "Jobs", "Running", "Tokens", "TokensPerSec", "LiveTokensPerSec",
               "StepTimeP50", "StepTimeP95", "MFU", "MFUEffective"]  # fmt: skip
    rows = [_efficiency_row(a) for a in accounts]
    if parsable:
        lines = ["|".join(headers)] + ["|".join(map(str, r)) for r in rows]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    table(headers, rows, right=set(range(1, 10)))


# --- sinfo ---------------------------------------------------------------------


def nodes_by_partition(parts: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
    by_name = {n["name"]: n for n in nodes}
    rows = []
    for p in parts:
        groups: dict[str, list[str]] = defaultdict(list)
        for name in p["nodes"]:
            n = by_name.get(name)
            if n is not None:
                groups[n["state"].lower()].append(name)
        for state, names in sorted(groups.items()):
            gpus = sum(by_name[x]["gpus"] for x in names)
            used = sum(by_name[x]["gpus_alloc"] for x in names)
            rows.append(
                [
                    p["name"] + ("*" if p["default"] else ""),
                    p["state"].lower(),
                    duration(p["max_time"]) if p["max_time"] else "infinite",
                    len(names),
                    state,
                    f"{used}/{gpus}",
                    compress(names),
                ]
            )
    table(
        ["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "GPUS(A/T)", "NODELIST"],
        rows,
        right={3},
    )


def nodes_by_switch(nodes: list[dict[str, Any]]) -> None:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for n in nodes:
        groups[(n.get("switch") or "-", n["state"].lower())].append(n)
    rows = []
    for (switch, state), ns in sorted(groups.items()):
        gpus = sum(n["gpus"] for n in ns)
        used = sum(n["gpus_alloc"] for n in ns)
        path = ns[0].get("switch_path") or switch
        rows.append(
            [switch, path, len(ns), state, f"{used}/{gpus}", compress([n["name"] for n in ns])]
        )
    table(["SWITCH", "PATH", "NODES", "STATE", "GPUS(A/T)", "NODELIST"], rows, right={2})


def nodes_long(nodes: list[dict[str, Any]]) -> None:
    rows = [
        [
            n["name"],
            ",".join(n["partitions"]),
            n["state"].lower(),
            f"{n['cpus_alloc']}/{n['cpus']}",
            f"{n['gpus_alloc']}/{n['gpus']}",
            n["gpu_type"] or "-",
            n["memory"],
            n.get("switch") or "-",
            n["reason"] or "none",
        ]
        for n in nodes
    ]
    table(
        [
            "NODELIST",
            "PARTITION",
            "STATE",
            "CPUS(A/T)",
            "GPUS(A/T)",
            "GPU_TYPE",
            "MEMORY",
            "SWITCH",
            "REASON",
        ],
        rows,
    )


# --- sshare / sprio / sreport ------------------------------------------------------


def share(rows: list[dict[str, Any]]) -> None:
    def f(v: float | None, digits: int = 6) -> str:
        return "" if v is None else f"{v:.{digits}f}"

    out = [
        [
            " " * r["depth"] + r["account"],
            r["user"],
            "parent" if r["raw_shares"] == -1 else r["raw_shares"],
            f(r["norm_shares"]),
            int(r["raw_usage"]),
            f(r["eff_usage"]),
            f(r["fairshare"]),
        ]
        for r in rows
    ]
    table(
        ["Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage", "FairShare"],
        out,
        right={2, 3, 4, 5, 6},
    )


def quotas(rows: list[dict[str, Any]]) -> None:
    """Kueue-style quotas: one line per account (then cohort) and GPU type."""

    def lim(v: int | None) -> str:
        return "-" if v is None else str(v)

    out = [
        [r["name"] if r["kind"] == "account" else f"[{r['name']}]", r["cohort"] or "-",
         r["gpu_type"] or "any", r["nominal"], r["in_use"], r["borrowed"], r["lent"],
         lim(r["borrowing_limit"]), lim(r["lending_limit"])]
        for r in rows
    ]  # fmt: skip
    table(["Account", "Cohort", "GpuType", "Nominal", "InUse", "Borrowed", "Lent",
           "BorrowLimit", "LendLimit"], out, right={3, 4, 5, 6, 7, 8})  # fmt: skip


def prio(rows: list[dict[str, Any]]) -> None:
    out = [
        [
            r["job_id"],
            r["partition"],
            r["user"],
            int(r["total"]),
            int(r["site"]),
            int(r["age"]),
            int(r["assoc"]),
            int(r["fairshare"]),
            int(r["job_size"]),
            int(r["partition_factor"]),
            int(r["qos"]),
            int(r["nice"]),
            ",".join(f"{k}={int(v)}" for k, v in r.get("tres", {}).items()),
        ]
        for r in rows
    ]
    table(
        [
            "JOBID",
            "PARTITION",
            "USER",
            "PRIORITY",
            "SITE",
            "AGE",
            "ASSOC",
            "FAIRSHARE",
            "JOBSIZE",
            "PARTITION",
            "QOS",
            "NICE",
            "TRES",
        ],
        out,
        right=set(range(3, 12)),
    )


def report(data: dict[str, Any]) -> None:
    s, e = data["start"], data["end"]
    sys.stdout.write(
        f"GPU usage {timestamp(s)} - {timestamp(e)} ({(e - s) / 3600:.1f} h)"
        f", GPU-hours and cost at the configured prices\n"
    )
    rows = [
        [
            r["account"],
            r["user"] or "(all)",
            r["gpu_type"] or "-",
            r["jobs"],
            f"{r['gpu_hours']:.2f}",
            f"{r.get('lost_gpu_seconds', 0.0) / 3600:.2f}",
            f"{r['cost']:.2f}",
        ]
        for r in data["lines"]
    ]
    lost = f"{data.get('total_lost_gpu_hours', 0.0):.2f}"
    total = ["TOTAL", "", "", "", f"{data['total_gpu_hours']:.2f}", lost]
    rows.append([*total, f"{data['total_cost']:.2f}"])
    head = ["Account", "User", "GPU type", "Jobs", "GPU-hours", "Lost GPU-h", "Cost"]
    table(head, rows, right={3, 4, 5, 6})


# --- scontrol show job ---------------------------------------------------------------


def show_job(j: dict[str, Any], now: float) -> None:
    t = j["phases"]["times"]
    run = _elapsed(j, now)
    lines = [
        f"JobId={j['id']} JobName={j['name']}"
        + (
            f" ArrayJobId={j['array_job_id']} ArrayTaskId={j['array_task_id']}"
            if j.get("array_job_id") is not None
            else ""
        ),
        f"   UserId={j['user']} Account={j['account']} QOS={j['qos']}",
        f"   Priority={int(j['priority'] or 0)} Nice={j['nice']}"
        + (f" PriorityOverride={j['priority_override']}" if j["priority_override"] else ""),
        f"   JobState={j['state']} Reason={j['reason']} Dependency={j['dependency'] or '(null)'}",
        f"   Requeue={'yes' if j['restarts'] else 'no'} Restarts={j['restarts']} "
        f"ExitCode={j['exit'] or '0:0'} Held={j['held'] or 'no'}",
        f"   RunTime={duration(run)} TimeLimit={duration(j['time_limit'])}",
        f"   SubmitTime={timestamp(t['submitted'])} EligibleTime={timestamp(t['eligible'])}",
        f"   StartTime={timestamp(t['started'])} EndTime={timestamp(t['ended'])}",
        f"   TasksRunningTime={timestamp(t['tasks_running'])} "
        f"FirstStepTime={timestamp(t['first_step'])} LastStep={j['phases']['last_step']}",
        f"   Partition={j['run_partition'] or j['partition']} "
        f"NodeList={j['nodelist'] or '(null)'} NumNodes={_nnodes(j)}",
        f"   ReqGPUs={j['gpus_req']} AllocGPUs={j['gpus_alloc']} GpuType={j['gpu_type'] or '-'}"
        f" GPUSeconds={int(j['gpu_seconds'] + _live_gpu_s(j, now))}",
        f"   WorkDir={j['workdir']} SubmitDir={j['submit_dir']}",
    ]
    lines.extend(_preemption_lines(j.get("preemption")))
    lines.extend(_recovery_lines(j))
    lines.extend(_efficiency_lines(j.get("efficiency"), j.get("request", {}).get("comment", "")))
    if j.get("planned_start") and j["state"] == "PENDING":
        lines.append(
            f"   PlannedStart={timestamp(j['planned_start'])} "
            f"PlannedNodes={j['planned_nodes'] or '(null)'}"
        )
    if j.get("allocation"):
        parts = []
        for na in j["allocation"]["nodes"]:
            parts.append(
                f"node#{na['node']}:gpus={','.join(map(str, na['gpus'])) or '-'}"
                f":cores={len(na['cores'])}:mem={na['mem']}M"
            )
        lines.append("   Allocation=" + " ".join(parts))
    waits = [f"{k}={v:.1f}s" for k, v in j["phases"]["waits"].items() if v is not None]
    if waits:
        lines.append("   Phases: " + " ".join(waits))
    for w in j.get("warnings", []):
        lines.append(f"   Warning: {w}")
    lines.append("   History:")
    for h in j["history"]:
        lines.append(
            f"     {timestamp(h['time'])} {h['from'] or '-':>10} -> {h['to']:<10} "
            f"{h['reason']} ({h['actor']})"
        )
    sys.stdout.write("\n".join(lines) + "\n\n")


def _efficiency_lines(e: dict[str, Any] | None, comment: str) -> list[str]:
    """Training efficiency (docs/twin-metrics.md, "Training efficiency")."""
    out = [f"   Comment={comment}"] if comment else []
    if not e:
        return out
    fpt = e.get("flops_per_token")
    out.append(
        f"   Tokens={si(e['tokens'])} TokensPerSec={si(e['tokens_per_s'])} "
        f"StepTimeP50={seconds_short(e['step_p50'])} StepTimeP95={seconds_short(e['step_p95'])}"
    )
    out.append(
        f"   MFU={percent(e['mfu'])} MFUEffective={percent(e['mfu_effective'])} "
        f"FlopsPerToken={si(fpt) if fpt else 'Unknown'} "
        f"PeakTFLOPS={e['peak_tflops'] if e.get('peak_tflops') else 'Unknown'}x{e['gpus']}"
    )
    return out


def _recovery_lines(j: dict[str, Any]) -> list[str]:
    """Checkpoint, first failure and one line per attempt (docs/recovery.md)."""
    r = j.get("recovery")
    if not r:
        return []
    ckpt = r["last_checkpoint_step"]
    out = [
        f"   LastStep={r['last_step'] if r['last_step'] is not None else '-'} "
        f"LastCheckpoint={ckpt if ckpt is not None else '-'}"
        f"@{timestamp(r['last_checkpoint_time'])} "
        f"LostGPUSeconds={(r['lost_gpu_seconds'] or 0):.0f}"
    ]
    if r["fail_cause"]:
        out.append(f"   FailCause={r['fail_cause']}")
    for a in j.get("attempts", []):
        out.append(
            f"   Attempt={a['attempt']} State={a['state']} Exit={a['exit'] or '-'} "
            f"Start={timestamp(a['start'])} End={timestamp(a['end'])} Nodes={a['nodelist']} "
            f"LostGPUSeconds={(a.get('lost_gpu_seconds') or 0):.0f}"
            + (f" Cause={a['cause']}" if a.get("cause") else "")
        )
    return out


def _preemption_lines(p: dict[str, Any] | None) -> list[str]:
    """scontrol-style fields of the job's last preemption (docs/preemption.md)."""
    if not p:
        return []
    return [
        f"   Preemptor={p['preemptor']} PreemptTime={timestamp(p['time'])} "
        f"PreemptMode={p['mode']} Preemptions={p['count']} PreemptPhase={p['phase']}",
        f"   PreemptLostGPUSeconds={p['lost_gpu_seconds']:.0f} "
        f"TotalLostGPUSeconds={(p['total_lost_gpu_seconds'] or 0):.0f} "
        f"LastCheckpoint={timestamp(p['last_checkpoint'])} "
        f"SuspendedSeconds={(p['suspended_seconds'] or 0):.0f}",
        f"   PreemptReason={p['reason']}",
    ]


def now() -> float:
    return time.time()
