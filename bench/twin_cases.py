"""Workloads and site configurations for the twin's scale benchmarks (bench_twin_scale.py).

Each builder writes its inputs into a folder and returns the `tide sim run` options
that replay them, so a benchmark can time the whole command as a user runs it.

- fairshare: the demo cluster of examples/slurm (16 nodes x 8 A100, 4 leaf switches),
  bf_interval=1, conservative backfill, bf_max_job_test=1000, bf_window of a day,
  fair-share-dominated multifactor priority from a `sacctmgr dump` (three accounts,
  50/30/20, four users each), and 1,200 one-node jobs of 30-60 min (1, 2, 4 or 8 GPUs,
  one-hour limit) all submitted at t=0.
- swf: a synthetic SWF log of a large machine (MaxProcs nodes of one GPU each), jobs
  of 1 to 4,096 processors (powers of two, small ones most), lognormal run times,
  requested times 1-3x the run time, arrivals keeping it ~90 % busy.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

USERS = {"research": 4, "prod": 4, "students": 4}

DUMP = """\
Cluster - 'demo':Fairshare=1:QOS='normal'
Parent - 'root'
User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1
Account - 'research':Description='research':Organization='lab':Fairshare=50
Account - 'prod':Description='production':Organization='lab':Fairshare=30
Account - 'students':Description='courses':Organization='school':Fairshare=20
"""


def fairshare(out: Path, jobs: int = 1200, seed: int = 1) -> list[str]:
    """The fair-share case of issue 12; returns the `tide sim run` options."""
    conf = out / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    src = ROOT / "examples" / "slurm"
    text = (src / "slurm.conf").read_text()
    params = ("SchedulerParameters=bf_window=1440,bf_resolution=60,bf_max_job_test=1000,"
              "bf_interval=1,default_queue_depth=200,max_switch_wait=600")  # fmt: skip
    text = re.sub(r"SchedulerParameters=[^\n]*\\\n[^\n]*", params, text)
    text = re.sub(r"PreemptType=[^\n]*\nPreemptMode=[^\n]*\n", "", text)
    (conf / "slurm.conf").write_text(text)
    for name in ("gres.conf", "topology.conf"):
        (conf / name).write_text((src / name).read_text())
    dump = DUMP
    for account, n in USERS.items():
        dump += f"Parent - '{account}'\n"
        dump += "".join(
            f"User - '{account}-u{k}':DefaultAccount='{account}':Fairshare=1\n" for k in range(n)
        )
    (conf / "sacctmgr.dump").write_text(dump)
    rng = random.Random(seed)
    users = [(a, f"{a}-u{k}") for a, n in USERS.items() for k in range(n)]
    with (out / "jobs.jsonl").open("w") as f:
        for i in range(1, jobs + 1):
            account, user = rng.choice(users)
            job = {
                "id": i, "submit": 0, "duration": rng.randint(1800, 3600), "user": user,
                "account": account, "nodes": 1, "gpus_per_node": rng.choice((1, 2, 4, 8)),
                "time_limit": 3600,
            }  # fmt: skip
            f.write(json.dumps(job) + "\n")
    return ["--slurm-conf", str(conf), "--workload", str(out / "jobs.jsonl"),
            "--backfill", "conservative"]  # fmt: skip


def swf(path: Path, nodes: int, jobs: int, seed: int = 1, load: float = 0.9) -> Path:
    """A synthetic SWF log (18 fields per job, the header pyss and tide both read)."""
    rng = random.Random(seed)
    sizes = [1 << k for k in range(13) if 1 << k <= min(4096, nodes)]
    weights = [1.0 / (k + 1) ** 1.5 for k in range(len(sizes))]
    mean_size = sum(s * w for s, w in zip(sizes, weights, strict=True)) / sum(weights)
    mean_run = 3600.0 * 1.2  # lognormal(mu=ln 3600, sigma 0.6) has mean ~1.2 h
    gap = mean_size * mean_run / (load * nodes)
    t = 0.0
    lines = [f"; MaxNodes: {nodes}", f"; MaxProcs: {nodes}", "; UnixStartTime: 0"]
    for i in range(1, jobs + 1):
        t += rng.expovariate(1.0 / gap)
        size = rng.choices(sizes, weights)[0]
        run = max(1, int(rng.lognormvariate(8.19, 0.6)))
        req = int(run * rng.uniform(1.0, 3.0)) + 1
        user = rng.randint(1, 200)
        fields = [i, int(t), -1, run, size, -1, -1, size, req, -1, 1, user, 1, 1, 1, 1, -1, -1]
        lines.append(" ".join(str(x) for x in fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def growth(out: Path, nodes: int, jobs: int, seed: int = 1) -> list[str]:
    """A cluster of `nodes` nodes x 8 GPUs in leaf switches of 32 (slurm.conf,
    gres.conf, topology.conf; EASY, bf_interval=30) and `jobs` jobs of 1 to 32
    GPUs (one node up to 8, else whole nodes) arriving to keep it ~90 % busy,
    lognormal run times, limits twice the run time; returns the `tide sim run`
    options that replay them."""
    conf = out / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    leaf = 32
    (conf / "slurm.conf").write_text(
        "ClusterName=grow\nSchedulerType=sched/backfill\n"
        "SchedulerParameters=bf_interval=30,bf_max_job_test=100,bf_window=1440\n"
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n"
        "TopologyPlugin=topology/tree\nGresTypes=gpu\n"
        "NodeName=DEFAULT CPUs=64 Sockets=2 CoresPerSocket=32 ThreadsPerCore=1 "
        "RealMemory=512000 Gres=gpu:8\n"
        f"NodeName=g[00001-{nodes:05d}]\nPartitionName=gpu Nodes=ALL Default=YES MaxTime=2-0\n"
    )  # fmt: skip
    (conf / "gres.conf").write_text(f"NodeName=g[00001-{nodes:05d}] Name=gpu Count=8\n")
    leaves = [f"SwitchName=l{k} Nodes=g[{k * leaf + 1:05d}-{min(nodes, (k + 1) * leaf):05d}]\n"
              for k in range(-(-nodes // leaf))]  # fmt: skip
    top = f"SwitchName=top Switches=l[0-{len(leaves) - 1}]\n"
    (conf / "topology.conf").write_text("".join(leaves) + top)
    rng = random.Random(seed)
    sizes = [(1, 1), (1, 2), (1, 4), (1, 8), (2, 8), (4, 8)]
    mean_gpus = sum(n * g for n, g in sizes) / len(sizes)
    gap = mean_gpus * 3600 / (0.9 * nodes * 8)  # the run times' mean is ~3,360 s
    t = 0.0
    with (out / "jobs.jsonl").open("w") as f:
        for i in range(1, jobs + 1):
            t += rng.expovariate(1.0 / gap)
            n, g = rng.choice(sizes)
            run = max(60, int(rng.lognormvariate(7.8, 0.8)))
            f.write(json.dumps({"id": i, "submit": int(t), "duration": run, "user": f"u{i % 50}",
                                "nodes": n, "gpus_per_node": g,
                                "time_limit": min(172800, run * 2)}) + "\n")  # fmt: skip
    return ["--slurm-conf", str(conf), "--workload", str(out / "jobs.jsonl")]
