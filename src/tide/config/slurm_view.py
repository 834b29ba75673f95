"""The scheduler configuration as slurm.conf keys (scontrol show config).

Keys tide models come from SchedulerConfig with Slurm's units (minutes for
bf_window, D-HH:MM:SS for half-lives); the keys a slurm.conf carried that
tide keeps without using (SchedulerConfig.extra) follow as they were read.
"""

from __future__ import annotations

from tide.config.values import format_time
from tide.model.sched_config import SchedulerConfig


def slurm_keys(cluster_name: str, cfg: SchedulerConfig) -> dict[str, str]:
    w = cfg.weights
    params = [
        f"bf_interval={cfg.bf_interval}",
        f"bf_window={cfg.bf_window // 60}",
        f"bf_resolution={cfg.bf_resolution}",
        f"bf_max_job_test={cfg.bf_max_job_test}",
        f"default_queue_depth={cfg.default_queue_depth}",
        f"max_switch_wait={cfg.max_switch_wait}",
    ]
    if cfg.bf_continue:
        params.append("bf_continue")
    if cfg.sched_min_interval:
        params.append(f"sched_min_interval={round(cfg.sched_min_interval * 1e6)}")
    if cfg.batch_sched_delay != 3:
        params.append(f"batch_sched_delay={cfg.batch_sched_delay}")
    tres = ",".join(f"{k}={v:g}" for k, v in sorted(w.tres.items()))
    keys = {
        "ClusterName": cluster_name,
        "SchedulerType": cfg.scheduler_type,
        "SchedulerParameters": ",".join(params),
        "SelectType": cfg.select_type,
        "SelectTypeParameters": ",".join(cfg.select_type_parameters),
        "TopologyPlugin": cfg.topology_plugin,
        "PriorityType": cfg.priority_type,
        "PriorityDecayHalfLife": format_time(cfg.decay_half_life),
        "PriorityCalcPeriod": format_time(cfg.priority_calc_period),
        "PriorityMaxAge": format_time(cfg.max_age),
        "PriorityFavorSmall": "Yes" if cfg.favor_small else "No",
        "PriorityFlags": ",".join(cfg.priority_flags),
        "PriorityWeightAge": str(w.age),
        "PriorityWeightAssoc": str(w.assoc),
        "PriorityWeightFairShare": str(w.fairshare),
        "PriorityWeightJobSize": str(w.job_size),
        "PriorityWeightPartition": str(w.partition),
        "PriorityWeightQOS": str(w.qos),
        "PriorityWeightTRES": tres,
        "PreemptType": cfg.preempt_type,
        "PreemptMode": cfg.preempt_mode,
    }
    for k, v in cfg.extra.items():
        keys.setdefault(k, v)
    return keys
