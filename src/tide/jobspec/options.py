"""The sbatch option table: every option sbatch(1) has, its short letter, whether
it takes a value, and whether tide acts on it or accepts and ignores it.

Names and letters follow the sbatch(1) manual (Slurm 25.x); options tide does
not act on are still listed so that scripts written for sbatch parse (with a
warning) instead of failing, and so abbreviations resolve as in sbatch.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Arg(StrEnum):
    NONE = "none"  # a flag: --hold
    REQUIRED = "required"  # --time=1:00:00 or --time 1:00:00
    OPTIONAL = "optional"  # --nice or --nice=10 (only with '=')


class OptionSpec(NamedTuple):
    """One sbatch option (a NamedTuple: sbatch's client splits its command line
    with this table, and importing dataclasses costs it a fifth of its start)."""

    name: str  # long name without dashes
    arg: Arg
    short: str = ""
    supported: bool = True  # False: accepted with a warning, otherwise ignored

    @property
    def flag(self) -> str:
        return f"--{self.name}"


_N, _R, _O = Arg.NONE, Arg.REQUIRED, Arg.OPTIONAL

# (name, arg, short letter) of the options tide acts on.
_SUPPORTED = [
    ("account", _R, "A"), ("array", _R, "a"), ("begin", _R, "b"), ("chdir", _R, "D"),
    ("comment", _R, ""),
    ("constraint", _R, "C"), ("cpus-per-gpu", _R, ""), ("cpus-per-task", _R, "c"),
    ("dependency", _R, "d"), ("error", _R, "e"), ("exclude", _R, "x"),
    ("exclusive", _O, ""), ("export", _R, ""), ("gpus", _R, "G"),
    ("gpus-per-node", _R, ""), ("gpus-per-task", _R, ""), ("gres", _R, ""),
    ("gres-flags", _R, ""), ("hold", _N, "H"), ("job-name", _R, "J"), ("mem", _R, ""),
    ("mem-per-cpu", _R, ""), ("mem-per-gpu", _R, ""), ("nice", _O, ""),
    ("no-requeue", _N, ""), ("nodelist", _R, "w"), ("nodes", _R, "N"), ("ntasks", _R, "n"),
    ("ntasks-per-node", _R, ""), ("output", _R, "o"), ("partition", _R, "p"),
    ("priority", _R, ""), ("qos", _R, "q"), ("requeue", _O, ""), ("reservation", _R, ""),
    ("signal", _R, ""), ("switches", _R, ""), ("time", _R, "t"), ("time-min", _R, ""),
    ("wrap", _R, ""),
]

# sbatch options tide accepts and ignores (with a warning naming the option).
_IGNORED = [
    ("acctg-freq", _R, ""), ("autocomplete", _R, ""), ("batch", _R, ""), ("bb", _R, ""),
    ("bbf", _R, ""), ("cluster", _R, ""), ("cluster-constraint", _R, ""),
    ("clusters", _R, "M"), ("consolidate-segments", _N, ""),
    ("container", _R, ""), ("container-id", _R, ""), ("context", _R, ""),
    ("contiguous", _N, ""), ("core-spec", _R, "S"), ("cores-per-socket", _R, ""),
    ("cpu-freq", _R, ""), ("deadline", _R, ""), ("delay-boot", _R, ""),
    ("distribution", _R, "m"), ("export-file", _R, ""), ("external", _N, ""),
    ("extra", _R, ""), ("extra-node-info", _R, "B"), ("get-user-env", _N, ""),
    ("gid", _R, ""), ("gpu-bind", _R, ""), ("gpu-freq", _R, ""),
    ("gpus-per-socket", _R, ""), ("help", _N, "h"), ("hint", _R, ""),
    ("ignore-pbs", _N, ""), ("input", _R, "i"), ("kill-on-invalid-dep", _R, ""),
    ("licenses", _R, "L"), ("mail-type", _R, ""), ("mail-user", _R, ""),
    ("mcs-label", _R, ""), ("mem-bind", _R, ""), ("mem-update", _R, ""),
    ("mincpus", _R, ""), ("network", _R, ""), ("no-kill", _O, "k"), ("nodefile", _R, "F"),
    ("ntasks-per-core", _R, ""), ("ntasks-per-gpu", _R, ""), ("ntasks-per-socket", _R, ""),
    ("ntasks-per-tres", _R, ""), ("oom-kill-step", _O, ""), ("open-mode", _R, ""),
    ("overcommit", _N, "O"), ("oversubscribe", _N, "s"), ("parsable", _N, ""),
    ("prefer", _R, ""), ("profile", _R, ""), ("propagate", _O, ""), ("quiet", _N, "Q"),
    ("reboot", _N, ""), ("resources", _R, ""), ("resv-ports", _O, ""), ("runtime", _R, ""),
    ("segment", _R, ""), ("sockets-per-node", _R, ""), ("spread-job", _N, ""),
    ("spread-segments", _N, ""), ("stepmgr", _N, ""), ("test-only", _N, ""),
    ("thread-spec", _R, ""), ("threads-per-core", _R, ""), ("tmp", _R, ""),
    ("tres-bind", _R, ""), ("tres-per-task", _R, ""), ("uid", _R, ""), ("usage", _N, ""),
    ("use-min-nodes", _N, ""), ("verbose", _N, "v"), ("version", _N, "V"), ("wait", _N, "W"),
    ("wait-all-nodes", _R, ""), ("wckey", _R, ""),
]

OPTIONS: dict[str, OptionSpec] = {
    name: OptionSpec(name, arg, short, supported)
    for table, supported in ((_SUPPORTED, True), (_IGNORED, False))
    for name, arg, short in table
}
# Second spellings sbatch accepts for the same option.
ALIASES: dict[str, str] = {"tasks-per-node": "ntasks-per-node"}
SHORT: dict[str, OptionSpec] = {o.short: o for o in OPTIONS.values() if o.short}

# What the sbatch command does itself, not the job (print the id alone, ask when the job
# would start instead of submitting it, wait for its end): no warning, nothing stored.
CLIENT_SIDE = frozenset({"parsable", "test-only", "wait"})

# Read by sbatch only from the command line: in a batch script they do nothing.
COMMAND_LINE_ONLY = frozenset({"help", "quiet", "usage", "verbose", "version", "wrap"})

# Input environment variables, in the order sbatch applies them (a later one
# wins where two set the same thing). See sbatch(1), INPUT ENVIRONMENT VARIABLES.
ENV_OPTIONS: tuple[tuple[str, str], ...] = (
    ("SBATCH_ACCOUNT", "account"), ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_ACCTG_FREQ", "acctg-freq"), ("SBATCH_BATCH", "batch"),
    ("SBATCH_BURST_BUFFER", "bb"), ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CLUSTERS", "clusters"), ("SLURM_CLUSTERS", "clusters"),
    ("SBATCH_CONSOLIDATE_SEGMENTS", "consolidate-segments"),
    ("SBATCH_CONTAINER", "container"), ("SBATCH_CONTAINER_ID", "container-id"),
    ("SBATCH_RUNTIME", "runtime"), ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CORE_SPEC", "core-spec"), ("SBATCH_CPU_FREQ_REQ", "cpu-freq"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"), ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"), ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"), ("SBATCH_GET_USER_ENV", "get-user-env"),
    ("SBATCH_GRES", "gres"), ("SBATCH_GRES_FLAGS", "gres-flags"), ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPU_BIND", "gpu-bind"), ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"), ("SBATCH_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"), ("SLURM_HINT", "hint"),
    ("SBATCH_HINT", "hint"), ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_BIND", "mem-bind"), ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"), ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NETWORK", "network"), ("SBATCH_NO_KILL", "no-kill"),
    ("SBATCH_NO_REQUEUE", "no-requeue"), ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OVERCOMMIT", "overcommit"), ("SBATCH_PARTITION", "partition"),
    ("SBATCH_PROFILE", "profile"), ("SBATCH_QOS", "qos"),
    ("SBATCH_REQ_SWITCH", "switch-count"), ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"), ("SBATCH_SEGMENT_SIZE", "segment"),
    ("SBATCH_SIGNAL", "signal"), ("SBATCH_SPREAD_JOB", "spread-job"),
    ("SBATCH_SPREAD_SEGMENTS", "spread-segments"), ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"), ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_TRES_BIND", "tres-bind"), ("SBATCH_TRES_PER_TASK", "tres-per-task"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"), ("SBATCH_WAIT", "wait"),
    ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"), ("SBATCH_WAIT4SWITCH", "switch-wait"),
    ("SBATCH_WCKEY", "wckey"), ("SBATCH_ERROR", "error"), ("SBATCH_INPUT", "input"),
    ("SBATCH_OUTPUT", "output"),
)
# SBATCH_REQ_SWITCH and SBATCH_WAIT4SWITCH each set one half of --switches=N@wait.
ENV_ONLY: dict[str, OptionSpec] = {
    name: OptionSpec(name, Arg.REQUIRED) for name in ("switch-count", "switch-wait")
}


def flag_on(value: str) -> bool:
    """sbatch's rule for a flag given as an environment variable (SBATCH_WAIT=...):
    empty, "yes" or a non-zero number sets it; anything else clears it."""
    v = value.strip()
    return v == "" or v.lower() == "yes" or (v.lstrip("+-").isdigit() and int(v) != 0)


def spec(name: str) -> OptionSpec:
    """The option for a canonical long name (including the env-only ones)."""
    return OPTIONS.get(name) or ENV_ONLY[name]


def resolve_long(given: str) -> tuple[OptionSpec | None, list[str]]:
    """Match a long option name as getopt_long does: an exact name wins, else
    a prefix of exactly one option. Returns (option, []) on a match, or
    (None, candidates) where several options share the prefix (or none do)."""
    name = ALIASES.get(given, given)
    if name in OPTIONS:
        return OPTIONS[name], []
    found = {ALIASES.get(n, n) for n in (*OPTIONS, *ALIASES) if n.startswith(given)}
    if len(found) == 1:
        return OPTIONS[found.pop()], []
    return None, sorted(found)
