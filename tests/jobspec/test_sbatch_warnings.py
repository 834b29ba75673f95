"""Options sbatch has and tide does not act on: accepted, with a warning naming them."""

from __future__ import annotations

import pytest

from tide.jobspec.options import CLIENT_SIDE, OPTIONS
from tide.jobspec.sbatch import parse_args

IGNORED = sorted(n for n, o in OPTIONS.items() if not o.supported and n not in CLIENT_SIDE)


def _argv_for(name: str) -> list[str]:
    option = OPTIONS[name]
    return [option.flag] if option.arg == "none" else [f"{option.flag}=x"]


@pytest.mark.parametrize("name", IGNORED)
def test_every_ignored_option_warns_by_name(name: str) -> None:
    parsed = parse_args(_argv_for(name))
    assert parsed.warnings == (f"--{name} is accepted but ignored by tide",)
    assert parsed.request.warnings == parsed.warnings


@pytest.mark.parametrize("name", sorted(CLIENT_SIDE))
def test_what_the_sbatch_command_does_itself_stores_no_warning(name: str) -> None:
    """--parsable, --test-only, --wait: the command acts on them (tide.slurm.sbatch)."""
    parsed = parse_args(_argv_for(name))
    assert parsed.warnings == () and parsed.request.warnings == ()


@pytest.mark.parametrize(
    ("argv", "warning"),
    [
        (["--mail-type=END,FAIL"], "--mail-type is accepted but ignored by tide"),
        (["--mail-user", "me@x.org"], "--mail-user is accepted but ignored by tide"),
        (["-L", "matlab:1"], "--licenses is accepted but ignored by tide"),
        (["-m", "block"], "--distribution is accepted but ignored by tide"),
        (["-O"], "--overcommit is accepted but ignored by tide"),
        (["-k"], "--no-kill is accepted but ignored by tide"),
        (["--threads-per-core=1"], "--threads-per-core is accepted but ignored by tide"),
        (["--gres=gpu:2,shard:1"], "--gres=shard:1: tide schedules GPUs only; shard is ignored"),
        (["--gres=license:4"], "--gres=license:4: tide schedules GPUs only; license is ignored"),
        (["--gres-flags=one-task-per-sharing"],
         "--gres-flags=one-task-per-sharing is accepted but ignored by tide"),
        (["--exclusive=user"], "--exclusive=user is accepted but ignored by tide "
                               "(tide's --exclusive means whole nodes)"),
        (["--requeue=expedite"],
         "--requeue=expedite is accepted; tide requeues without expediting"),
        (["--nodes=1,5,9"],
         "--nodes=1,5,9: tide takes a node range, not a list of sizes; using 1-9"),
        (["-d", "afterburstbuffer:5"],
         "--dependency=afterburstbuffer: tide has no burst buffers; treated as afterany"),
        (["-N4", "-n2"], "--ntasks=2 is fewer than --nodes=4; asking for 2 node(s), one task each"),
    ],
)
def test_warning_text(argv: list[str], warning: str) -> None:
    assert warning in parse_args(argv).warnings


def test_warnings_keep_order_without_repeats() -> None:
    parsed = parse_args(["--mail-type=a", "--wckey=b", "--mail-type=c"])
    assert parsed.warnings == (
        "--mail-type is accepted but ignored by tide",
        "--wckey is accepted but ignored by tide",
    )


def test_ignored_options_still_take_their_values() -> None:
    """--mail-user's value is consumed, not taken for the script path."""
    parsed = parse_args(["--mail-user", "me@x.org", "-N2", "run.sh"])
    assert parsed.remainder == ("run.sh",)
    assert parsed.request.nodes_min == 2


def test_no_warnings_for_supported_options() -> None:
    assert parse_args(["-N2", "-t", "10", "--gres=gpu:a100:2"]).warnings == ()


@pytest.mark.parametrize(
    ("argv", "nodes"),
    [
        (["-N4", "-n2"], (2, 2)),  # fewer tasks than nodes: one node per task
        (["-N2-6", "-n3"], (2, 3)),  # the maximum drops to the task count
        (["-N2", "-n8"], (2, 2)),
        (["-w", "n[1-4]", "-n2"], (2, 2)),
    ],
)
def test_ntasks_lowers_node_counts_like_sbatch(argv: list[str], nodes: tuple[int, int]) -> None:
    req = parse_args(argv).request
    assert (req.nodes_min, req.nodes_max) == nodes
