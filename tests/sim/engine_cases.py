"""Random slurm.conf clusters and workloads for the engine's equivalence
property tests (test_skip_equivalence, test_engine_equivalence): topology
with several leaves, multi-GPU nodes, fair-share multifactor priority with a
small PriorityCalcPeriod, association limits, optionally a high-tier
partition that preempts (preempt/partition_prio, REQUEUE or CANCEL); jobs
with several nodes, --gpus spread, dependencies, --begin, --switches, array
tasks, jobs killed at their limit; node failures."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import strategies as st

from tide.config.loaded import LoadedCluster
from tide.config.loader import resolve_cluster
from tide.model import JobRequest
from tide.model.job import Dependency, DependencyItem, DependencyType
from tide.sim.events import Fault
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
{preempt}NodeName=DEFAULT CPUs=16 Sockets=2 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=64000 \
Gres=gpu:{gpus} State=UNKNOWN
NodeName=n[01-{nodes:02d}]
PartitionName=gpu Nodes=ALL Default=YES MaxTime=1-00:00:00 DefaultTime=00:20:00 PriorityTier=1
{urgent}"""

# a second partition over the same nodes whose jobs preempt the gpu partition's
URGENT = "PartitionName=urgent Nodes=ALL MaxTime=1-00:00:00 DefaultTime=00:20:00 PriorityTier=10\n"

DUMP = """\
Cluster - 'prop':Fairshare=1:QOS='normal{high}'
Parent - 'root'
User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1
Account - 'a':Description='a':Organization='x':Fairshare=60
Account - 'b':Description='b':Organization='x':Fairshare=40{grp}
Parent - 'a'
User - 'ua':DefaultAccount='a':Fairshare=1
Parent - 'b'
User - 'ub':DefaultAccount='b':Fairshare=1{max_jobs}
"""

CONF_FIELDS = {
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
}  # fmt: skip
confs = st.fixed_dictionaries(CONF_FIELDS)
# QOS high preempts normal, whose jobs get a minute's grace (preempt/qos)
QOS = "Name|Priority|GraceTime|Preempt\nnormal|0|00:01:00|\nhigh|100|00:00:00|normal\n"

# the same with preemption: "" (none), "REQUEUE" or "CANCEL" (partition_prio:
# the urgent partition's jobs preempt), "qos" (preempt/qos REQUEUE: QOS high's)
preempting_confs = st.fixed_dictionaries(
    {**CONF_FIELDS, "preempt": st.sampled_from(["", "REQUEUE", "CANCEL", "qos"])}
)

row = st.tuples(
    st.integers(0, 3000),  # submit
    st.integers(1, 2500),  # run
    st.integers(1, 3),  # nodes
    st.sampled_from([0, 1, 2, 4, 8]),  # gpus per node (0: --gpus spread)
    st.sampled_from([None, 300, 1200, 3600]),  # limit (None: DefaultTime)
    st.integers(0, 9),  # extras: 0 dependency, 1 begin, 2 switches, 3/5 preemptor, 4 array task
    st.booleans(),  # account a or b
)
rows = st.lists(row, min_size=1, max_size=30)

# a backlog behind a whole-cluster job (issue 12, seed004's case): that job's
# submit and run, and rows that queue behind it across PriorityCalcPeriod
# recalculations, their dependencies, begin times and --switches waits pending
backlogs = st.tuples(st.integers(0, 600), st.integers(600, 3000), rows)

faults = st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 5), st.integers(60, 2000)),
                  max_size=2)  # fmt: skip


def write_conf(c: dict, folder: Path) -> None:
    """slurm.conf, gres.conf, topology.conf (leaves of c["leaf"] nodes under
    one top switch) and sacctmgr.dump for the drawn conf `c`."""
    mode = c.get("preempt", "")
    kind, on = ("qos", "REQUEUE") if mode == "qos" else ("partition_prio", mode)
    preempt = f"PreemptType=preempt/{kind}\nPreemptMode={on}\nJobRequeue=1\n" if mode else ""
    urgent = URGENT if mode and mode != "qos" else ""
    text = CONF.format(**{**c, "preempt": preempt, "urgent": urgent})
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
    high = ",high" if mode == "qos" else ""
    (folder / "sacctmgr.dump").write_text(DUMP.format(grp=grp, max_jobs=max_jobs, high=high))
    if mode == "qos":
        (folder / "qos.txt").write_text(QOS)


def load_conf(c: dict) -> LoadedCluster:
    with tempfile.TemporaryDirectory() as tmp:
        write_conf(c, Path(tmp))
        return resolve_cluster(tmp)


def sim_jobs(data: list[tuple], gpus: int, preempt: str = "") -> list[SimJob]:
    """The drawn rows as jobs, by submit time; with the conf's `preempt`,
    extra 3 and 5 are preemptors (the urgent partition, or QOS high)."""
    out = []
    data = sorted(data, key=lambda r: r[0])
    array: tuple[int, int] | None = None
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
        elif extra in (3, 5) and preempt == "qos":
            kw["qos"] = "high"
        elif extra in (3, 5) and preempt:
            kw["partitions"] = ("urgent",)
        # consecutive rows with extra 4 are the tasks of one array job
        array = ((array[0], array[1] + 1) if array else (k, 0)) if extra == 4 else None
        user, account = ("ua", "a") if in_a else ("ub", "b")
        req = JobRequest(name=f"j{k}", **kw)
        out.append(SimJob(id=k, submit=float(submit), duration=float(run), request=req,
                          user=user, account=account, array=array))  # fmt: skip
    return out


def whole_cluster_first(c: dict, backlog: tuple) -> list[tuple]:
    """A drawn backlog as rows: the job on every GPU of every node, then the rest."""
    submit, run, rest = backlog
    return [(submit, run, c["nodes"], 8, 3600, 9, True), *rest]


def node_faults(fail: list[tuple], nodes: int) -> list[Fault]:
    return [Fault(float(t), f"n{1 + n % nodes:02d}", float(r)) for t, n, r in fail]
