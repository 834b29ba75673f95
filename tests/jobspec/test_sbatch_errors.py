"""Bad input: each error names the option, the value, and what is accepted."""

from __future__ import annotations

import pytest

from tide.jobspec.errors import JobSpecError
from tide.jobspec.sbatch import parse_args

# (argv, the option named, the value named or None, words the fix must hold)
CASES: list[tuple[list[str], str, str | None, list[str]]] = [
    (["--time=abc"], "--time", "abc",
     ["not a time", "minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S", "--time=2:00:00"]),
    (["-t", "1:2:3:4"], "--time", "1:2:3:4", ["not a time"]),
    (["--time-min=soon"], "--time-min", "soon", ["not a time", "--time-min=2:00:00"]),
    (["--mem=1.5G"], "--mem", "1.5G", ["not a memory size", "K, M, G or T", "--mem=64G"]),
    (["--mem-per-gpu=lots"], "--mem-per-gpu", "lots", ["not a memory size"]),
    (["--nodes=4-2"], "--nodes", "4-2", ["maximum 2", "minimum 4"]),
    (["-N", "x"], "--nodes", "x", ["not a node count", "--nodes=2-4"]),
    (["-N0"], "--nodes", "0", ["at least 1 node"]),
    (["--nodes=2-"], "--nodes", "2-", ["not a node count"]),
    (["-n", "0"], "--ntasks", "0", ["positive whole number"]),
    (["--ntasks=two"], "--ntasks", "two", ["not a count", "--ntasks=4"]),
    (["-c", "-1"], "--cpus-per-task", "-1", ["positive whole number"]),
    (["--gpus=many"], "--gpus", "many", ["not a GPU count", "--gpus=a100:4"]),
    (["--gpus-per-node=a100:2,v100:2"], "--gpus-per-node", "a100:2,v100:2", ["one GPU type"]),
    (["--gres=gpu:a:b"], "--gres", "gpu:a:b", ["bad count", "gpu[:TYPE][:COUNT]"]),
    (["--gres=gpu:1,gpu:2"], "--gres", "gpu:1,gpu:2", ["listed twice"]),
    (["--gres=:2"], "--gres", ":2", ["not a resource"]),
    (["--gres-flags=bogus"], "--gres-flags", "bogus", ["unknown flag", "enforce-binding"]),
    (["--gres-flags=enforce-binding,disable-binding"], "--gres-flags",
     "enforce-binding,disable-binding", ["conflict"]),
    (["--begin=someday"], "--begin", "someday", ["not a start time", "now+N", "--begin="]),
    (["--begin=25:00"], "--begin", "25:00", ["not a start time"]),
    (["--dependency=afterwards:1"], "--dependency", "afterwards:1",
     ["not a dependency", "afterok", "singleton"]),
    (["-d", "afterok:abc"], "--dependency", "afterok:abc", ["not a job id"]),
    (["-d", "afterok:1,afterany:2?afterok:3"], "--dependency",
     "afterok:1,afterany:2?afterok:3", ["not both"]),
    (["-d", "afterok:0"], "--dependency", "afterok:0", ["job id 0"]),
    (["-d", "after:1+0"], "--dependency", "after:1+0", ["must be > 0"]),
    (["-d", "1?2"], "--dependency", "1?2", ["bare job ids"]),
    (["-d", "expand:5"], "--dependency", "expand:5", ["not a dependency"]),
    (["--array=5-1"], "--array", "5-1", ["empty range", "--array=0-15"]),
    (["-a", "x"], "--array", "x", ["not an index or range"]),
    (["--array=0-3%0"], "--array", "0-3%0", ["%LIMIT"]),
    (["--array=0-3:0"], "--array", "0-3:0", ["empty range"]),
    (["--array=0-9999999"], "--array", "0-9999999", ["MaxArraySize"]),
    (["--signal=FOO"], "--signal", "FOO", ["unknown signal", "USR1"]),
    (["--signal=USR1@-5"], "--signal", "USR1@-5", ["bad time", "0-65535"]),
    (["--signal=USR1@70000"], "--signal", "USR1@70000", ["bad time"]),
    (["--signal=0"], "--signal", "0", ["unknown signal"]),
    (["--nice=abc"], "--nice", "abc", ["not an adjustment"]),
    (["--nice=3000000000"], "--nice", "3000000000", ["2147483645"]),
    (["--priority=-1"], "--priority", "-1", ["not a priority", "TOP"]),
    (["--switches=0"], "--switches", "0", ["not a count"]),
    (["--switches=2@later"], "--switches", "2@later", ["bad wait time"]),
    (["--exclusive=nodes"], "--exclusive", "nodes", ["=user"]),
    (["--requeue=now"], "--requeue", "now", ["expedite"]),
    (["--export=ALL,1BAD=x"], "--export", "ALL,1BAD=x", ["VAR=value"]),
    (["--nodelist=gpu[01-"], "--nodelist", "gpu[01-", ["not a host list"]),
    (["--nodelist=./hosts.txt"], "--nodelist", "./hosts.txt", ["node files"]),
    (["--exclude=n[3-1]"], "--exclude", "n[3-1]", ["not a host list"]),
    (["-p", "a,,b"], "--partition", "a,,b", ["empty name"]),
    # the command line itself
    (["--bogus"], "--bogus", None, ["not an sbatch option"]),
    (["--partitoin=gpu"], "--partitoin", None, ["did you mean --partition"]),
    (["-Z"], "-Z", None, ["not an sbatch option"]),
    (["--=x"], "--", None, ["not an sbatch option"]),
    (["--mem-per=1G"], "--mem-per", None, ["ambiguous", "--mem-per-cpu", "--mem-per-gpu"]),
    (["--hold=yes"], "--hold", "yes", ["takes no value"]),
    (["--time"], "--time", None, ["needs a value"]),
    (["-t"], "--time", None, ["needs a value"]),
    (["--wrap=hostname", "script.sh"], "--wrap", "hostname", ["script.sh"]),
    (["-N1", ":", "-N2", "x.sh"], ":", None, ["heterogeneous"]),
]


@pytest.mark.parametrize(
    ("argv", "option", "value", "words"), CASES, ids=[" ".join(c[0]) for c in CASES]
)
def test_error_names_option_value_and_fix(
    argv: list[str], option: str, value: str | None, words: list[str]
) -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_args(argv)
    err = caught.value
    assert (err.option, err.value) == (option, value)
    text = str(err)
    assert text.startswith(f"{option}={value}: " if value is not None else f"{option}: ")
    for word in words:
        assert word in text


def test_time_message_is_exact() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_args(["--time=abc"])
    assert str(caught.value) == (
        "--time=abc: not a time; use minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S "
        "(e.g. --time=2:00:00)"
    )


def test_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_args(["--nodes=abc"])


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--mem=1G", "--mem-per-cpu=1G"], ["--mem, --mem-per-cpu and --mem-per-gpu", "give one"]),
        (["--mem-per-gpu=1G", "--mem-per-cpu=1G"], ["mutually exclusive"]),
        (["-c", "2", "--cpus-per-gpu=4"], ["--cpus-per-task and --cpus-per-gpu"]),
        (["--gres=gpu:2", "--gpus-per-node=2"], ["--gres=gpu and --gpus-per-node"]),
        (["--exclusive", "--oversubscribe"], ["--exclusive and --oversubscribe"]),
        (["--gpus=a100:8", "--gpus-per-node=h100:8"], ["conflicting GPU types", "a100", "h100"]),
        (["-N2", "--ntasks-per-node=2", "-n", "5"], ["more tasks", "= 4", "raise --nodes"]),
        (["-N2-3", "--ntasks-per-node=2", "-n", "7"], ["more tasks", "--nodes=3"]),
        (["--time=10", "--time-min=20"], ["--time-min (20 min) is above --time (10 min)"]),
    ],
)
def test_cross_option_errors(argv: list[str], words: list[str]) -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_args(argv)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    "argv",
    [
        ["--gpus-per-task=2"],  # without --ntasks: fine, one task per node
        ["--exclusive", "--nodelist=n[1-2]"],
        ["-N2", "--ntasks-per-node=2", "-n", "4"],
        ["-N2", "--ntasks-per-node=4", "-n", "3"],  # per-node is a maximum
        ["--gres=shard:2", "--gpus-per-node=2"],  # --gres without gpu does not clash
        ["--gpus=a100:8", "--gpus-per-task=2"],  # type given once applies to both
        ["--time=10", "--time-min=10"],
    ],
)
def test_combinations_sbatch_allows(argv: list[str]) -> None:
    parse_args(argv)
