"""SBATCH_* input variables, and precedence: #SBATCH < SBATCH_* < command line
(sbatch(1), INPUT ENVIRONMENT VARIABLES)."""

from __future__ import annotations

import pytest

from tide.jobspec.errors import JobSpecError
from tide.jobspec.sbatch import parse_args, parse_script
from tide.model import ArraySpec, SignalSpec


def script(*lines: str) -> str:
    return "\n".join(["#!/bin/bash", *lines, ""])


ENV_CASES: list[tuple[str, str, str, object]] = [
    ("SBATCH_ACCOUNT", "proj", "account", "proj"),
    ("SBATCH_ARRAY_INX", "0-3%2", "array", ArraySpec((0, 1, 2, 3), 2)),
    ("SBATCH_CONSTRAINT", "a100", "constraint", "a100"),
    ("SBATCH_CPUS_PER_GPU", "8", "cpus_per_gpu", 8),
    ("SBATCH_EXCLUSIVE", "", "exclusive", True),
    ("SBATCH_EXPORT", "NONE", "export", "NONE"),
    ("SBATCH_GPUS", "a100:8", "gpus", 8),
    ("SBATCH_GPUS_PER_NODE", "4", "gpus_per_node", 4),
    ("SBATCH_GPUS_PER_TASK", "1", "gpus_per_task", 1),
    ("SBATCH_GRES", "gpu:2", "gpus_per_node", 2),
    ("SBATCH_GRES_FLAGS", "enforce-binding", "enforce_binding", True),
    ("SBATCH_JOB_NAME", "envname", "name", "envname"),
    ("SBATCH_MEM_PER_CPU", "2G", "mem_per_cpu", 2048),
    ("SBATCH_MEM_PER_GPU", "10G", "mem_per_gpu", 10240),
    ("SBATCH_MEM_PER_NODE", "64G", "mem_per_node", 65536),
    ("SBATCH_NO_REQUEUE", "1", "requeue", False),
    ("SBATCH_REQUEUE", "", "requeue", True),
    ("SBATCH_PARTITION", "gpu,cpu", "partitions", ("gpu", "cpu")),
    ("SBATCH_QOS", "high", "qos", "high"),
    ("SBATCH_REQ_SWITCH", "2", "switches", 2),
    ("SBATCH_WAIT4SWITCH", "30:00", "switches_wait", 1800),
    ("SBATCH_RESERVATION", "resv", "reservation", "resv"),
    ("SBATCH_SIGNAL", "B:USR1@30", "signal", SignalSpec("USR1", 30, batch_only=True)),
    ("SBATCH_TIMELIMIT", "4:00:00", "time_limit", 4 * 3600),
    ("SBATCH_OUTPUT", "o.log", "output", "o.log"),
    ("SBATCH_ERROR", "e.log", "error", "e.log"),
]


@pytest.mark.parametrize(("var", "value", "field", "expected"), ENV_CASES,
                         ids=[c[0] for c in ENV_CASES])
def test_env_variable_sets_its_option(var: str, value: str, field: str, expected: object) -> None:
    assert getattr(parse_args([], env={var: value}).request, field) == expected
    assert getattr(parse_script(script(), env={var: value}).request, field) == expected


@pytest.mark.parametrize("var", ["SBATCH_WCKEY", "SBATCH_HINT", "SLURM_HINT", "SBATCH_PROFILE"])
def test_ignored_env_variables_warn(var: str) -> None:
    parsed = parse_args([], env={var: "x"})
    assert len(parsed.warnings) == 1
    assert parsed.warnings[0].startswith(f"{var} (--")
    assert parsed.warnings[0].endswith("is accepted but ignored by tide")


def test_other_variables_are_not_read() -> None:
    parsed = parse_args([], env={"HOME": "/home/me", "SLURM_JOB_ID": "5", "SBATCH_NODES": "9"})
    assert parsed.warnings == ()
    assert parsed.request.nodes_min is None


def test_env_beats_script_and_command_line_beats_env() -> None:
    text = script("#SBATCH -p script_p --qos=script_q -t 10 -A script_a")
    env = {"SBATCH_PARTITION": "env_p", "SBATCH_QOS": "env_q", "SBATCH_TIMELIMIT": "20"}
    req = parse_script(text, ["--qos=cli_q"], env=env).request
    assert req.partitions == ("env_p",)  # env over script
    assert req.qos == "cli_q"  # command line over env
    assert req.time_limit == 1200  # env over script
    assert req.account == "script_a"  # only the script set it


@pytest.mark.parametrize(
    ("value", "requeue"),
    [("", False), ("yes", False), ("1", False), ("-2", False), ("0", None), ("no", None)],
)
def test_env_flags_follow_sbatch_rules(value: str, requeue: bool | None) -> None:
    """A flag variable is on when empty, "yes" or a non-zero number; else it clears."""
    assert parse_args([], env={"SBATCH_NO_REQUEUE": value}).request.requeue is requeue


def test_env_flag_off_clears_the_script_setting() -> None:
    req = parse_script(script("#SBATCH --no-requeue"), env={"SBATCH_NO_REQUEUE": "no"}).request
    assert req.requeue is None


def test_env_error_names_the_variable() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_args([], env={"SBATCH_TIMELIMIT": "abc"})
    assert str(caught.value).startswith("SBATCH_TIMELIMIT: --time=abc: not a time")
    assert caught.value.where == "SBATCH_TIMELIMIT"


def test_memory_from_env_yields_to_script_or_command_line() -> None:
    env = {"SBATCH_MEM_PER_NODE": "64G"}
    req = parse_script(script("#SBATCH --mem-per-cpu=2G"), env=env).request
    assert (req.mem_per_node, req.mem_per_cpu) == (None, 2048)
    req = parse_args(["--mem-per-gpu=8G"], env=env).request
    assert (req.mem_per_node, req.mem_per_gpu) == (None, 8192)


def test_two_memory_variables_conflict() -> None:
    with pytest.raises(JobSpecError, match="mutually exclusive"):
        parse_args([], env={"SBATCH_MEM_PER_NODE": "1G", "SBATCH_MEM_PER_CPU": "1G"})


def test_cpus_per_gpu_from_env_yields_to_cpus_per_task() -> None:
    req = parse_args(["-c", "4"], env={"SBATCH_CPUS_PER_GPU": "8"}).request
    assert (req.cpus_per_task, req.cpus_per_gpu) == (4, None)
    req = parse_args(["--cpus-per-gpu=8"]).request
    assert (req.cpus_per_task, req.cpus_per_gpu) == (1, 8)


def test_exclusive_from_env_and_oversubscribe_on_the_command_line() -> None:
    req = parse_args(["--oversubscribe"], env={"SBATCH_EXCLUSIVE": ""}).request
    assert req.exclusive is False  # the later setting wins; no conflict across layers


def test_gres_gpu_with_gpus_per_node_conflicts_in_any_layer() -> None:
    with pytest.raises(JobSpecError, match="--gpus-per-node"):
        parse_args(["--gpus-per-node=2"], env={"SBATCH_GRES": "gpu:2"})


def test_switch_wait_from_env_survives_a_plain_switch_count() -> None:
    req = parse_args(["--switches=3"], env={"SBATCH_WAIT4SWITCH": "10:00"}).request
    assert (req.switches, req.switches_wait) == (3, 600)
    req = parse_args(["--switches=3@5:00"], env={"SBATCH_WAIT4SWITCH": "10:00"}).request
    assert (req.switches, req.switches_wait) == (3, 300)
