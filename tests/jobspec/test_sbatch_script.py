"""#SBATCH directives: which lines count, how they split, and what wins."""

from __future__ import annotations

import pytest

from tide.jobspec.errors import JobSpecError
from tide.jobspec.sbatch import parse_script
from tide.jobspec.script import directives, split_words


def script(*lines: str) -> str:
    return "\n".join(["#!/bin/bash", *lines, ""])


def test_reads_directives_until_the_first_command() -> None:
    text = script(
        "#SBATCH --job-name=train",
        "#SBATCH -N 2",
        "",
        "# a plain comment",
        "   ",
        "#SBATCH --time=10",
        "module load cuda",
        "#SBATCH --partition=late",  # after a command: not read
    )
    req = parse_script(text).request
    assert (req.name, req.nodes_min, req.time_limit, req.partitions) == ("train", 2, 600, ())


def test_an_indented_directive_is_a_comment() -> None:
    text = script("  #SBATCH --partition=skipped", "#SBATCH --qos=read")
    req = parse_script(text).request
    assert (req.partitions, req.qos) == ((), "read")


def test_directive_words_are_case_sensitive() -> None:
    text = script("#sbatch --qos=skipped", "#Sbatch --qos=skipped", "#SBATCH --account=a")
    req = parse_script(text).request
    assert (req.qos, req.account) == ("", "a")


def test_several_options_per_line_and_separate_values() -> None:
    req = parse_script(script("#SBATCH -N 2 --ntasks 4 -t 1:00:00 -J x")).request
    assert (req.nodes_min, req.ntasks, req.time_limit, req.name) == (2, 4, 3600, "x")


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (" --time=10  # ten minutes", ["--time=10"]),
        (" --time=10 #comment --qos=x", ["--time=10"]),
        (" --job-name=a#b", ["--job-name=a"]),  # an unquoted '#' starts a comment
        (" --job-name='a#b'", ["--job-name=a#b"]),
        (" --job-name='my job' -N2", ["--job-name=my job", "-N2"]),
        (' --job-name="my job"', ["--job-name=my job"]),
        (" --job-name=my\\ job", ["--job-name=my job"]),
        (" --comment=\\#1", ["--comment=#1"]),
        (" --comment=''", ["--comment="]),
        ("--time=5", ["--time=5"]),  # "#SBATCH--time=5"
        ("", []),
        ("   ", []),
        (" $HOME", ["$HOME"]),  # no shell expansion
    ],
)
def test_split_words(line: str, words: list[str]) -> None:
    assert split_words(line) == words


def test_shell_syntax_is_literal() -> None:
    req = parse_script(script("#SBATCH --output=$HOME/%j.out --job-name='a b'")).request
    assert (req.output, req.name) == ("$HOME/%j.out", "a b")


def test_line_numbers() -> None:
    found, _ = directives(script("", "#SBATCH -N1", "#SBATCH", "#SBATCH -n2 # x"))
    assert [(d.line, d.words) for d in found] == [(3, ("-N1",)), (5, ("-n2",))]


def test_old_slurm_prefix_is_read_with_a_warning() -> None:
    parsed = parse_script(script("#SLURM --qos=old"))
    assert parsed.request.qos == "old"
    assert "line 2: #SLURM is read as #SBATCH; write #SBATCH" in parsed.warnings


def test_pbs_directives_are_not_translated() -> None:
    parsed = parse_script(script("#PBS -l walltime=1:00:00", "#SBATCH -t 5"))
    assert parsed.request.time_limit == 300
    assert any("#PBS" in w for w in parsed.warnings)


def test_command_line_only_options_do_nothing_in_a_script() -> None:
    parsed = parse_script(script("#SBATCH --wrap=hostname", "#SBATCH -v"))
    assert parsed.request.name == "sbatch"
    assert parsed.warnings == (
        "--wrap in a batch script is ignored (sbatch reads it only from the command line)",
        "--verbose in a batch script is ignored (sbatch reads it only from the command line)",
    )


def test_bad_value_names_the_line() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_script(script("#SBATCH -N2", "#SBATCH --time=abc"))
    assert str(caught.value).startswith("line 3: --time=abc: not a time")
    assert caught.value.where == "line 3"


def test_a_word_that_is_not_an_option_is_an_error() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_script(script("#SBATCH -N2 gpu"))
    assert str(caught.value).startswith("line 2: #SBATCH holds 'gpu', which is not an option")


def test_unknown_option_in_a_script_names_the_line() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_script(script("#SBATCH --gpu=2"))
    assert str(caught.value).startswith("line 2: --gpu: ")


def test_heterogeneous_jobs_are_refused() -> None:
    with pytest.raises(JobSpecError, match="heterogeneous"):
        parse_script(script("#SBATCH -N1", "#SBATCH hetjob", "#SBATCH -N2"))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("echo hi\n", "This does not look like a batch script. The first line must start with "
                      "#! followed by the path to an interpreter"),
        (" #!/bin/bash\n", "This does not look like a batch script"),
        ("#SBATCH -N1\n", "This does not look like a batch script"),
        ("", "empty"),
        ("  \n\n", "only whitespace"),
        ("#!/bin/bash\necho \0\n", "NUL"),
        ("#!/bin/bash\r\n#SBATCH -N1\r\n", "DOS line breaks"),
    ],
)
def test_scripts_sbatch_refuses(text: str, words: str) -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_script(text)
    assert words in str(caught.value)
    assert caught.value.option == ""


def test_command_line_wins_over_script() -> None:
    text = script("#SBATCH -p script_p -t 10 -J from_script", "#SBATCH --qos=sq")
    parsed = parse_script(text, ["-p", "cli_p", "--time=20", "job.sh", "a1", "-b"])
    req = parsed.request
    assert (req.partitions, req.time_limit, req.name, req.qos) == (
        ("cli_p",), 1200, "from_script", "sq",
    )
    assert parsed.script_args == ("a1", "-b")
    assert parsed.script == text


def test_script_path_names_the_job() -> None:
    assert parse_script(script(), ["dir/job.sh"]).request.name == "job.sh"
    assert parse_script(script()).request.name == "sbatch"
    assert parse_script(script("#SBATCH -J named"), ["job.sh"]).request.name == "named"


def test_wrap_and_a_script_conflict() -> None:
    with pytest.raises(JobSpecError, match="--wrap=hostname: cannot be used with a batch script"):
        parse_script(script(), ["--wrap=hostname"])


def test_memory_options_from_script_and_command_line_conflict() -> None:
    """sbatch counts script and command line together for this rule."""
    with pytest.raises(JobSpecError, match="mutually exclusive"):
        parse_script(script("#SBATCH --mem=4G"), ["--mem-per-cpu=1G"])


def test_same_option_in_script_and_command_line_is_an_override() -> None:
    req = parse_script(script("#SBATCH --mem=4G"), ["--mem=8G"]).request
    assert req.mem_per_node == 8192


def test_a_script_without_directives() -> None:
    parsed = parse_script("#!/bin/sh\nhostname\n")
    assert parsed.request.name == "sbatch"
    assert parsed.warnings == ()


def test_a_script_read_again_gives_the_same_request_and_the_same_errors() -> None:
    """#SBATCH lines are kept per script text (sbatch._directives): a script sent
    again with another command line, environment or time reads as a new one, and
    a bad script fails again, with its line, every time."""
    text = script("#SBATCH -J sweep", "#SBATCH --begin=now+60", "#SBATCH -N 2")
    first = parse_script(text, [], now=1000.0).request
    again = parse_script(text, ["-N", "3"], now=5000.0, env={"SBATCH_JOB_NAME": "env"})
    assert (first.name, first.nodes_min, first.begin) == ("sweep", 2, 1060.0)
    assert (again.request.name, again.request.nodes_min, again.request.begin) == ("env", 3, 5060.0)
    assert parse_script(text, [], now=1000.0).request == first
    bad = script("#SBATCH -J ok", "#SBATCH --nodes=many")
    for _ in range(2):
        with pytest.raises(JobSpecError, match="line 3"):
            parse_script(bad)
    unknown = script("#SBATCH --no-such-option")
    for _ in range(2):
        with pytest.raises(JobSpecError, match="no-such-option"):
            parse_script(unknown)
    long = script(*[f"#SBATCH --comment=c{i}" for i in range(3000)])  # not kept: too long
    assert parse_script(long).request.comment == "c2999"
