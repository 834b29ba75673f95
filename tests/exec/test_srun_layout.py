"""srun's option parsing and task layout (pure: no processes)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tide.exec.base import NodeLaunch
from tide.exec.srun import SrunError, SrunOptions, layout, parse_args


def _nodes(*ntasks: int, gpus: int = 4, cores: int = 8) -> list[NodeLaunch]:
    return [
        NodeLaunch(
            f"n{i}",
            "",
            tuple(range(i * gpus, (i + 1) * gpus)),
            tuple(range(cores)),
            1000,
            t,
        )
        for i, t in enumerate(ntasks)
    ]


@pytest.mark.parametrize(
    ("argv", "fields", "command"),
    [
        (["hostname"], {}, ["hostname"]),
        (["-n", "4", "python", "-n", "x"], {"ntasks": 4}, ["python", "-n", "x"]),
        (["-n4", "-N2", "cmd"], {"ntasks": 4, "nodes": (2, 2)}, ["cmd"]),
        (["--ntasks=3", "--nodes=1-2", "cmd"], {"ntasks": 3, "nodes": (1, 2)}, ["cmd"]),
        (["-lN2", "cmd"], {"label": True, "nodes": (2, 2)}, ["cmd"]),
        (["--label", "--ntasks-per-node", "2", "cmd"], {"label": True, "ntasks_per_node": 2},
         ["cmd"]),
        (["-c", "4", "--gpus-per-task=1", "cmd"], {"cpus_per_task": 4, "gpus_per_task": 1},
         ["cmd"]),
        (["--cpu-bind=cores", "--export=NONE", "cmd"], {"cpu_bind": "cores", "export": "NONE"},
         ["cmd"]),
        (["-o", "out-%t", "-e", "err", "cmd"], {"output": "out-%t", "error": "err"}, ["cmd"]),
        (["-K0", "cmd"], {"kill_on_bad_exit": False}, ["cmd"]),
        (["--kill-on-bad-exit", "cmd"], {"kill_on_bad_exit": True}, ["cmd"]),
        (["-u", "--mpi=pmix", "--exact", "cmd"], {}, ["cmd"]),
        (["--", "-weird-program"], {}, ["-weird-program"]),
    ],
)  # fmt: skip
def test_parse_args(argv: list[str], fields: dict[str, object], command: list[str]) -> None:
    opts = parse_args(argv)
    assert opts.command == command
    assert {k: getattr(opts, k) for k in fields} == fields
    assert opts.warnings == []


def test_unsupported_options_warn_and_keep_going() -> None:
    opts = parse_args(["--mem=4G", "--gres", "gpu:1", "--frobnicate", "cmd", "arg"])
    assert opts.command == ["cmd", "arg"]
    assert len(opts.warnings) == 3
    assert "--mem=4G" in opts.warnings[0] and "--gres=gpu:1" in opts.warnings[1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-n", "zero", "cmd"], "-n=zero"),
        (["-n", "0", "cmd"], "-n=0"),
        (["-N", "3-1", "cmd"], "maximum is below"),
        (["-n"], "needs a value"),
        (["-l"], "no command"),
        (["--multi-prog", "conf"], "--multi-prog"),
    ],
)
def test_parse_errors_name_the_option(argv: list[str], message: str) -> None:
    with pytest.raises(SrunError, match=message):
        parse_args(argv)


def _counts(nodes: list[NodeLaunch], argv: list[str], env: dict[str, str] | None = None):
    step_nodes, counts, places = layout(nodes, parse_args([*argv, "x"]), env or {}, 1)
    return [n.node for n in step_nodes], counts, places


@pytest.mark.parametrize(
    ("ntasks", "argv", "env", "names", "counts"),
    [
        ((2, 2), [], {}, ["n0", "n1"], [2, 2]),  # the job's own shape
        ((2, 2), [], {"SLURM_NTASKS": "2"}, ["n0", "n1"], [1, 1]),  # SLURM_NTASKS is an input
        ((2, 2), ["-n", "2"], {}, ["n0", "n1"], [1, 1]),  # one per node first
        ((2, 2), ["-n", "3"], {}, ["n0", "n1"], [2, 1]),  # then block fill
        ((2, 2), ["-n", "1"], {}, ["n0"], [1]),
        ((2, 2), ["-N", "1"], {}, ["n0"], [2]),
        ((2, 2), ["-N", "2", "--ntasks-per-node", "3"], {}, ["n0", "n1"], [3, 3]),
        ((1, 1), ["-n", "5"], {}, ["n0", "n1"], [3, 2]),  # overcommit: round-robin
        ((4, 4, 4), ["-N", "1-2", "-n", "2"], {}, ["n0", "n1"], [1, 1]),
    ],
)
def test_layout_counts(ntasks, argv, env, names, counts) -> None:  # type: ignore[no-untyped-def]
    got_names, got_counts, _ = _counts(_nodes(*ntasks), argv, env)
    assert (got_names, got_counts) == (names, counts)


def test_layout_ranks_gpus_and_cores() -> None:
    nodes = _nodes(2, 2, gpus=2, cores=4)
    _, _, places = layout(nodes, parse_args(["--gpus-per-task=1", "-c", "2", "x"]), {}, 1)
    got = [(p.rank, p.node_index, p.local_rank, p.gpus, p.cores) for p in places]
    assert got == [
        (0, 0, 0, (0,), (0, 1)),
        (1, 0, 1, (1,), (2, 3)),
        (2, 1, 0, (2,), (0, 1)),
        (3, 1, 1, (3,), (2, 3)),
    ]
    _, _, places = layout(nodes, parse_args(["--cpu-bind=none", "x"]), {}, 1)
    assert all(p.gpus == nodes[p.node_index].gpus for p in places)
    assert all(p.cores == (0, 1, 2, 3) for p in places)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-N", "3"], "--nodes=3: the job has 2 node"),
        (["--gpus-per-task=3"], "needs 6 GPUs"),
        (["-n", "8", "--ntasks-per-node=2"], "needs 4 nodes"),
    ],
)
def test_layout_errors(argv: list[str], message: str) -> None:
    with pytest.raises(SrunError, match=message):
        layout(_nodes(2, 2), parse_args([*argv, "x"]), {}, 1)


@given(
    per_node=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    ntasks=st.integers(1, 40),
    nnodes=st.integers(1, 5),
)
def test_layout_invariants(per_node: list[int], ntasks: int, nnodes: int) -> None:
    nodes = _nodes(*per_node)
    opts = SrunOptions(ntasks=ntasks, nodes=(min(nnodes, len(nodes)),) * 2, command=["x"])
    step_nodes, counts, places = layout(nodes, opts, {}, 1)
    assert sum(counts) == ntasks and all(c >= 1 for c in counts)
    assert [p.rank for p in places] == list(range(ntasks))
    # ranks are blocked by node and local ranks count from 0 on each node
    assert [p.node_index for p in places] == sorted(p.node_index for p in places)
    for i, c in enumerate(counts):
        assert [p.local_rank for p in places if p.node_index == i] == list(range(c))
    assert len(step_nodes) == len(counts) == min(nnodes, len(nodes), ntasks)
