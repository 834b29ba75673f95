"""The corpus of short scenarios run on the real Slurm 22.05 peer and replayed by the twin.

Each scenario is a handful of `sleep` jobs submitted at whole-second offsets on the peer's
16 nodes x 8 GPUs (leaves of 4 nodes, spines of 2 leaves), plus what it changes after
start.sh: slurm.conf lines (applied with `scontrol reconfigure`) and sacctmgr commands (QOS,
association limits). Job options may name an earlier job's id as `{jN}` (N = index in the
scenario), which the recorder replaces with Slurm's id before submitting; the twin's JSONL
carries the same ids, so `--dependency=afterok:{j0}` means the same job on both sides.

Scenarios are kept short (about a minute of real time each): the machine is small and shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SJob:
    at: int  # submit offset, whole seconds from the scenario's first submission
    opts: str  # sbatch options (no -J/-o/--wrap); {jN} = the id of job N
    sleep: int | str = 10  # seconds, or a shell expression ("$((4 + SLURM_ARRAY_TASK_ID))")
    name: str = ""
    exit: int = 0  # the script's exit code (non-zero: FAILED)

    def wrap(self) -> str:
        tail = f"; exit {self.exit}" if self.exit else ""
        return f"sleep {self.sleep}{tail}"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    doc: str
    jobs: tuple[SJob, ...]
    conf: dict[str, str] = field(default_factory=dict)  # slurm.conf KEY -> value ("" drops)
    conf_lines: tuple[str, ...] = ()  # lines replacing the one with the same first word, or added
    sacctmgr: tuple[str, ...] = ()  # `sacctmgr -i ...` argument strings, in order
    timeout: int = 240  # seconds to wait for the queue to drain


def _fill(at: int, sleep: int, limit: int, nodes: int, count: int, extra: str = "") -> list[SJob]:
    """`count` whole-node jobs of `nodes` nodes each."""
    opts = f"-N {nodes} --gpus-per-node=8 -p gpu --time={limit} {extra}".strip()
    return [SJob(at, opts, sleep) for _ in range(count)]


def _one(gpus: int, limit: int, extra: str = "") -> str:
    return f"-N 1 --gpus={gpus} -p gpu --time={limit} {extra}".strip()


PRIORITY = Scenario(
    "priority",
    "multifactor priority: job size, partition (PriorityJobFactor), QOS (PriorityWeightQOS) and "
    "age order the jobs that wait while the cluster is full",
    jobs=(
        *_fill(0, 20, 1, 4, 4),
        SJob(1, "-N 8 --gpus-per-node=8 -p gpu --time=1", 8),
        SJob(2, "-N 8 --gpus-per-node=8 -p low --time=1", 8),
        SJob(3, "-N 8 --gpus-per-node=8 -p gpu --time=1 --qos=high", 8),
        SJob(4, "-N 2 --gpus-per-node=8 -p gpu --time=1", 8),
        SJob(5, "-N 16 --gpus-per-node=8 -p gpu --time=1", 6),
        SJob(6, "-N 8 --gpus-per-node=8 -p low --time=1 --qos=high", 8),
        SJob(7, "-N 4 --gpus-per-node=8 -p gpu --time=1 --qos=low", 8),
        SJob(8, "-N 8 --gpus-per-node=8 -p gpu --time=1", 8),
    ),
    conf={"PriorityWeightQOS": "2000"},
    conf_lines=(
        "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 "
        "PriorityJobFactor=4 OverSubscribe=NO",
        "PartitionName=low Nodes=ALL Default=NO MaxTime=INFINITE State=UP PriorityTier=1 "
        "PriorityJobFactor=1 OverSubscribe=NO",
    ),
    sacctmgr=(
        "add qos high Priority=100",
        "add qos low Priority=10",
        "modify user root set qos+=high,low",
    ),
)

FAIRSHARE = Scenario(
    "fairshare",
    "fair-share from accounting: teama and teamb use the cluster first; at the next "
    "PriorityCalcPeriod their usage (billed in CPUs, decayed) orders the waiting jobs of the "
    "three accounts",
    jobs=(
        *_fill(0, 62, 2, 4, 3, "-A teama"),
        *_fill(0, 62, 2, 2, 1, "-A teamb"),
        SJob(0, "-N 2 --gpus-per-node=8 -p gpu --time=1 -A teama", 20),
        SJob(2, "-N 8 --gpus-per-node=8 -p gpu --time=1 -A teama", 8),
        SJob(2, "-N 8 --gpus-per-node=8 -p gpu --time=1 -A teamb", 8),
        SJob(2, "-N 8 --gpus-per-node=8 -p gpu --time=1 -A teamc", 8),
        SJob(3, "-N 8 --gpus-per-node=8 -p gpu --time=1 -A teama", 8),
        SJob(3, "-N 8 --gpus-per-node=8 -p gpu --time=1 -A teamb", 8),
        SJob(3, "-N 8 --gpus-per-node=8 -p gpu --time=1 -A teamc", 8),
    ),
)

TOPOLOGY = Scenario(
    "topology",
    "topology tree and --switches: pinned jobs leave three leaves with 3 free nodes; 4-node "
    "jobs wanting one leaf take the free leaf or wait (and give up waiting after @0:15)",
    jobs=(
        SJob(0, _one(8, 1, "-w node001"), 25),
        SJob(0, _one(8, 1, "-w node005"), 35),
        SJob(0, _one(8, 1, "-w node010"), 45),
        SJob(1, "-N 4 --gpus-per-node=8 -p gpu --time=1 --switches=1", 30),
        SJob(2, "-N 4 --gpus-per-node=8 -p gpu --time=1 --switches=1", 12),
        SJob(3, "-N 4 --gpus-per-node=8 -p gpu --time=1 --switches=1@0:15", 12),
        SJob(4, "-N 3 --gpus-per-node=8 -p gpu --time=1", 10),
        SJob(5, "-N 2 --gpus-per-node=8 -p gpu --time=1 --switches=1", 10),
        SJob(6, _one(4, 1), 8),
        SJob(6, _one(8, 1), 8),
    ),
)

BACKFILL = Scenario(
    "backfill",
    "backfill with limits of different lengths: a whole-cluster job waits for running jobs "
    "with 1-3 minute limits; short jobs whose limits end before its reservation start in "
    "front of it, longer ones wait",
    jobs=(
        SJob(0, "-N 4 --gpus-per-node=8 -p gpu --time=1", 15),
        SJob(0, "-N 4 --gpus-per-node=8 -p gpu --time=2", 25),
        SJob(0, "-N 4 --gpus-per-node=8 -p gpu --time=3", 30),
        SJob(1, "-N 16 --gpus-per-node=8 -p gpu --time=1", 5),
        SJob(2, _one(8, 1), 10),
        SJob(2, _one(4, 2), 10),
        SJob(3, _one(8, 3), 10),
        SJob(3, "-N 2 --gpus-per-node=8 -p gpu --time=1", 12),
        SJob(4, _one(2, 4), 8),
        SJob(5, "-N 4 --gpus-per-node=8 -p gpu --time=1", 8),
        SJob(6, _one(1, 1), 6),
    ),
)

ARRAYS = Scenario(
    "arrays",
    "job arrays with throttles (%N): two arrays share the cluster with a big job; at most N "
    "tasks of each run at once",
    jobs=(
        SJob(
            0,
            "-N 1 --gpus=8 -p gpu --time=1 --array=0-7%3",
            "$((6 + 2 * (SLURM_ARRAY_TASK_ID % 3)))",
        ),
        SJob(
            1,
            "-N 4 --gpus-per-node=8 -p gpu --time=1 --array=0-3%2",
            "$((8 + SLURM_ARRAY_TASK_ID))",
        ),
        SJob(2, "-N 12 --gpus-per-node=8 -p gpu --time=1", 10),
        SJob(3, "-N 1 --gpus=4 -p gpu --time=1 --array=0-5%4", 5),
    ),
)

DEPENDENCIES = Scenario(
    "dependencies",
    "dependencies: after, afterok, afterany, afternotok on a failed job, an array and "
    "singleton, with fillers so that each start waits for its condition",
    jobs=(
        SJob(0, "-N 8 --gpus-per-node=8 -p gpu --time=1", 10),
        SJob(0, "-N 4 --gpus-per-node=8 -p gpu --time=1", 6, exit=1),
        SJob(1, "-N 4 --gpus-per-node=8 -p gpu --time=1 --dependency=afterok:{j0}", 8),
        SJob(1, "-N 4 --gpus-per-node=8 -p gpu --time=1 --dependency=afternotok:{j1}", 8),
        SJob(2, "-N 2 --gpus-per-node=8 -p gpu --time=1 --dependency=after:{j2}", 5),
        SJob(2, "-N 8 --gpus-per-node=8 -p gpu --time=1 --dependency=afterany:{j2}:{j3}", 6),
        SJob(3, "-N 1 --gpus=8 -p gpu --time=1 --array=0-2", 7),
        SJob(3, "-N 4 --gpus-per-node=8 -p gpu --time=1 --dependency=afterok:{j6}", 5),
        SJob(4, "-N 1 --gpus=2 -p gpu --time=1 --dependency=singleton", 6, name="solo"),
        SJob(4, "-N 1 --gpus=2 -p gpu --time=1 --dependency=singleton", 6, name="solo"),
    ),
)

LIMITS = Scenario(
    "limits",
    "QOS and association limits: teamb's GrpTRES gres/gpu=32, teamc's MaxJobs=1 and a QOS "
    "with MaxTRESPerUser gres/gpu=16 hold jobs although GPUs are free",
    jobs=(
        SJob(0, "-N 2 --gpus-per-node=8 -p gpu --time=1 -A teamb", 12),
        SJob(0, "-N 2 --gpus-per-node=8 -p gpu --time=1 -A teamb", 20),
        SJob(1, "-N 2 --gpus-per-node=8 -p gpu --time=1 -A teamb", 8),
        SJob(1, "-N 1 --gpus=8 -p gpu --time=1 -A teamc", 10),
        SJob(1, "-N 1 --gpus=8 -p gpu --time=1 -A teamc", 10),
        SJob(2, "-N 1 --gpus=8 -p gpu --time=1 -A teama --qos=capped", 9),
        SJob(2, "-N 1 --gpus=8 -p gpu --time=1 -A teama --qos=capped", 9),
        SJob(2, "-N 1 --gpus=8 -p gpu --time=1 -A teama --qos=capped", 9),
        SJob(3, "-N 4 --gpus-per-node=8 -p gpu --time=1 -A teama", 7),
        SJob(3, "-N 1 --gpus=8 -p gpu --time=1 -A teamc", 5),
    ),
    sacctmgr=(
        "add qos capped MaxTRESPerUser=gres/gpu=16",
        "modify user root set qos+=capped",
        "modify account teamb set GrpTRES=gres/gpu=32",
        "modify user root where account=teamc set MaxJobs=1",
    ),
)

PREEMPT = Scenario(
    "preempt",
    "preemption (preempt/partition_prio, PreemptMode=REQUEUE): jobs in `urgent` (PriorityTier "
    "10) take nodes from `gpu` jobs; victims that may not be requeued are cancelled",
    jobs=(
        *_fill(0, 40, 1, 4, 2, "--no-requeue"),
        SJob(0, "-N 4 --gpus-per-node=8 -p gpu --time=1 --no-requeue", 30),
        SJob(0, "-N 4 --gpus-per-node=8 -p gpu --time=1 --no-requeue", 20),
        SJob(5, "-N 4 --gpus-per-node=8 -p urgent --time=1", 10),
        SJob(8, "-N 6 --gpus-per-node=8 -p urgent --time=1", 8),
        SJob(9, "-N 4 --gpus-per-node=8 -p gpu --time=1 --no-requeue", 8),
        SJob(10, _one(8, 1, "--no-requeue"), 6),
    ),
)

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (PRIORITY, FAIRSHARE, TOPOLOGY, BACKFILL, ARRAYS, DEPENDENCIES, LIMITS, PREEMPT)
}
