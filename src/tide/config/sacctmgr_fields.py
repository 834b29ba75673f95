"""sacctmgr option names -> Limits / Qos fields, shared by the dump reader and
the QOS table reader. Spellings from sacctmgr(1): full names, the short forms
`sacctmgr show` prints (MaxTRESPU, GrpSubmit, ...) and the CPU/node shorthands
(GrpCPUs = GrpTRES cpu). Times take Slurm's formats (a bare number is minutes,
except GraceTime, which sacctmgr keeps in seconds).
"""

from __future__ import annotations

from tide.config.errors import Warnings
from tide.config.values import Loc, parse_time, split_list, to_float, to_int, to_tres
from tide.model import Limits, Qos

# option (lower case) -> (Limits field, TRES name for shorthands or "")
_TRES = {
    "grptres": ("grp_tres", ""), "grpcpus": ("grp_tres", "cpu"),
    "grpnodes": ("grp_tres", "node"), "grpmem": ("grp_tres", "mem"),
    "maxtres": ("max_tres_per_job", ""), "maxtresperjob": ("max_tres_per_job", ""),
    "maxtrespj": ("max_tres_per_job", ""), "maxcpus": ("max_tres_per_job", "cpu"),
    "maxcpusperjob": ("max_tres_per_job", "cpu"), "maxnodes": ("max_tres_per_job", "node"),
    "maxnodesperjob": ("max_tres_per_job", "node"),
    "maxtrespernode": ("max_tres_per_node", ""), "maxtrespn": ("max_tres_per_node", ""),
    "maxtresperuser": ("max_tres_per_user", ""), "maxtrespu": ("max_tres_per_user", ""),
    "maxcpusperuser": ("max_tres_per_user", "cpu"), "maxcpuspu": ("max_tres_per_user", "cpu"),
    "maxnodesperuser": ("max_tres_per_user", "node"),
    "maxnodespu": ("max_tres_per_user", "node"),
}
_COUNTS = {
    "grpjobs": "grp_jobs", "grpsubmitjobs": "grp_submit_jobs", "grpsubmit": "grp_submit_jobs",
    "maxjobs": "max_jobs", "maxsubmitjobs": "max_submit_jobs", "maxsubmit": "max_submit_jobs",
    "maxjobsperuser": "max_jobs_per_user", "maxjobspu": "max_jobs_per_user",
    "maxsubmitjobsperuser": "max_submit_jobs_per_user",
    "maxsubmitpu": "max_submit_jobs_per_user",
}
_WALL = {"maxwall", "maxwalldurationperjob", "maxwallpj"}

# Limits Slurm enforces that tide does not model: warned once each.
NOT_MODELLED = {
    "grptresmins", "grptresrunmins", "grpwall", "grpjobsaccrue", "grpcpumins", "grpcpurunmins",
    "maxtresmins", "maxtresminsperjob", "maxtresminspj", "maxtresrunmins", "maxjobsaccrue",
    "maxcpumins", "maxcpuminsperjob", "limitfactor", "maxjobsperaccount",
    "maxjobspa", "maxjobsaccrueperaccount", "maxjobsaccrueperuser", "maxsubmitjobsperaccount",
    "maxsubmitpa", "maxtresperaccount", "maxtrespa", "maxtresrunminsperaccount",
    "maxtresrunminsperuser", "maxtresrunminspa", "maxtresrunminspu", "minpriothresh",
    "mintresperjob", "mintres", "usagethreshold", "usagethres",
}


def is_limit(key: str) -> bool:
    k = key.lower()
    return k in _TRES or k in _COUNTS or k in _WALL


def set_limit(limits: Limits, key: str, value: str, loc: Loc) -> None:
    """Apply one limit option; '' and -1 clear it (unlimited)."""
    k = key.lower()
    v = value.strip()
    if k in _TRES:
        attr, tres = _TRES[k]
        target: dict[str, int] = getattr(limits, attr)
        if tres:
            if v in ("", "-1"):
                target.pop(tres, None)
            else:
                target[tres] = to_int(key, v, loc)
        else:
            target.clear()
            target.update(to_tres(key, v, loc) if v else {})
    elif k in _COUNTS:
        setattr(limits, _COUNTS[k], None if v in ("", "-1") else to_int(key, v, loc))
    elif k in _WALL:
        limits.max_wall = wall_time(key, v, loc)


def wall_time(key: str, value: str, loc: Loc) -> int | None:
    if value in ("", "-1"):
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise loc.error(f"{key}={value!r} is not a time",
                        f"write minutes or D-HH:MM:SS, e.g. {key}=2-00:00:00") from None


def set_qos_option(qos: Qos, key: str, value: str, loc: Loc, warn: Warnings,
                   warned: set[str]) -> None:
    k = key.lower()
    v = value.strip()
    if is_limit(k):
        set_limit(qos.limits, key, v, loc)
    elif k == "priority":
        qos.priority = to_int(key, v or "0", loc)
    elif k == "preempt":
        qos.preempt = split_list(v)
    elif k == "preemptmode":
        qos.preempt_mode = "" if v.lower() in ("", "cluster") else v.upper()
    elif k == "preemptexempttime":
        qos.preempt_exempt_time = wall_time(key, v, loc)
    elif k == "gracetime":
        qos.grace_time = _grace(key, v, loc)
    elif k == "usagefactor":
        qos.usage_factor = to_float(key, v or "1", loc)
    elif k == "flags":
        qos.flags = split_list(v)
    elif k in ("description", "name", "id"):
        return
    else:
        unmodelled(key, loc, warn, warned, "QOS")


def _grace(key: str, value: str, loc: Loc) -> int:
    if not value:
        return 0
    if value.isdigit():
        return int(value)
    seconds = wall_time(key, value, loc)
    return seconds or 0


def unmodelled(key: str, loc: Loc, warn: Warnings, warned: set[str], what: str) -> None:
    k = key.lower()
    if k in warned:
        return
    warned.add(k)
    if k in NOT_MODELLED:
        warn.add(loc.file, loc.line, f"{what} option {key} is not modelled by tide (ignored)")
    else:
        warn.add(loc.file, loc.line, f"unknown {what} option {key!r} ignored")
