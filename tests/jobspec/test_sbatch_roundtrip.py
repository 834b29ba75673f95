"""Round trips: parse_args(to_argv(r)).request == r for requests in the form
parse_args produces, and the same through #SBATCH lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.jobspec.sbatch import parse_args, parse_script, to_argv
from tide.jobspec.values import PRIORITY_TOP, SIGNALS
from tide.model import (
    ArraySpec,
    Dependency,
    DependencyItem,
    DependencyType,
    JobRequest,
    SignalSpec,
)

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
WORD = st.builds(
    str.__add__, st.sampled_from(_ALNUM), st.text(_ALNUM + ".-", max_size=11)
)
PATH = st.text(_ALNUM + "/%.-", min_size=1, max_size=20)
HOSTS = st.lists(st.integers(1, 40), min_size=1, max_size=6, unique=True).map(
    lambda ns: tuple(f"n{i}" for i in sorted(ns))
)
UNNAMED_SIGNALS = [n for n in range(1, 32) if n not in SIGNALS.values()]


@st.composite
def dependencies(draw: st.DrawFn) -> Dependency:
    kinds = [t for t in DependencyType if t is not DependencyType.SINGLETON]
    job_id = st.one_of(
        st.integers(1, 10**6).map(str),
        st.tuples(st.integers(1, 10**6), st.integers(0, 99)).map(lambda p: f"{p[0]}_{p[1]}"),
        st.integers(1, 10**6).map(lambda j: f"{j}_*"),
    )
    item = st.one_of(
        st.just(DependencyItem(DependencyType.SINGLETON)),
        st.builds(
            DependencyItem,
            st.sampled_from(kinds),
            st.lists(job_id, min_size=1, max_size=3).map(tuple),
            st.integers(0, 600).map(lambda m: m * 60),
        ),
    )
    items = draw(st.lists(item, min_size=1, max_size=4))
    return Dependency(tuple(items), any_of=len(items) > 1 and draw(st.booleans()))


@st.composite
def signals(draw: st.DrawFn) -> SignalSpec:
    name = draw(st.one_of(st.sampled_from(sorted(SIGNALS)),
                          st.sampled_from(UNNAMED_SIGNALS).map(str)))
    return SignalSpec(name, draw(st.integers(0, 65535)), draw(st.booleans()), draw(st.booleans()))


@st.composite
def shapes(draw: st.DrawFn) -> dict[str, object]:
    """Node and task counts that sbatch would not adjust or refuse."""
    nodelist = draw(st.one_of(st.just(()), HOSTS))
    lo = hi = None
    if draw(st.booleans()):
        lo = draw(st.integers(1, 64))
        hi = draw(st.integers(lo, 128))
    elif nodelist:
        lo = len(nodelist)  # --nodelist alone asks for every listed node
    per_node = draw(st.one_of(st.none(), st.integers(1, 16)))
    least = hi or lo or 1
    most = per_node * least if per_node and lo else least + 100
    ntasks = draw(st.one_of(st.none(), st.integers(least, most))) if least <= most else None
    return {"nodes_min": lo, "nodes_max": hi, "nodelist": nodelist,
            "ntasks": ntasks, "ntasks_per_node": per_node}


def _maybe(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.none(), strategy)


def _or_empty(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.just(""), strategy)


# Built once: hypothesis validates each new strategy object, which is slow.
GPU_COUNT = _maybe(st.integers(0, 64))
CPUS_PER_GPU = _maybe(st.integers(1, 32))
MINUTES = _maybe(st.integers(1, 10**6).map(lambda m: m * 60))
ARRAYS = _maybe(st.builds(
    ArraySpec,
    st.lists(st.integers(0, 2000), min_size=1, max_size=20, unique=True)
    .map(lambda xs: tuple(sorted(xs))),
    st.one_of(st.none(), st.integers(1, 50)),
))
SIMPLE = st.fixed_dictionaries({
    "name": WORD,
    "partitions": st.lists(WORD, max_size=3).map(tuple),
    "account": _or_empty(WORD),
    "qos": _or_empty(WORD),
    "reservation": _or_empty(WORD),
    "nice": st.integers(-10**6, 10**6),
    "exclusive": st.booleans(),
    "constraint": _or_empty(st.sampled_from(["a100", "a100&ib", "a|b", "[rack1|rack2]"])),
    "exclude": st.one_of(st.just(()), HOSTS),
    "enforce_binding": st.booleans(),
    "begin": _maybe(st.integers(946684800, 4102444799).map(float)),
    "dependency": _maybe(dependencies()),
    "array": ARRAYS,
    "requeue": _maybe(st.booleans()),
    "signal": _maybe(signals()),
    "hold": st.booleans(),
    "output": _or_empty(PATH),
    "error": _or_empty(PATH),
    "chdir": _or_empty(PATH),
    "export": st.sampled_from(["ALL", "NONE", "NIL", "ALL,OMP_NUM_THREADS=8", "A,B=1"]),
    "priority": _maybe(st.one_of(st.integers(0, 10**6), st.just(PRIORITY_TOP))),
})
GPU_TYPE = st.sampled_from(["", "a100", "h100", "1g.10gb"])
MEM_FIELD = st.sampled_from([None, "mem_per_node", "mem_per_gpu", "mem_per_cpu"])


@st.composite
def requests(draw: st.DrawFn) -> JobRequest:
    """Requests as parse_args produces them: one memory option, one of
    --cpus-per-task/--cpus-per-gpu, a GPU type only with a GPU count, times in
    whole minutes with --time-min <= --time, a switch wait only with a count."""
    gpus = {k: draw(GPU_COUNT) for k in ("gpus", "gpus_per_node", "gpus_per_task")}
    has_gpus = any(v is not None for v in gpus.values())
    cpus_per_gpu = draw(CPUS_PER_GPU)
    mem_field = draw(MEM_FIELD)
    time_limit = draw(MINUTES)
    time_min = draw(MINUTES)
    if time_limit is not None and time_min is not None and time_min > time_limit:
        time_min = time_limit
    switches = draw(_maybe(st.integers(1, 8)))
    return JobRequest(
        **draw(SIMPLE),
        **draw(shapes()),
        **gpus,
        gpu_type=draw(GPU_TYPE) if has_gpus else "",
        cpus_per_task=1 if cpus_per_gpu else draw(st.integers(1, 128)),
        cpus_per_gpu=cpus_per_gpu,
        **({mem_field: draw(st.integers(0, 2**30))} if mem_field else {}),
        time_limit=time_limit,
        time_min=time_min,
        switches=switches,
        switches_wait=draw(_maybe(st.integers(0, 10**6))) if switches else None,
    )


@settings(max_examples=200)
@given(requests())
def test_parse_args_reads_back_to_argv(req: JobRequest) -> None:
    parsed = parse_args(to_argv(req))
    assert parsed.warnings == ()
    assert parsed.request == req


@settings(max_examples=100)
@given(requests())
def test_sbatch_lines_read_back_to_argv(req: JobRequest) -> None:
    text = "#!/bin/bash\n" + "".join(f"#SBATCH {word}\n" for word in to_argv(req)) + "srun x\n"
    assert parse_script(text).request == req


@settings(max_examples=100)
@given(requests())
def test_to_argv_is_stable(req: JobRequest) -> None:
    argv = to_argv(req)
    assert to_argv(parse_args(argv).request) == argv


def test_to_argv_example() -> None:
    req = parse_args(["-N2", "-t", "90", "--gres=gpu:a100:8", "--mem=512G", "-p", "gpu",
                      "--signal=B:USR1@300", "-d", "afterok:7", "--array=0-7%2"]).request
    assert to_argv(req) == [
        "--job-name=sbatch", "--nodes=2", "--gpus-per-node=a100:8", "--mem=512G",
        "--time=01:30:00", "--partition=gpu", "--dependency=afterok:7", "--array=0-7%2",
        "--signal=B:USR1@300",
    ]
