"""The engine that skips quiet passes and stops backfill once nothing can start
(issue 12, item 1) gives byte-identical jobs.csv to the engine that runs
every pass in full, on random slurm.conf clusters (topology, fair-share,
association limits, small and large bf_interval) and random workloads
(multi-node jobs, --gpus spread, dependencies, --begin, --switches, jobs
killed at their limit) and node failures. Preemption turns skipping off
(tide.sim.engine), so it needs no case here."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.config.loaded import LoadedCluster
from tide.config.loader import resolve_cluster
from tide.model import JobRequest
from tide.model.job import Dependency, DependencyItem, DependencyType
from tide.sim.engine import Engine
from tide.sim.events import Fault
from tide.sim.outputs import write_jobs_csv
from tide.sim.workload.base import SimJob

CONF = """\
ClusterName=prop
SchedulerType=sched/backfill
SchedulerParameters=bf_window={window},bf_resolution={res},bf_max_job_test={test},\
bf_interval={interval},max_switch_wait=200
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
TopologyPlugin=topology/tree
PriorityType=priority/multifactor
PriorityDecayHalfLife=0-1
PriorityCalcPeriod={calc}
PriorityMaxAge=0-2
PriorityWeightAge={age}
PriorityWeightFairshare={fs}
PriorityWeightJobSize=100
GresTypes=gpu
NodeName=DEFAULT CPUs=16 Sockets=2 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=64000 \
Gres=gpu:{gpus} State=UNKNOWN
NodeName=n[01-{nodes:02d}]
PartitionName=gpu Nodes=ALL Default=YES MaxTime=1-00:00:00 DefaultTime=00:20:00
"""

DUMP = """\
Cluster - 'prop':Fairshare=1:QOS='normal'
Parent - 'root'
User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1
Account - 'a':Description='a':Organization='x':Fairshare=60
Account - 'b':Description='b':Organization='x':Fairshare=40{grp}
Parent - 'a'
User - 'ua':DefaultAccount='a':Fairshare=1
Parent - 'b'
User - 'ub':DefaultAccount='b':Fairshare=1{max_jobs}
"""

confs = st.fixed_dictionaries({
    "nodes": st.integers(2, 6),
    "gpus": st.sampled_from([2, 4, 8]),
    "leaf": st.integers(1, 3),
    "interval": st.sampled_from([1, 2, 7, 30, 300]),
    "res": st.sampled_from([1, 60]),
    "window": st.sampled_from([10, 60, 1440]),  # minutes
    "test": st.sampled_from([3, 1000]),
    "calc": st.sampled_from([1, 5]),  # minutes
    "age": st.sampled_from([0, 1000]),
    "fs": st.sampled_from([0, 10000]),
    "backfill": st.sampled_from(["easy", "conservative"]),
    "limits": st.booleans(),
})  # fmt: skip

rows = st.lists(
    st.tuples(
        st.integers(0, 3000),  # submit
        st.integers(1, 2500),  # run
        st.integers(1, 3),  # nodes
        st.sampled_from([0, 1, 2, 4, 8]),  # gpus per node (0: --gpus spread)
        st.sampled_from([None, 300, 1200, 3600]),  # limit (None: DefaultTime)
        st.integers(0, 9),  # extras: 0 dependency, 1 begin, 2 switches
        st.booleans(),  # account a or b
    ),
    min_size=1,
    max_size=30,
)

faults = st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 5), st.integers(60, 2000)),
                  max_size=2)  # fmt: skip


def _conf(c: dict, folder: Path) -> None:
    text = CONF.format(**c)
    (folder / "slurm.conf").write_text(text)
    gres = f"NodeName=n[01-{c['nodes']:02d}] Name=gpu Count={c['gpus']}\n"
    (folder / "gres.conf").write_text(gres)
    names = [f"n{i:02d}" for i in range(1, c["nodes"] + 1)]
    leaves = [names[k : k + c["leaf"]] for k in range(0, len(names), c["leaf"])]
    topo = "".join(f"SwitchName=l{k} Nodes={','.join(ns)}\n" for k, ns in enumerate(leaves))
    topo += f"SwitchName=top Switches={','.join(f'l{k}' for k in range(len(leaves)))}\n"
    (folder / "topology.conf").write_text(topo)
    grp = ":GrpTRES=gres/gpu=6" if c["limits"] else ""
    max_jobs = ":MaxJobs=2" if c["limits"] else ""
    (folder / "sacctmgr.dump").write_text(DUMP.format(grp=grp, max_jobs=max_jobs))


def _jobs(data: list[tuple], gpus: int) -> list[SimJob]:
    out = []
    data = sorted(data, key=lambda r: r[0])
    for k, (submit, run, nodes, gpn, limit, extra, in_a) in enumerate(data, 1):
        kw: dict = {"nodes_min": nodes, "nodes_max": nodes, "time_limit": limit}
        if gpn:
            kw["gpus_per_node"] = min(gpn, gpus)
        else:
            kw["gpus"] = nodes * 3
        if extra == 0 and k > 1:
            kw["dependency"] = Dependency((DependencyItem(DependencyType.AFTEROK, (str(k - 1),)),))
        elif extra == 1:
            kw["begin"] = float(submit + 500)
        elif extra == 2:
            kw["switches"] = 1
        user, account = ("ua", "a") if in_a else ("ub", "b")
        req = JobRequest(name=f"j{k}", **kw)
        out.append(SimJob(id=k, submit=float(submit), duration=float(run), request=req,
                          user=user, account=account))  # fmt: skip
    return out


def _csv(
    loaded: LoadedCluster, backfill: str, jobs: list[SimJob], lean: bool, down: list | None = None
) -> tuple[bytes, int]:
    import copy

    from tide.model.sched_config import BackfillMode

    cfg = copy.deepcopy(loaded.config)
    cfg.backfill = BackfillMode(backfill)
    eng = Engine(copy.deepcopy(loaded.cluster), cfg, "slurm", loaded.accounts, down or [],
                 skip_quiet=lean, starts_only=lean)  # fmt: skip
    out = eng.run(jobs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "jobs.csv"
        write_jobs_csv(path, out.results)
        return path.read_bytes(), eng.cycles


@settings(max_examples=60)
@given(confs, rows, faults)
def test_skipping_engine_equals_every_pass(c: dict, data: list[tuple], fail: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _conf(c, Path(tmp))
        loaded = resolve_cluster(tmp)
    jobs = _jobs(data, c["gpus"])
    down = [Fault(float(t), f"n{1 + n % c['nodes']:02d}", float(r)) for t, n, r in fail]
    full, cycles_full = _csv(loaded, c["backfill"], jobs, lean=False, down=down)
    lean, cycles_lean = _csv(loaded, c["backfill"], jobs, lean=True, down=down)
    assert lean == full, io.StringIO(full.decode()).getvalue()
    assert cycles_lean <= cycles_full


def test_quiet_passes_are_skipped() -> None:
    """A queue that waits behind long jobs with bf_interval=1: the lean engine
    runs a handful of passes where the full one runs one per second."""
    c = {"nodes": 2, "gpus": 4, "leaf": 1, "interval": 1, "res": 60, "window": 1440,
         "test": 1000, "calc": 5, "age": 1000, "fs": 10000, "backfill": "conservative",
         "limits": False}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        _conf(c, Path(tmp))
        loaded = resolve_cluster(tmp)
    data = [(0, 2000, 1, 4, 3600, 9, k % 2 == 0) for k in range(8)]
    jobs = _jobs(data, 4)
    full, cycles_full = _csv(loaded, "conservative", jobs, lean=False)
    lean, cycles_lean = _csv(loaded, "conservative", jobs, lean=True)
    assert lean == full
    assert cycles_full > 4000  # a pass every second for 4 x 2000 s
    assert cycles_lean < cycles_full // 10
