"""Read the #SBATCH directives at the top of a batch script, as sbatch does.

- The script must start with "#!" (sbatch refuses anything else), must not be
  empty or blank, and must not hold NUL bytes or DOS line ends.
- Directives are lines that begin with "#SBATCH" in column one (or the old
  "#SLURM", read with a warning). Reading stops at the first line holding a
  command: any line whose first non-blank character is not '#'. Blank lines
  and other comments (including an indented "#SBATCH") are skipped.
- After "#SBATCH" come options, split like shell words: blanks separate,
  '...' and "..." group, a backslash escapes the next character, and an
  unquoted '#' starts a comment that runs to the end of the line. A quote that
  is never closed is an error naming the line, as in sbatch.
"""

from __future__ import annotations

from dataclasses import dataclass

from tide.jobspec.errors import JobSpecError

_SHEBANG_NEEDED = (
    "This does not look like a batch script. The first line must start with #! "
    "followed by the path to an interpreter (e.g. #!/bin/bash)."
)


@dataclass(slots=True, frozen=True)
class Directive:
    line: int  # 1-based line number in the script
    words: tuple[str, ...]


def check_script(text: str) -> None:
    """Refuse what sbatch refuses before it reads any directive."""
    if not text:
        raise JobSpecError("", None, "The batch script is empty.")
    if not text.strip():
        raise JobSpecError("", None, "The batch script holds only whitespace.")
    if not text.startswith("#!"):
        raise JobSpecError("", None, _SHEBANG_NEEDED)
    if "\0" in text:
        raise JobSpecError("", None, "The batch script holds a NUL character; remove it.")
    if "\r\n" in text:
        raise JobSpecError(
            "", None, "The batch script has DOS line breaks (\\r\\n); convert it to UNIX "
            "line breaks (\\n), e.g. with dos2unix."
        )


def directives(text: str) -> tuple[list[Directive], list[str]]:
    """The #SBATCH directives in order, and warnings about the header."""
    found: list[Directive] = []
    warnings: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith("#SBATCH"):
            rest = line[len("#SBATCH") :]
        elif line.startswith("#SLURM"):
            rest = line[len("#SLURM") :]
            warnings.append(f"line {number}: #SLURM is read as #SBATCH; write #SBATCH")
        else:
            stripped = line.lstrip()
            if stripped and not stripped.startswith("#"):
                break  # the first command ends the directives
            if stripped.startswith(("#PBS", "#BSUB")) and line.startswith("#"):
                warnings.append(f"line {number}: tide does not translate {stripped.split()[0]} "
                                "directives; write them as #SBATCH options")
            continue
        try:
            words = split_words(rest)
        except ValueError as e:
            raise JobSpecError("", None, f"line {number}: {e} in [{line[:200]}]; close it, "
                               "or escape it with a backslash") from None
        if words:
            found.append(Directive(number, tuple(words)))
    return found, warnings


def split_words(text: str) -> list[str]:
    """Shell-like words of one directive line; see the module docstring."""
    words: list[str] = []
    buf: list[str] = []
    started = False  # inside a word (which may be empty: "")
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        if ch == "\\":
            buf.append(text[i : i + 1])
            started, i = True, i + 1
        elif quote:
            if ch == quote:
                quote = ""
            else:
                buf.append(ch)
        elif ch in "\"'":
            quote, started = ch, True
        elif ch == "#":
            break
        elif ch.isspace():
            if started:
                words.append("".join(buf))
                buf, started = [], False
        else:
            buf.append(ch)
            started = True
    if quote:  # sbatch: fatal "Unmatched `"`" (a name or path would silently take the rest)
        raise ValueError(f"unmatched `{quote}`")
    if started:
        words.append("".join(buf))
    return words


def wrap_script(command: str) -> str:
    """The script sbatch --wrap builds around a command line."""
    return f"#!/bin/sh\n# tide: this script was made from sbatch --wrap\n\n{command}\n"
