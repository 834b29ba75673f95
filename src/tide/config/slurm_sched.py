"""slurm.conf scheduling keys -> SchedulerConfig.

SchedulerParameters options are read as slurm.conf(5) defines them:
bf_window is in minutes (stored in seconds), bf_resolution, bf_interval and
max_switch_wait in seconds. sched/backfill maps to conservative backfill
(Slurm reserves resources for every job it tests), sched/builtin to none.
"""

from __future__ import annotations

from collections.abc import Callable

from tide.config.errors import Warnings
from tide.config.slurm_keys import canonical, is_not_modelled, is_plumbing, suggest
from tide.config.values import (
    Loc,
    split_list,
    to_bool,
    to_int,
    to_time,
    to_weights,
)
from tide.model.sched_config import BackfillMode, SchedulerConfig

_BACKFILL = {"sched/backfill": BackfillMode.CONSERVATIVE, "sched/builtin": BackfillMode.NONE}

_WEIGHTS = {
    "priorityweightage": "age",
    "priorityweightfairshare": "fairshare",
    "priorityweightjobsize": "job_size",
    "priorityweightpartition": "partition",
    "priorityweightqos": "qos",
    "priorityweightassoc": "assoc",
}

_PREEMPT_MODES = {"OFF", "CANCEL", "REQUEUE", "SUSPEND", "GANG", "WITHIN", "PRIORITY"}


def apply_global(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    """Apply one global slurm.conf key (not NodeName/PartitionName) to cfg."""
    k = key.lower()
    handler = _HANDLERS.get(k)
    if handler is not None:
        handler(key, value, loc, cfg, warn)
        return
    if k in _WEIGHTS:
        setattr(cfg.weights, _WEIGHTS[k], to_int(key, value, loc))
        return
    cfg.extra[canonical(key)] = value
    if is_plumbing(key):
        return
    if is_not_modelled(key):
        warn.add(loc.file, loc.line, f"{canonical(key)} is not modelled by tide (kept, not used)")
    else:
        warn.add(loc.file, loc.line, f"unknown key {key!r} ignored{suggest(key)}")


def _scheduler_type(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    cfg.scheduler_type = value
    mode = _BACKFILL.get(value.lower())
    if mode is None:
        warn.add(
            loc.file,
            loc.line,
            f"SchedulerType={value} is not sched/backfill or sched/builtin; "
            f"using backfill={cfg.backfill.value}",
        )
    else:
        cfg.backfill = mode
        cfg.will_run_batches = mode is BackfillMode.CONSERVATIVE  # plan as Slurm's backfill
        cfg.array_tasks_by_backfill = mode is BackfillMode.CONSERVATIVE


def _sched_params(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    for item in split_list(value):
        name, _, arg = item.partition("=")
        opt = name.strip().lower()
        if opt == "bf_continue":
            cfg.bf_continue = True
        elif opt == "preempt_youngest_first":  # preempt.c reads it from SchedulerParameters
            cfg.preempt_youngest_first = True
        elif opt == "sched_min_interval" and arg:  # microseconds
            cfg.sched_min_interval = to_int(f"SchedulerParameters {name}", arg, loc) / 1_000_000
        elif opt in _SCHED_OPTS:
            if not arg:
                raise loc.error(
                    f"SchedulerParameters option {name} needs a value", f"write {name}=N"
                )
            attr, scale = _SCHED_OPTS[opt]
            setattr(cfg, attr, to_int(f"SchedulerParameters {name}", arg, loc) * scale)
        else:
            warn.add(
                loc.file,
                loc.line,
                f"SchedulerParameters option {name!r} is not used by tide (ignored)",
            )


# option -> (SchedulerConfig field, multiplier to seconds)
_SCHED_OPTS = {
    "bf_window": ("bf_window", 60),
    "bf_resolution": ("bf_resolution", 1),
    "bf_max_job_test": ("bf_max_job_test", 1),
    "bf_interval": ("bf_interval", 1),
    "default_queue_depth": ("default_queue_depth", 1),
    "max_switch_wait": ("max_switch_wait", 1),
    "max_script_size": ("max_script_size", 1),
    "batch_sched_delay": ("batch_sched_delay", 1),
}


def _time_field(attr: str) -> Callable[[str, str, Loc, SchedulerConfig, Warnings], None]:
    def apply(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
        seconds = to_time(key, value, loc)
        setattr(cfg, attr, 0 if seconds is None else seconds)

    return apply


def _str_field(attr: str) -> Callable[[str, str, Loc, SchedulerConfig, Warnings], None]:
    def apply(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
        setattr(cfg, attr, value)

    return apply


def _list_field(attr: str) -> Callable[[str, str, Loc, SchedulerConfig, Warnings], None]:
    def apply(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
        setattr(cfg, attr, split_list(value))

    return apply


def _weight_tres(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    cfg.weights.tres = to_weights(key, value, loc)


def _favor_small(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    cfg.favor_small = to_bool(key, value, loc)


def _preempt_mode(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    cfg.preempt_mode = check_preempt_mode(key, value, loc)


def _exempt_time(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    """Checked here, kept in `extra` as written: the core reads it from there
    (tide.sched.preempt_rules.Rules), as the YAML's scheduler.extra does."""
    to_time(key, value, loc)
    cfg.extra["PreemptExemptTime"] = value


def check_preempt_mode(key: str, value: str, loc: Loc) -> str:
    parts = [p.upper() for p in split_list(value)]
    bad = [p for p in parts if p not in _PREEMPT_MODES]
    if bad or not parts:
        raise loc.error(
            f"{key}={value!r} is not a preemption mode",
            "write OFF, CANCEL, REQUEUE or SUSPEND[,GANG]",
        )
    return ",".join(parts)


def _max_array_size(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
    size = to_int(key, value, loc)
    if not 0 <= size <= 4_000_001:  # Slurm's own bounds
        raise loc.error(f"MaxArraySize={value} is out of range", "use 0 to 4000001")
    cfg.max_array_size = size


def _int_field(attr: str) -> Callable[[str, str, Loc, SchedulerConfig, Warnings], None]:
    def apply(key: str, value: str, loc: Loc, cfg: SchedulerConfig, warn: Warnings) -> None:
        setattr(cfg, attr, to_int(key, value, loc))

    return apply


_HANDLERS: dict[str, Callable[[str, str, Loc, SchedulerConfig, Warnings], None]] = {
    "schedulertype": _scheduler_type,
    "schedulerparameters": _sched_params,
    "prioritytype": _str_field("priority_type"),
    "priorityweighttres": _weight_tres,
    "prioritydecayhalflife": _time_field("decay_half_life"),
    "prioritymaxage": _time_field("max_age"),
    "prioritycalcperiod": _time_field("priority_calc_period"),
    "priorityfavorsmall": _favor_small,
    "priorityflags": _list_field("priority_flags"),
    "topologyplugin": _str_field("topology_plugin"),
    "selecttype": _str_field("select_type"),
    "selecttypeparameters": _list_field("select_type_parameters"),
    "preempttype": _str_field("preempt_type"),
    "preemptmode": _preempt_mode,
    "preemptexempttime": _exempt_time,
    "maxarraysize": _max_array_size,
    "killwait": _int_field("kill_wait"),  # seconds (slurm.conf(5))
    "messagetimeout": _int_field("message_timeout"),
}
