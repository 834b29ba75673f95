"""Preemption and quota configuration: slurm.conf GraceTime / PreemptExemptTime,
the YAML `quotas:` section (round trip, errors naming the field and the fix)."""

from __future__ import annotations

import pytest

from tide.config.errors import ConfigError
from tide.config.slurm_conf import parse_slurm_conf
from tide.config.yaml_load import load_yaml_text
from tide.config.yaml_save import save_yaml
from tide.model.quota import AccountQuota, Cohort

CONF = (
    "ClusterName=c1\nPreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n"
    "PreemptExemptTime=00:05:00\nNodeName=n[1-2] Gres=gpu:4\n"
    "PartitionName=hi Nodes=n[1-2] PriorityTier=2 GraceTime=30\n"
    "PartitionName=lo Nodes=n[1-2] PriorityTier=1\n"
)


def test_slurm_conf_grace_time_and_exempt_time_are_read_not_warned() -> None:
    c = parse_slurm_conf(CONF)
    hi, lo = c.partitions
    assert (hi.grace_time, lo.grace_time) == (30, 0)
    assert c.config.extra["PreemptExemptTime"] == "00:05:00"
    assert not [w for w in c.warnings if "GraceTime" in w or "PreemptExemptTime" in w]


def test_slurm_conf_bad_exempt_time_names_the_key() -> None:
    with pytest.raises(ConfigError, match="PreemptExemptTime"):
        parse_slurm_conf(CONF.replace("00:05:00", "soon"))


YAML = """
name: q
nodes:
- {names: 'n[1-2]', cpus: 4, gpus: {count: 4, type: a100}}
partitions:
- {name: p, nodes: ALL, default: true, grace_time: 45s}
accounts:
  root: {}
  a: {}
  b: {}
  c: {}
quotas:
  preempt_mode: CANCEL
  cohorts:
    top: {nominal: {a100: 2}}
    lab: {parent: top, lending_limit: 1}
  accounts:
    a: {cohort: lab, nominal: {a100: 4}, borrowing_limit: {a100: 2}, weight: 2}
    b: {cohort: lab, nominal: 4, lending_limit: 2, within_account: LowerPriority}
    c: {nominal: 1}
"""


def test_quotas_load_and_round_trip() -> None:
    loaded = load_yaml_text(YAML)
    q = loaded.quotas
    assert q is not None and q.preempt_mode == "CANCEL"
    assert q.cohorts["lab"] == Cohort("lab", "top", {}, {}, {"": 1})
    assert q.accounts["a"] == AccountQuota("a", {"a100": 4}, "lab", {"a100": 2}, {}, 2.0)
    assert q.accounts["b"].nominal == {"": 4} and q.accounts["b"].within_account == "LowerPriority"
    assert loaded.cluster.partitions[0].grace_time == 45
    again = load_yaml_text(save_yaml(loaded))
    assert again.same_model(loaded) and again.quotas == q and not again.warnings


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("    c: {nominal: 1}", "    zz: {nominal: 1}"), "quota for account 'zz'"),
        (("cohort: lab, nominal: {a100: 4}", "cohort: nope, nominal: {a100: 4}"), "cohort 'nope'"),
        (("within_account: LowerPriority", "within_account: Always"), "within_account"),
        (("top: {nominal: {a100: 2}}", "top: {parent: lab}"), "own ancestor"),
        (("nominal: 4,", "nominal: -4,"), "whole number of GPUs"),
        (("preempt_mode: CANCEL", "preempt_mode: SUSPEND"), "write REQUEUE or CANCEL"),
    ],
)
def test_quota_errors_name_the_field_and_the_fix(change: tuple[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        load_yaml_text(YAML.replace(*change))
    assert e.value.fix or "write" in str(e.value)


@pytest.mark.parametrize(
    ("lines", "kill_wait", "message_timeout", "youngest"),
    [
        ("", 30, 10, False),  # slurm.conf(5) defaults
        ("KillWait=2\nMessageTimeout=20\n", 2, 20, False),
        ("SchedulerParameters=bf_interval=1,preempt_youngest_first\n", 30, 10, True),
    ],
)
def test_slurm_conf_preemptor_timing_keys(lines: str, kill_wait: int, message_timeout: int,
                                          youngest: bool) -> None:  # fmt: skip
    c = parse_slurm_conf(lines + CONF)
    cfg = c.config
    assert (cfg.kill_wait, cfg.message_timeout, cfg.preempt_youngest_first) == (
        kill_wait, message_timeout, youngest)  # fmt: skip
    assert not [w for w in c.warnings if "KillWait" in w or "MessageTimeout" in w]


@pytest.mark.parametrize("line", ["KillWait=soon", "MessageTimeout=-1"])
def test_slurm_conf_bad_preemptor_timing_names_the_key(line: str) -> None:
    with pytest.raises(ConfigError, match=line.split("=")[0]):
        parse_slurm_conf(line + "\n" + CONF)
