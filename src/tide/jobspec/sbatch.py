"""Read a job request exactly as sbatch does: command-line options, #SBATCH
directives in the script, and SBATCH_* environment variables.

Precedence is sbatch's (sbatch(1), INPUT ENVIRONMENT VARIABLES): #SBATCH
directives are read first, SBATCH_* variables override them, and the command
line overrides both. Parsing is pure: no clock (pass `now` for --begin), no
files, no process environment (pass `env`).

    parse_args(["-N2", "--gpus-per-node=a100:8", "train.sh", "--lr=3e-4"])
    parse_script(open("train.sh").read(), ["-p", "gpu", "train.sh"], now=time.time())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from tide.jobspec.argv import Occurrence, split_argv
from tide.jobspec.build import build
from tide.jobspec.errors import JobSpecError
from tide.jobspec.handlers import apply
from tide.jobspec.jobrefs import MAX_ARRAY_SIZE
from tide.jobspec.options import ENV_OPTIONS, Arg, flag_on, spec
from tide.jobspec.render import to_argv
from tide.jobspec.script import Directive, check_script, directives, wrap_script
from tide.jobspec.state import Origin, State
from tide.model import JobRequest

__all__ = ["JobSpecError", "ParsedArgs", "ParsedJob", "parse_args", "parse_script", "to_argv"]


@dataclass(slots=True, frozen=True)
class ParsedArgs:
    """An sbatch command line: the request, warnings, and what followed the
    options (the script's path and its arguments). `script` is the script
    --wrap builds, or None."""

    request: JobRequest
    warnings: tuple[str, ...]
    remainder: tuple[str, ...]
    script: str | None = None


@dataclass(slots=True, frozen=True)
class ParsedJob:
    """A batch script with its command line: the request (script directives,
    then environment, then command line), warnings, the script text and the
    arguments the script will get."""

    request: JobRequest
    warnings: tuple[str, ...]
    script: str
    script_args: tuple[str, ...]


def parse_args(
    argv: Sequence[str],
    now: float = 0.0,
    env: Mapping[str, str] | None = None,
    max_array_size: int = MAX_ARRAY_SIZE,
) -> ParsedArgs:
    """Parse sbatch's command line (the words after "sbatch"); array task ids
    must be below `max_array_size` (slurm.conf MaxArraySize)."""
    state = State(now=now, max_array_size=max_array_size)
    _apply_env(state, env or {})
    remainder = _apply_cli(state, argv)
    wrap = state.get("wrap")
    if wrap is not None and remainder:
        raise JobSpecError("--wrap", wrap, "takes no script or script arguments after it; "
                           f"remove {remainder[0]!r} or drop --wrap")
    request = build(state, remainder[0] if remainder else None)
    script = wrap_script(wrap) if wrap is not None else None
    return ParsedArgs(request, request.warnings, tuple(remainder), script)


def parse_script(
    text: str,
    argv: Sequence[str] = (),
    now: float = 0.0,
    env: Mapping[str, str] | None = None,
    max_array_size: int = MAX_ARRAY_SIZE,
) -> ParsedJob:
    """Parse a batch script's #SBATCH directives, then `env`, then `argv`.

    `argv` is sbatch's command line after "sbatch": options, then optionally
    the script's path (it names the job when --job-name is absent) and the
    arguments for the script.
    """
    check_script(text)
    state = State(now=now, max_array_size=max_array_size)
    found, header_warnings = _directives(text)
    for warning in header_warnings:
        state.warn(warning)
    for directive in found:
        _apply_directive(state, directive.line, directive.words)
    _apply_env(state, env or {})
    remainder = _apply_cli(state, argv)
    if state.has("wrap"):
        raise JobSpecError("--wrap", state.get("wrap"),
                           "cannot be used with a batch script; give one or the other")
    request = build(state, remainder[0] if remainder else None)
    return ParsedJob(request, request.warnings, text, tuple(remainder[1:]))


# Scripts come back again and again (a sweep, a user's usual job): their #SBATCH
# lines are read once. Both steps are pure; an error is not kept, so it is raised
# again at the same point. Long scripts are not kept (the cache stays small).
CACHED_SCRIPT = 16 * 1024  # characters


def _directives(text: str) -> tuple[Sequence[Directive], Sequence[str]]:
    if len(text) > CACHED_SCRIPT:
        return directives(text)
    return _cached_directives(text)


@lru_cache(maxsize=256)
def _cached_directives(text: str) -> tuple[tuple[Directive, ...], tuple[str, ...]]:
    found, warnings = directives(text)
    return tuple(found), tuple(warnings)


@lru_cache(maxsize=1024)
def _split_directive(words: tuple[str, ...]) -> tuple[tuple[Occurrence, ...], tuple[str, ...]]:
    found, rest = split_argv(words)
    return tuple(found), tuple(rest)


def _apply_directive(state: State, line: int, words: tuple[str, ...]) -> None:
    where = f"line {line}"
    try:
        occurrences, rest = _split_directive(words)
        for occ in occurrences:
            apply(state, occ.option, occ.value, Origin.SCRIPT)
    except JobSpecError as err:
        raise err.located(where) from None
    if rest and rest[0].lower() in ("hetjob", "packjob"):
        raise JobSpecError("", None, "heterogeneous jobs (#SBATCH hetjob) are not supported "
                           "by tide; submit the components as separate jobs", where)
    if rest:
        raise JobSpecError(
            "", None, f"#SBATCH holds {rest[0]!r}, which is not an option; "
            "#SBATCH lines take sbatch options only (e.g. #SBATCH --time=1:00:00)", where,
        )


def _apply_env(state: State, env: Mapping[str, str]) -> None:
    for var, name in ENV_OPTIONS:
        if var not in env:
            continue
        option, value = spec(name), env[var]
        if not option.supported:
            state.warn(f"{var} (--{name}) is accepted but ignored by tide")
            continue
        try:
            if option.arg is Arg.NONE:
                _env_flag(state, option.name, value)
            else:
                arg = None if option.arg is Arg.OPTIONAL and value == "" else value
                apply(state, option, arg, Origin.ENV)
        except JobSpecError as err:
            raise err.located(var) from None


def _env_flag(state: State, name: str, value: str) -> None:
    if flag_on(value):
        apply(state, spec(name), None, Origin.ENV)
    elif name in ("requeue", "no-requeue"):
        state.drop("requeue")
    else:
        state.drop(name)


def _apply_cli(state: State, argv: Sequence[str]) -> list[str]:
    occurrences, remainder = split_argv(list(argv))
    for occ in occurrences:
        apply(state, occ.option, occ.value, Origin.CLI)
    if remainder and remainder[0] == ":":
        raise JobSpecError(":", None, "heterogeneous jobs (components joined by ':') "
                           "are not supported by tide; submit the components as separate jobs")
    return remainder
