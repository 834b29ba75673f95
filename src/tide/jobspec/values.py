"""Option values sbatch spells in its own ways: counts, node ranges, GPU and
GRES requests, host lists, signals, --export lists.

Each reader takes the option's flag (for the message) and its text, returns
the typed value, and raises JobSpecError naming the option, the value and what
is accepted. Behaviour follows sbatch(1) for each option.
"""

from __future__ import annotations

import re

from tide.hostlist import HostlistError, compress, expand
from tide.jobspec.errors import JobSpecError
from tide.model import SignalSpec

INT_MAX = 2**31 - 1
NICE_MAX = 2147483645  # sbatch(1) --nice: +/- 2147483645
PRIORITY_TOP = 4294967293  # --priority=TOP: the highest value Slurm stores
_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


def count(flag: str, text: str, minimum: int = 1, example: str = "4") -> int:
    """A whole number >= minimum (sbatch's counts are C ints)."""
    s = text.strip()
    if not re.fullmatch(r"[+-]?\d+", s) or not minimum <= int(s) < INT_MAX:
        least = "a positive whole number" if minimum == 1 else f"a whole number >= {minimum}"
        raise JobSpecError(flag, text, f"not a count; use {least} (e.g. {flag}={example})")
    return int(s)


def nodes(text: str) -> tuple[int, int, bool]:
    """--nodes: "N", "MIN-MAX", with k/m multipliers, or a size list
    ("1,5,9", "1-15:4"). Returns (min, max, was_a_list)."""
    s = text.strip()
    accepted = "use N or MIN-MAX, e.g. --nodes=2 or --nodes=2-4"
    if "," in s or ":" in s:
        sizes = _size_list(s)
        if not sizes:
            raise JobSpecError("--nodes", text, f"not a node count; {accepted}")
        return min(sizes), max(sizes), True
    lo_text, dash, hi_text = s.partition("-")
    lo = _node_count(lo_text) if lo_text else 1
    hi = _node_count(hi_text) if dash else lo
    if lo is None or hi is None:
        raise JobSpecError("--nodes", text, f"not a node count; {accepted}")
    if lo < 1:
        raise JobSpecError("--nodes", text, f"a job needs at least 1 node; {accepted}")
    if hi < lo:
        raise JobSpecError(
            "--nodes", text, f"the maximum {hi} is below the minimum {lo}; give MIN <= MAX"
        )
    return lo, hi, False


def _node_count(text: str) -> int | None:
    m = re.fullmatch(r"(\d+)([kKmM]?)", text.strip())
    if not m:
        return None
    value = int(m.group(1)) * _SUFFIX[m.group(2).lower()]
    return value if value < INT_MAX else None


def _size_list(text: str) -> list[int]:
    """The smallest and largest positive size of a list like 1,5-9:2 (never
    expanded: "1-2147483646:1" costs what "1-2" costs)."""
    sizes: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
        if not m:
            return []
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        if hi < lo or step < 1 or hi >= INT_MAX:
            return []
        last = lo + (hi - lo) // step * step
        first = lo if lo > 0 else (step if step <= last else 0)
        sizes += [s for s in (first, last) if s > 0]
    return sizes


def typed_count(flag: str, text: str) -> tuple[str, int]:
    """--gpus / --gpus-per-node / --gpus-per-task: "[type:]N" -> (type, N)."""
    accepted = f"use a GPU count, optionally after a type (e.g. {flag}=4 or {flag}=a100:4)"
    if "," in text:
        raise JobSpecError(
            flag, text, f"tide takes one GPU type per job; {accepted}"
        )
    gpu_type, _, number = text.strip().rpartition(":")
    if not re.fullmatch(r"\d+", number) or int(number) >= INT_MAX or ":" in gpu_type:
        raise JobSpecError(flag, text, f"not a GPU count; {accepted}")
    return gpu_type, int(number)


def gres(text: str) -> tuple[tuple[str, int] | None, list[str]]:
    """--gres=name[[:type]:count][,...]: the GPU part as (type, count), and a
    warning per non-GPU resource (tide schedules GPUs only)."""
    accepted = "use gpu[:TYPE][:COUNT], comma-separated (e.g. --gres=gpu:a100:2)"
    if text.strip().lower() == "none":
        return None, []
    gpu: tuple[str, int] | None = None
    warnings: list[str] = []
    for entry in text.split(","):
        item = entry.strip().removeprefix("gres/").removeprefix("gres:")
        name, _, rest = item.partition(":")
        if not re.fullmatch(r"[A-Za-z][\w.-]*", name):
            raise JobSpecError("--gres", text, f"{entry!r} is not a resource; {accepted}")
        gpu_type, number = _gres_type_count(rest)
        if number is None:
            raise JobSpecError("--gres", text, f"{entry!r} has a bad count; {accepted}")
        if name != "gpu":
            warnings.append(f"--gres={entry}: tide schedules GPUs only; {name} is ignored")
        elif gpu is not None:
            raise JobSpecError("--gres", text, f"gpu is listed twice; {accepted}")
        else:
            gpu = (gpu_type, number)
    return gpu, warnings


def _gres_type_count(rest: str) -> tuple[str, int | None]:
    """'a100:2' -> ('a100', 2); '2' -> ('', 2); 'a100' -> ('a100', 1); '' -> ('', 1)."""
    gpu_type, _, tail = rest.rpartition(":")
    m = re.fullmatch(r"(\d+)([kKmMgGtTpP]?)", tail)
    if m:
        value = int(m.group(1)) * _SUFFIX[m.group(2).lower()]
        return gpu_type, value if value < INT_MAX else None
    if gpu_type:  # "a:b" where b is not a count
        return rest, None
    return tail, 1


def hostnames(flag: str, text: str) -> tuple[str, ...]:
    """A hostlist, expanded, deduplicated and sorted (sbatch sorts node lists)."""
    if "/" in text:
        raise JobSpecError(
            flag, text, "tide does not read node files; list the nodes (e.g. gpu[01-04])"
        )
    try:
        return tuple(expand(compress(expand(text))))
    except HostlistError as err:
        raise JobSpecError(flag, text, f"not a host list ({err}); e.g. gpu[01-04],gpu10") from None


def names(flag: str, text: str) -> tuple[str, ...]:
    """A comma list of names (--partition); empty means none given."""
    if not text.strip():
        return ()
    parts = tuple(p.strip() for p in text.split(","))
    if not all(parts):
        raise JobSpecError(flag, text, f"empty name in the list; e.g. {flag}=gpu,debug")
    return parts


# --- signals -------------------------------------------------------------

SIGNALS = {
    "HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "USR1": 10, "USR2": 12, "PIPE": 13,
    "ALRM": 14, "TERM": 15, "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21,
    "TTOU": 22, "URG": 23, "XCPU": 24,
}  # the names sbatch knows, with their Linux numbers
_SIGNAL_NAMES = {n: name for name, n in SIGNALS.items()}
_SIGNAL_RE = re.compile(r"(?:([RBrb]{1,2}):)?([^@]*)(?:@(.*))?")


def signal(text: str) -> SignalSpec:
    """--signal=[{R|B}:]SIG[@SECS]: SIG by name (with or without SIG) or number."""
    accepted = (
        "use [R:|B:]SIGNAL[@SECONDS], SIGNAL a name or number and SECONDS 0-65535 "
        "(e.g. --signal=B:USR1@120)"
    )
    m = _SIGNAL_RE.fullmatch(text.strip())
    if not m:
        raise JobSpecError("--signal", text, f"not a signal; {accepted}")
    flags, sig, lead = (m.group(1) or "").upper(), m.group(2).strip(), m.group(3)
    if not sig and lead is not None:
        sig = "USR1"  # tide: `--signal=@120` is the checkpoint warning, SIGUSR1 (docs/recovery.md)
    elif not sig:
        raise JobSpecError("--signal", text, f"not a signal; {accepted}")
    if len(set(flags)) != len(flags):
        raise JobSpecError("--signal", text, f"repeated flag; {accepted}")
    name = _signal_name(sig)
    if name is None:
        known = ", ".join(SIGNALS)
        raise JobSpecError("--signal", text, f"unknown signal {sig!r}; use a number or {known}")
    seconds = 60
    if lead is not None:
        if not lead.isdigit() or int(lead) > 65535:
            raise JobSpecError("--signal", text, f"bad time {lead!r}; {accepted}")
        seconds = int(lead)
    return SignalSpec(name, seconds, batch_only="B" in flags, reservation="R" in flags)


def _signal_name(text: str) -> str | None:
    """'SIGUSR1', 'usr1', '10' -> 'USR1'; an unnamed number stays a number."""
    if text.isdigit():
        number = int(text)
        return _SIGNAL_NAMES.get(number, str(number)) if 1 <= number <= 65535 else None
    upper = text.upper()
    upper = upper.removeprefix("SIG") if upper.removeprefix("SIG") in SIGNALS else upper
    return upper if upper in SIGNALS else None


# --- small ones ----------------------------------------------------------

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def export(text: str) -> str:
    """--export: ALL, NONE, NIL, or [ALL,]VAR[=value],... (kept as written)."""
    s = text.strip()
    if s.upper() in ("ALL", "NONE", "NIL"):
        return s.upper()
    entries = s.split(",")
    if entries[0].upper() == "ALL":
        entries = entries[1:]
    for entry in entries:
        if not _ENV_NAME.fullmatch(entry.partition("=")[0]):
            raise JobSpecError(
                "--export", text,
                f"{entry!r} is not VAR or VAR=value; use ALL, NONE, or a list "
                "(e.g. --export=ALL,OMP_NUM_THREADS=8)",
            )
    return s


def nice(text: str | None) -> int:
    """--nice alone is +100; --nice=N within +/- 2147483645."""
    if text is None:
        return 100
    s = text.strip()
    if not re.fullmatch(r"[+-]?\d+", s) or abs(int(s)) > NICE_MAX:
        raise JobSpecError(
            "--nice", text, f"not an adjustment; use a whole number within +/-{NICE_MAX}"
        )
    return int(s)


def priority(text: str) -> int:
    """--priority=N or TOP."""
    s = text.strip()
    if s.upper() == "TOP":
        return PRIORITY_TOP
    if not s.isdigit() or int(s) > PRIORITY_TOP:
        raise JobSpecError(
            "--priority", text, f"not a priority; use 0-{PRIORITY_TOP} or TOP"
        )
    return int(s)


def comment(text: str) -> str:
    """--comment: free text (stored and shown, as Slurm's Comment), at most
    1024 characters; the model keys tide reads from it (flops_per_token=,
    params=; tide.efficiency) must hold positive numbers."""
    from tide.efficiency import COMMENT_MAX, EfficiencyError, model_flops_per_token

    if len(text) > COMMENT_MAX:
        raise JobSpecError("--comment", text[:40] + "...", f"longer than {COMMENT_MAX} characters")
    try:
        model_flops_per_token(text)
    except EfficiencyError as e:
        raise JobSpecError("--comment", text, str(e)) from None
    return text
