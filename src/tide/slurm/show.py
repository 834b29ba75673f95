"""scontrol show's key=value records: a job, a node, a partition, the config.

Each record is a list of lines (the first unindented, the others indented by
scontrol). Keys tide does not model keep Slurm's spelling of "nothing" ((null),
N/A, 0) so that scripts reading them find every key where Slurm puts it.
"""

from __future__ import annotations

import time
from typing import Any

from tide.display import hms
from tide.hostlist import expand

NULL = "(null)"


def _ts(t: float | None, none: str = "Unknown") -> str:
    return none if t is None else time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def _uid(user: str) -> str:
    try:
        import pwd

        return f"{user}({pwd.getpwnam(user).pw_uid})"
    except (ImportError, KeyError):
        return f"{user}(?)"


def _gid(user: str) -> str:
    try:
        import grp
        import pwd

        gid = pwd.getpwnam(user).pw_gid
        return f"{grp.getgrgid(gid).gr_name}({gid})"
    except (ImportError, KeyError):
        return f"{user}(?)"


def job(j: dict[str, Any], now: float) -> list[str]:
    req = j.get("request") or {}
    started, ended = j.get("start_time"), j.get("end_time")
    run = ((ended or now) - started) if started else 0
    nodelist = j.get("nodelist")
    nodes = _count(nodelist) if nodelist else (j.get("nodes_req") or 1)
    cpus = j.get("cpus_alloc") or req.get("cpus_per_task") or 1
    gpus = j.get("gpus_alloc") or j.get("gpus_req") or 0
    first = ""
    if j.get("nodelist"):
        first = expand(j["nodelist"])[0]
    tres = f"cpu={cpus},node={nodes},billing={cpus}" + (f",gres/gpu={gpus}" if gpus else "")
    head = f"JobId={j['id']}"
    if j.get("array_job_id") is not None:
        head += f" ArrayJobId={j['array_job_id']} ArrayTaskId={j['array_task_id']}"
    dep = j.get("dependency") or NULL
    limit = j.get("time_limit")
    return [
        f"{head} JobName={j.get('name') or ''}",
        f"UserId={_uid(j['user'])} GroupId={_gid(j['user'])} MCS_label=N/A",
        f"Priority={int(j.get('priority') or 0)} Nice={j.get('nice') or 0} "
        f"Account={j.get('account') or ''} QOS={j.get('qos') or 'normal'}",
        f"JobState={j['state']} Reason={j.get('reason') or 'None'} Dependency={dep}",
        f"Requeue={1 if req.get('requeue', True) is not False else 0} "
        f"Restarts={j.get('restarts') or 0} BatchFlag=1 Reboot=0 ExitCode={j.get('exit') or '0:0'}",
        f"RunTime={hms(run)} TimeLimit={hms(limit)} TimeMin=N/A",
        f"SubmitTime={_ts(j.get('submit_time'))} EligibleTime={_ts(j.get('submit_time'))}",
        f"AccrueTime={_ts(j.get('submit_time'))}",
        f"StartTime={_ts(started if started else j.get('planned_start'))} "
        f"EndTime={_ts(ended if ended else (started + limit if started and limit else None))} "
        "Deadline=N/A",
        f"PreemptEligibleTime={_ts(started)} PreemptTime=None",
        "SuspendTime=None SecsPreSuspend=0 LastSchedEval=" + _ts(now) + " Scheduler=Main",
        f"Partition={j.get('run_partition') or j.get('partition') or ''} AllocNode:Sid=localhost:0",
        f"ReqNodeList={(req.get('nodelist') and ','.join(req['nodelist'])) or NULL} "
        f"ExcNodeList={(req.get('exclude') and ','.join(req['exclude'])) or NULL}",
        f"NodeList={j.get('nodelist') or NULL}",
        *([f"BatchHost={first}"] if first else []),
        f"NumNodes={nodes} NumCPUs={cpus} NumTasks={req.get('ntasks') or nodes} "
        f"CPUs/Task={req.get('cpus_per_task') or 1} ReqB:S:C:T=0:0:*:*",
        f"TRES={tres}",
        "Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*",
        f"MinCPUsNode={req.get('cpus_per_task') or 1} {_min_memory(req)} MinTmpDiskNode=0",
        f"Features={req.get('constraint') or NULL} DelayBoot=00:00:00",
        f"OverSubscribe={'NO' if req.get('exclusive') else 'OK'} Contiguous=0 "
        "Licenses=(null) Network=(null)",
        f"Command={_command(j)}",
        f"WorkDir={j.get('workdir') or ''}",
        f"StdErr={j.get('stderr') or j.get('stdout') or ''}",
        "StdIn=/dev/null",
        f"StdOut={j.get('stdout') or ''}",
        "Power=",
        *_tres_per(req),
    ]


def _min_memory(req: dict[str, Any]) -> str:
    """MinMemoryCPU= for --mem-per-cpu, else MinMemoryNode= (0: none asked for)."""
    if req.get("mem_per_cpu"):
        return f"MinMemoryCPU={_mb(req['mem_per_cpu'])}"
    return f"MinMemoryNode={_mb(req.get('mem_per_node') or 0) if req.get('mem_per_node') else 0}"


def _mb(mb: float) -> str:
    """Slurm's unit conversion of MB: 65536 -> 64G, 1536 -> 1.50G, 1000 -> 1000M."""
    units, i = "MGTP", 0
    while mb >= 1024 and i < len(units) - 1:
        mb /= 1024
        i += 1
    return f"{mb:.0f}{units[i]}" if mb == int(mb) else f"{mb:.2f}{units[i]}"


def _tres_per(req: dict[str, Any]) -> list[str]:
    """The GPUs as asked: TresPerNode (--gpus-per-node/--gres), TresPerJob (--gpus),
    TresPerTask (--gpus-per-task); none for a job that asked for none."""
    kind = f"gpu:{req['gpu_type']}" if req.get("gpu_type") else "gpu"
    out = []
    for key, name in (("gpus_per_node", "TresPerNode"), ("gpus", "TresPerJob"),
                      ("gpus_per_task", "TresPerTask")):  # fmt: skip
        if req.get(key):
            out.append(f"{name}=gres:{kind}:{req[key]}")
    return out


def _command(j: dict[str, Any]) -> str:
    args = j.get("script_args") or []
    return " ".join(args) if args else NULL


def node(n: dict[str, Any]) -> list[str]:
    gres = (f"gpu:{n['gpu_type']}:{n['gpus']}" if n.get("gpu_type") else f"gpu:{n['gpus']}")
    gres = gres if n.get("gpus") else NULL
    mem_g = f"{int(n['memory']) // 1024}G" if n.get("memory") else "0"
    gpu_tres = f",gres/gpu={n['gpus']}" if n.get("gpus") else ""
    alloc = []
    if n.get("cpus_alloc"):
        alloc.append(f"cpu={n['cpus_alloc']}")
    if n.get("mem_alloc"):
        alloc.append(f"mem={n['mem_alloc']}M")
    if n.get("gpus_alloc"):
        alloc.append(f"gres/gpu={n['gpus_alloc']}")
    features = ",".join(n.get("features") or []) or NULL
    state = n["state"]
    lines = [
        f"NodeName={n['name']} Arch=x86_64 CoresPerSocket={n.get('cores_per_socket', 1)} ",
        f"CPUAlloc={n.get('cpus_alloc', 0)} CPUEfctv={n['cpus']} CPUTot={n['cpus']} CPULoad=N/A",
        f"AvailableFeatures={features}",
        f"ActiveFeatures={features}",
        f"Gres={gres}",
        f"NodeAddr={n.get('address') or n['name']} NodeHostName={n['name']} Version=tide",
        f"RealMemory={n.get('memory', 0)} AllocMem={n.get('mem_alloc', 0)} FreeMem=N/A "
        f"Sockets={n.get('sockets', 1)} Boards=1",
        f"State={state} ThreadsPerCore={n.get('threads_per_core', 1)} TmpDisk=0 Weight=1 "
        "Owner=N/A MCS_label=N/A",
        f"Partitions={','.join(n.get('partitions') or [])} ",
        f"CfgTRES=cpu={n['cpus']},mem={mem_g},billing={n['cpus']}{gpu_tres}",
        f"AllocTRES={','.join(alloc)}",
        "CapWatts=n/a",
        "CurrentWatts=0 AveWatts=0",
        "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
    ]
    if n.get("reason"):
        lines.append(f"Reason={n['reason']}")
    return lines


def partition(p: dict[str, Any], nodes: dict[str, dict[str, Any]], preempt: str) -> list[str]:
    members = [nodes[x] for x in p.get("nodes") or [] if x in nodes]
    cpus = sum(n["cpus"] for n in members)
    mem = sum(int(n.get("memory") or 0) for n in members)
    gpus = sum(int(n.get("gpus") or 0) for n in members)
    from tide.hostlist import compress

    accounts = ",".join(p.get("allow_accounts") or []) or "ALL"
    qos = ",".join(p.get("allow_qos") or []) or "ALL"
    max_time = "UNLIMITED" if p.get("max_time") is None else hms(p["max_time"])
    def_time = "NONE" if p.get("default_time") is None else hms(p["default_time"])
    gpu_tres = f",gres/gpu={gpus}" if gpus else ""
    return [
        f"PartitionName={p['name']}",
        f"AllowGroups=ALL AllowAccounts={accounts} AllowQos={qos}"
        + (f" DenyAccounts={','.join(p['deny_accounts'])}" if p.get("deny_accounts") else "")
        + (f" DenyQos={','.join(p['deny_qos'])}" if p.get("deny_qos") else ""),
        f"AllocNodes=ALL Default={'YES' if p.get('default') else 'NO'} QoS=N/A",
        f"DefaultTime={def_time} DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO",
        f"MaxNodes={p.get('max_nodes') or 'UNLIMITED'} MaxTime={max_time} MinNodes=0 LLN=NO "
        "MaxCPUsPerNode=UNLIMITED",
        f"Nodes={compress(p.get('nodes') or [])}",
        f"PriorityJobFactor=1 PriorityTier={p.get('priority_tier', 1)} RootOnly=NO ReqResv=NO "
        "OverSubscribe=NO",
        f"OverTimeLimit=NONE PreemptMode={p.get('preempt_mode') or preempt}",
        f"State={p.get('state', 'UP')} TotalCPUs={cpus} TotalNodes={len(members)} "
        "SelectTypeParameters=NONE",
        "JobDefaults=(null)",
        "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED",
        f"TRES=cpu={cpus},mem={mem // 1024}G,node={len(members)},billing={cpus}{gpu_tres}",
    ]


def config(cluster: dict[str, Any]) -> str:
    """`scontrol show config`: the header line, then `Key = Value` lines sorted."""
    conf: dict[str, Any] = dict(cluster.get("config") or {})
    conf.setdefault("ClusterName", cluster.get("name", ""))
    width = max([len(k) for k in conf] + [23])
    lines = [f"Configuration data as of {_ts(time.time())}"]
    lines += [f"{k.ljust(width)} = {_value(v)}" for k, v in sorted(conf.items())]
    return "\n".join(lines) + "\n"


def _value(v: Any) -> str:
    if v is None or v == "":
        return NULL
    return str(v)


def _count(nodelist: str) -> int:
    try:
        return len(expand(nodelist))
    except ValueError:
        return 1
