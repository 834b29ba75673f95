"""What each sbatch option does to the parse state: read its value (raising
JobSpecError on a bad one) and record it under the keys the builder reads.

A later setting of the same key replaces an earlier one, as in sbatch; the
builder (build.py) applies the rules that involve several options.
"""

from __future__ import annotations

from collections.abc import Callable

from tide.jobspec import jobrefs, timefmt, values
from tide.jobspec.errors import JobSpecError
from tide.jobspec.options import CLIENT_SIDE, COMMAND_LINE_ONLY, OptionSpec
from tide.jobspec.state import Origin, State

_TIME_FORMS = "use minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S"
_MEM_FORMS = "use a whole number with an optional K, M, G or T suffix (MB by default)"


class _Ctx:
    """Handed to each handler: records settings with the option's origin."""

    def __init__(self, state: State, origin: Origin) -> None:
        self.state, self.origin = state, origin

    def put(self, key: str, value: object) -> None:
        self.state.put(key, value, self.origin)

    def warn(self, text: str) -> None:
        self.state.warn(text)


Handler = Callable[[_Ctx, str | None], None]


def apply(state: State, option: OptionSpec, value: str | None, origin: Origin) -> None:
    """Record one option occurrence."""
    if origin is Origin.SCRIPT and option.name in COMMAND_LINE_ONLY:
        state.warn(f"{option.flag} in a batch script is ignored (sbatch reads it only "
                   "from the command line)")
        return
    if option.name in CLIENT_SIDE:
        return  # the sbatch command acted on it (tide.slurm.sbatch)
    if not option.supported:
        state.warn(f"{option.flag} is accepted but ignored by tide")
        if option.name == "oversubscribe":  # still cancels an earlier --exclusive
            state.put("oversubscribe", True, origin)
        return
    _HANDLERS[option.name](_Ctx(state, origin), value)


def _need(value: str | None) -> str:
    """The value of an option that requires one (split_argv and the
    environment always supply it; this narrows the type)."""
    if value is None:
        raise TypeError("an option that requires a value got none")
    return value


def _text(key: str) -> Handler:
    return lambda ctx, v: ctx.put(key, _need(v))


def _name(value: str) -> str:
    """--job-name: a name that opens a quote it never closes is a quoting mistake
    (`'--job-name="my run'` from a shell, a JSON argv with the quotes kept), not a
    name; quotes inside a name (bob's-run) are fine."""
    if value[:1] in ("'", '"') and (len(value) < 2 or value[-1] != value[0]):
        raise JobSpecError(
            "--job-name", value, f"unmatched `{value[0]}`: close the quote or drop it "
            "(e.g. --job-name=my-run)"
        )
    return value


def _count(key: str, example: str = "4") -> Handler:
    return lambda ctx, v: ctx.put(key, values.count(f"--{key}", _need(v), 1, example))


def _hosts(key: str) -> Handler:
    return lambda ctx, v: ctx.put(key, values.hostnames(f"--{key}", _need(v)))


def _gpu_count(key: str) -> Handler:
    return lambda ctx, v: ctx.put(key, values.typed_count(f"--{key}", _need(v)))


def _time(key: str) -> Handler:
    parse = timefmt.parse_job_time if key == "time" else timefmt.parse_time_limit

    def handle(ctx: _Ctx, v: str | None) -> None:
        try:
            ctx.put(key, parse(_need(v)))
        except ValueError:
            raise JobSpecError(
                f"--{key}", v, f"not a time; {_TIME_FORMS} (e.g. --{key}=2:00:00)"
            ) from None
    return handle


def _mem(key: str) -> Handler:
    def handle(ctx: _Ctx, v: str | None) -> None:
        try:
            ctx.put(key, timefmt.parse_mem(_need(v)))
        except ValueError:
            raise JobSpecError(
                f"--{key}", v, f"not a memory size; {_MEM_FORMS} (e.g. --{key}=64G)"
            ) from None
    return handle


def _begin(ctx: _Ctx, v: str | None) -> None:
    try:
        ctx.put("begin", timefmt.parse_begin(_need(v), ctx.state.now))
    except ValueError as err:
        raise JobSpecError(
            "--begin", v,
            f"not a start time ({err}); use now+N[minutes|hours|days], HH:MM[:SS], "
            "YYYY-MM-DD[THH:MM[:SS]], midnight, noon, teatime, today or tomorrow "
            "(e.g. --begin=now+1hour)",
        ) from None


def _nodes(ctx: _Ctx, v: str | None) -> None:
    lo, hi, was_list = values.nodes(_need(v))
    if was_list:
        ctx.warn(f"--nodes={v}: tide takes a node range, not a list of sizes; using {lo}-{hi}")
    ctx.put("nodes", (lo, hi))


def _gres(ctx: _Ctx, v: str | None) -> None:
    gpu, warnings = values.gres(_need(v))
    for text in warnings:
        ctx.warn(text)
    ctx.put("gres", gpu)


def _gres_flags(ctx: _Ctx, v: str | None) -> None:
    text = _need(v)
    flags = {f.strip().lower() for f in text.split(",")}
    accepted = "use enforce-binding or disable-binding (e.g. --gres-flags=enforce-binding)"
    if {"enforce-binding", "disable-binding"} <= flags:
        raise JobSpecError(
            "--gres-flags", text, f"enforce-binding and disable-binding conflict; {accepted}"
        )
    for flag in sorted(flags - {"enforce-binding", "disable-binding"}):
        if flag not in ("one-task-per-sharing", "multiple-tasks-per-sharing"):
            raise JobSpecError("--gres-flags", text, f"unknown flag {flag!r}; {accepted}")
        ctx.warn(f"--gres-flags={flag} is accepted but ignored by tide")
    ctx.put("enforce-binding", "enforce-binding" in flags)


def _exclusive(ctx: _Ctx, v: str | None) -> None:
    mode = (v or "exclusive").strip().lower()
    if mode == "allocation":
        mode = "exclusive"
    if mode not in ("exclusive", "oversubscribe", "user", "mcs", "topo"):
        raise JobSpecError("--exclusive", v, "use --exclusive alone, or =user, =mcs or =topo")
    if mode in ("user", "mcs", "topo"):
        ctx.warn(f"--exclusive={mode} is accepted but ignored by tide "
                 "(tide's --exclusive means whole nodes)")
    ctx.put("exclusive", mode)


def _requeue(ctx: _Ctx, v: str | None) -> None:
    if v is not None and v.strip():
        if v.strip().lower() != "expedite":
            raise JobSpecError("--requeue", v, "use --requeue alone or --requeue=expedite")
        ctx.warn("--requeue=expedite is accepted; tide requeues without expediting")
    ctx.put("requeue", True)


def _switches(ctx: _Ctx, v: str | None) -> None:
    text = _need(v)
    number, at, wait = text.partition("@")
    ctx.put("switch-count", values.count("--switches", number, 1, "1@2:00:00"))
    if at:
        ctx.put("switch-wait", _duration("--switches", text, wait))


def _duration(flag: str, whole: str, text: str) -> int | None:
    try:
        return timefmt.parse_duration(text)
    except ValueError:
        raise JobSpecError(flag, whole, f"bad wait time {text!r}; {_TIME_FORMS}") from None


def _dependency(ctx: _Ctx, v: str | None) -> None:
    dep, warnings = jobrefs.dependency(_need(v))
    for text in warnings:
        ctx.warn(text)
    ctx.put("dependency", dep)


_HANDLERS: dict[str, Handler] = {
    "account": _text("account"),
    "array": lambda ctx, v: ctx.put("array", jobrefs.array(_need(v), ctx.state.max_array_size)),
    "begin": _begin,
    "chdir": _text("chdir"),
    "constraint": _text("constraint"),
    "cpus-per-gpu": _count("cpus-per-gpu"),
    "cpus-per-task": _count("cpus-per-task"),
    "dependency": _dependency,
    "error": _text("error"),
    "exclude": _hosts("exclude"),
    "exclusive": _exclusive,
    "export": lambda ctx, v: ctx.put("export", values.export(_need(v))),
    "gpus": _gpu_count("gpus"),
    "gpus-per-node": _gpu_count("gpus-per-node"),
    "gpus-per-task": _gpu_count("gpus-per-task"),
    "gres": _gres,
    "gres-flags": _gres_flags,
    "hold": lambda ctx, v: ctx.put("hold", True),
    "comment": lambda ctx, v: ctx.put("comment", values.comment(_need(v))),
    "job-name": lambda ctx, v: ctx.put("job-name", _name(_need(v))),
    "mem": _mem("mem"),
    "mem-per-cpu": _mem("mem-per-cpu"),
    "mem-per-gpu": _mem("mem-per-gpu"),
    "nice": lambda ctx, v: ctx.put("nice", values.nice(v)),
    "no-requeue": lambda ctx, v: ctx.put("requeue", False),
    "nodelist": _hosts("nodelist"),
    "nodes": _nodes,
    "ntasks": _count("ntasks"),
    "ntasks-per-node": _count("ntasks-per-node"),
    "output": _text("output"),
    "partition": lambda ctx, v: ctx.put("partition", values.names("--partition", _need(v))),
    "priority": lambda ctx, v: ctx.put("priority", values.priority(_need(v))),
    "qos": _text("qos"),
    "requeue": _requeue,
    "reservation": _text("reservation"),
    "signal": lambda ctx, v: ctx.put("signal", values.signal(_need(v))),
    "switches": _switches,
    "switch-count": lambda ctx, v: ctx.put(
        "switch-count", values.count("--switches", _need(v), 1, "1")
    ),
    "switch-wait": lambda ctx, v: ctx.put(
        "switch-wait", _duration("--switches", _need(v), v or "")
    ),
    "time": _time("time"),
    "time-min": _time("time-min"),
    "wrap": _text("wrap"),
}
