"""Command-line options the way Slurm's commands read them (getopt_long):
`-j12`, `-j 12`, `--jobs=12`, `--jobs 12`, bundled flags (`-hl`), and any
unambiguous prefix of a long option (`--form` for `--format`)."""

from __future__ import annotations

from typing import Any, NamedTuple


class UsageError(Exception):
    """A bad command line: the message is one line, as Slurm's own."""


class Opt(NamedTuple):  # not a dataclass: dataclasses imports inspect (startup time)
    dest: str
    short: str = ""  # one letter, or ""
    long: tuple[str, ...] = ()  # names without the dashes
    value: bool = False  # takes an argument
    optional: bool = False  # --long[=value] (getopt's optional_argument)
    repeat: bool = False  # values accumulate (comma lists are split)


class Parsed:
    __slots__ = ("args", "values")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.args: list[str] = []  # positional words

    def get(self, dest: str, default: Any = None) -> Any:
        return self.values.get(dest, default)

    def list(self, dest: str) -> list[str]:
        return list(self.values.get(dest) or [])

    def flag(self, dest: str) -> bool:
        return bool(self.values.get(dest))


def parse(argv: list[str], spec: list[Opt], stop_at_first_arg: bool = False) -> Parsed:
    """Options and positional words. `stop_at_first_arg`: everything from the first
    positional word on is positional (sbatch SCRIPT ARGS..., srun CMD ARGS...)."""
    shorts = {o.short: o for o in spec if o.short}
    longs = {name: o for o in spec for name in o.long}
    out = Parsed()
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":
            out.args += argv[i:]
            break
        if word.startswith("--"):
            i = _long(word[2:], argv, i, longs, out)
        elif word.startswith("-") and len(word) > 1:
            i = _short(word[1:], argv, i, shorts, out)
        else:
            out.args.append(word)
            if stop_at_first_arg:
                out.args += argv[i:]
                break
    return out


def _long(text: str, argv: list[str], i: int, longs: dict[str, Opt], out: Parsed) -> int:
    name, eq, value = text.partition("=")
    opt = longs.get(name)
    if opt is None:
        matches = {o for n, o in longs.items() if n.startswith(name)}
        if len(matches) != 1:
            what = "ambiguous" if matches else "unrecognized"
            raise UsageError(f"{what} option '--{name}'")
        opt = matches.pop()
    if not opt.value:
        if eq:
            raise UsageError(f"option '--{name}' doesn't allow an argument")
        _store(out, opt, True)
        return i
    if not eq and not opt.optional:
        if i >= len(argv):
            raise UsageError(f"option '--{name}' requires an argument")
        value, i = argv[i], i + 1
    _store(out, opt, value if (eq or not opt.optional) else True)
    return i


def _short(text: str, argv: list[str], i: int, shorts: dict[str, Opt], out: Parsed) -> int:
    for k, letter in enumerate(text):
        opt = shorts.get(letter)
        if opt is None:
            raise UsageError(f"invalid option -- '{letter}'")
        if not opt.value:
            _store(out, opt, True)
            continue
        rest = text[k + 1 :]
        if rest:
            _store(out, opt, rest)
        elif opt.optional:
            _store(out, opt, True)
        elif i < len(argv):
            _store(out, opt, argv[i])
            i += 1
        else:
            raise UsageError(f"option requires an argument -- '{letter}'")
        break
    return i


def _store(out: Parsed, opt: Opt, value: Any) -> None:
    if opt.repeat and isinstance(value, str):
        out.values.setdefault(opt.dest, []).extend(v for v in value.split(",") if v)
    else:
        out.values[opt.dest] = value
