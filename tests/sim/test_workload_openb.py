"""Alibaba openb reader: the mapping on a hand-made CSV, counts on the trace."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sim_traces import traces_dir

from tide.sim.workload import WorkloadError, openb_cluster, read_openb

PODS = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,\
creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,1000,10
openb-pod-0001,3152,12288,1,460,,BE,Succeeded,5,105,5
openb-pod-0002,8000,4096,8,1000,V100M16|V100M32,Burstable,Failed,7,907,107
openb-pod-0003,4000,1024,0,0,,LS,Running,9,99,9
openb-pod-0004,4000,1024,1,1000,,LS,Pending,11,200,
"""
NODES = """sn,cpu_milli,memory_mib,gpu,model
openb-node-0000,32000,262144,0,
openb-node-0001,96000,393216,8,G2
"""


@pytest.fixture
def pods(tmp_path: Path) -> Path:
    p = tmp_path / "pods.csv"
    p.write_text(PODS)
    return p


def test_pod_mapping(pods: Path) -> None:
    w = read_openb(pods)
    a, b, c, d = w.jobs()
    assert [j.id for j in (a, b, c, d)] == [0, 1, 2, 3]
    assert (a.submit, a.duration, a.request.time_limit) == (0.0, 990.0, 990)
    assert (a.request.nodes_min, a.request.gpus_per_node, a.request.cpus_per_task) == (1, 1, 12)
    assert a.request.mem_per_node == 16384 and a.account == "ls" and a.user == "openb"
    assert b.request.gpus_per_node == 1 and b.original["gpu_milli"] == 460
    assert b.request.cpus_per_task == 4  # ceil(3152 / 1000)
    assert c.request.gpus_per_node == 8 and c.request.constraint == "V100M16|V100M32"
    assert c.duration == 800 and c.account == "burstable"
    assert d.request.gpus_per_node == 0
    assert dict(w.info.dropped) == {"never scheduled (Pending; pending='drop')": 1}
    assert dict(w.info.adjusted) == {"GPU-sharing pod asks for one whole GPU": 1}


def test_options(pods: Path) -> None:
    assert [j.id for j in read_openb(pods, fractional="drop")] == [0, 2, 3]
    assert [j.id for j in read_openb(pods, cpu_pods="drop")] == [0, 1, 2]
    kept = read_openb(pods, pending="keep").jobs()
    assert kept[-1].id == 4 and kept[-1].duration == 189  # deletion - creation
    with pytest.raises(WorkloadError, match="fractional='half'"):
        read_openb(pods, fractional="half")  # type: ignore[arg-type]


def test_nodes(tmp_path: Path) -> None:
    p = tmp_path / "nodes.csv"
    p.write_text(NODES)
    c = openb_cluster(p)
    assert [n.gpu_count for n in c.nodes] == [0, 8]
    n = c.nodes[1]
    assert (n.cpus, n.real_memory, n.gpu_type(), n.features) == (96, 393216, "G2", ("G2",))
    assert c.default_partition().nodes == ("openb-node-0000", "openb-node-0001")


def test_bad_files(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("name,cpu_milli\na,1\n")
    with pytest.raises(WorkloadError, match="missing column"):
        read_openb(p).jobs()
    p.write_text(PODS.replace("12000,16384", "lots,16384"))
    with pytest.raises(WorkloadError, match=r"x.csv:2: column 'cpu_milli': 'lots'"):
        read_openb(p).jobs()


_BASE = traces_dir("alibaba-gpu-2023-openb")
OPENB = _BASE / "alibaba-gpu-2023-openb" if _BASE is not None else None


@pytest.mark.skipif(OPENB is None, reason="shared/traces/alibaba-gpu-2023-openb not found "
                    "(set TIDE_TRACES to the traces folder)")  # fmt: skip
def test_trace_counts() -> None:
    assert OPENB is not None
    w = read_openb(OPENB / "openb_pod_list_default.csv")
    jobs = w.jobs()
    assert w.info.read == 8152 and len(jobs) == 8152 - 897
    # the 897 Pending pods: 860 of one GPU, 36 CPU-only, 1 of two GPUs
    assert Counter(j.request.gpus_per_node for j in jobs) == Counter(
        {1: 6129, 0: 1052, 8: 44, 2: 15, 4: 15}
    )
    assert sum(1 for j in jobs if "gpu_milli" in j.original) == 2573
    assert len(read_openb(OPENB / "openb_pod_list_default.csv", pending="keep").jobs()) == 8152
    assert len(read_openb(OPENB / "openb_pod_list_default.csv", fractional="drop").jobs()) == 4682
    spec = read_openb(OPENB / "openb_pod_list_gpuspec33.csv").jobs()
    assert sum(1 for j in spec if j.request.constraint) > 1000
    c = openb_cluster(OPENB / "openb_node_list_all_node.csv")
    assert len(c.nodes) == 1523 and c.total_gpus == 6212
    per = Counter(n.gpu_count for n in c.nodes if n.gpu_count)
    assert per == Counter({8: 617, 2: 518, 4: 54, 1: 24})
    models = Counter(n.gpu_type() for n in c.nodes)
    assert models["G2"] == 549 and models["T4"] == 404 and models[""] == 310
