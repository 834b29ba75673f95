"""Split an sbatch argument vector the way sbatch's getopt_long does.

Options end at the first word that is not an option (or at "--"): that word
is the script and the rest are its arguments, even if they look like options.
Long options take "--name=value" or "--name value" (optional values only with
'='), and may be shortened to any unambiguous prefix. Short options take
"-N2" or "-N 2", and flags may be grouped ("-HN2" is -H -N 2).
"""

from __future__ import annotations

from typing import NamedTuple

from tide.jobspec.errors import JobSpecError
from tide.jobspec.options import ALIASES, OPTIONS, SHORT, Arg, OptionSpec, resolve_long


class Occurrence(NamedTuple):
    """One option as written: which option, and its value (None for a flag
    or an optional value left out). sbatch's client splits its command line
    here too, so this module imports neither dataclasses nor difflib."""

    option: OptionSpec
    value: str | None


def split_argv(argv: list[str] | tuple[str, ...]) -> tuple[list[Occurrence], list[str]]:
    """(options in order, the remainder: script path and script arguments)."""
    found: list[Occurrence] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return found, list(argv[i + 1 :])
        if word.startswith("--"):
            i = _long(argv, i, found)
        elif word.startswith("-") and len(word) > 1:
            i = _short(argv, i, found)
        else:
            return found, list(argv[i:])
    return found, []


def _long(argv: list[str] | tuple[str, ...], i: int, found: list[Occurrence]) -> int:
    given, eq, value = argv[i][2:].partition("=")
    option, candidates = resolve_long(given) if given else (None, [])
    if option is None:
        raise _unknown(f"--{given}", candidates)
    if option.arg is Arg.NONE:
        if eq:
            raise JobSpecError(option.flag, value, f"takes no value; write just {option.flag}")
        found.append(Occurrence(option, None))
        return i + 1
    if option.arg is Arg.OPTIONAL:
        found.append(Occurrence(option, value if eq else None))
        return i + 1
    if eq:
        found.append(Occurrence(option, value))
        return i + 1
    if i + 1 >= len(argv):
        raise _missing(option)
    found.append(Occurrence(option, argv[i + 1]))
    return i + 2


def _short(argv: list[str] | tuple[str, ...], i: int, found: list[Occurrence]) -> int:
    word = argv[i]
    for j in range(1, len(word)):
        option = SHORT.get(word[j])
        if option is None:
            raise _unknown(f"-{word[j]}", [])
        rest = word[j + 1 :]
        if option.arg is Arg.NONE:
            found.append(Occurrence(option, None))
            continue
        if option.arg is Arg.OPTIONAL:
            found.append(Occurrence(option, rest or None))
            return i + 1
        if rest:
            found.append(Occurrence(option, rest))
            return i + 1
        if i + 1 >= len(argv):
            raise _missing(option)
        found.append(Occurrence(option, argv[i + 1]))
        return i + 2
    return i + 1


def _missing(option: OptionSpec) -> JobSpecError:
    return JobSpecError(option.flag, None, f"needs a value ({option.flag}=VALUE)")


def _unknown(flag: str, candidates: list[str]) -> JobSpecError:
    if len(candidates) > 1:
        listed = ", ".join(f"--{c}" for c in candidates)
        return JobSpecError(flag, None, f"is ambiguous; did you mean one of {listed}?")
    import difflib

    names = [*OPTIONS, *ALIASES]
    close = difflib.get_close_matches(flag.lstrip("-"), names, n=1)
    hint = f"; did you mean --{close[0]}?" if close and flag.startswith("--") else ""
    return JobSpecError(flag, None, f"not an sbatch option{hint} (see docs/sbatch.md)")
