"""The named generator presets (docs/workloads.md, "Presets").

- seed000: 16 free GPUs (2 nodes x 8), two jobs of 2 x 8 GPUs submitted
  together: gang scheduling's textbook deadlock when pods are placed one by one.
- seed004: 100 nodes x 8 A100 (cluster "seed004"); one 800-GPU, 12-hour job
  at t = 1 h amid a stream of 1-4-GPU jobs of 2-10 s that keeps ~85 % of
  the GPUs busy, for 1.5 h: does the big job ever start?
- demo: a day on the 16 x 8-GPU "demo" cluster; three accounts with shares
  50/30/20; 1-64-GPU jobs (always one 64-GPU job at 10:00), half of the
  drawn multi-node ones with --switches=1.
- month1000: a month on 1,000 nodes x 8 GPUs (~100k jobs, ~90 % offered load).
- llm: a day of LLM training on the seed004 cluster: a 70B pre-training run
  on 512 GPUs checkpointing hourly, 7-34B fine-tunes on 8-64 GPUs
  checkpointing every half hour, and evaluation jobs; every training job
  declares its model and batch, so the report shows tokens/s, step time and
  MFU per account (add --mtbf to see failures' recompute).
"""

from __future__ import annotations

from collections.abc import Callable

from tide.sim.workload.base import TrainModel, WorkloadError
from tide.sim.workload.clusters import tree_cluster
from tide.sim.workload.model import (
    Dist,
    Estimates,
    FixedJob,
    GeneratorModel,
    Stream,
    rate_for,
)

HOUR, DAY = 3600, 86400
M = 1_048_576  # tokens per step are powers of two: 4M = 1,024 sequences of 4,096


def llm_model(params: float, tokens_per_step: float) -> TrainModel:
    """A dense transformer: 6 x params training FLOPs per token."""
    return TrainModel(flops_per_token=6 * params, tokens_per_step=tokens_per_step)


def seed000() -> GeneratorModel:
    jobs = tuple(
        FixedJob(submit=0.0, gpus=16, duration=HOUR, time_limit=2 * HOUR, name=f"gang-{x}",
                 account=f"team-{x}", user=f"{x}-user")
        for x in ("a", "b")
    )  # fmt: skip
    return GeneratorModel(
        name="seed000", cluster=tree_cluster("seed000", nodes=2), gpus_per_node=8,
        horizon=0.0, fixed=jobs, shares=(("team-a", 0.5), ("team-b", 0.5)),
        description="16 free GPUs, two 16-GPU jobs (2 pods x 8 GPUs) submitted together",
    )  # fmt: skip


def seed004() -> GeneratorModel:
    sizes = ((1, 0.40), (2, 0.25), (3, 0.05), (4, 0.30))
    dur = Dist("uniform", 2.0, 10.0)
    small = Stream(
        name="infer", rate=rate_for(0.85, 800, sizes, dur), sizes=sizes, duration=dur,
        estimates=Estimates(factor=Dist("uniform", 1.0, 3.0), cap=HOUR),
        accounts=(("inference", 1.0),), users_per_account=8,
    )  # fmt: skip
    big = FixedJob(submit=HOUR, gpus=800, duration=12 * HOUR, time_limit=13 * HOUR,
                   name="train-800", account="training", user="training-u1",
                   train=llm_model(70e9, 4 * M))  # fmt: skip
    return GeneratorModel(
        name="seed004", cluster="seed004", gpus_per_node=8, horizon=1.5 * HOUR,
        streams=(small,), fixed=(big,), shares=(("training", 0.5), ("inference", 0.5)),
        description="one 800-GPU 12-hour job at t=1h among 1-4-GPU jobs of 2-10 s "
        "keeping ~85% of 800 GPUs busy until t=1.5h",
    )  # fmt: skip


def demo() -> GeneratorModel:
    cap = 12 * HOUR  # the demo cluster's tightest MaxWall (account students)
    est = Estimates(p_exact=0.1, p_max=0.2, factor=Dist("lognormal", 2.0, 0.7), cap=cap)
    dev = ((1, 0.5), (2, 0.25), (4, 0.25))
    dev_d = Dist("lognormal", 900, 1.0, lo=30, hi=4 * HOUR)
    train = ((8, 1.0),)
    train_d = Dist("lognormal", 1.5 * HOUR, 0.8, lo=300, hi=12 * HOUR)
    dist = ((16, 0.6), (32, 0.3), (64, 0.1))
    dist_d = Dist("lognormal", 2 * HOUR, 0.6, lo=600, hi=12 * HOUR)
    streams = (
        Stream("dev", rate_for(0.15, 128, dev, dev_d), dev, dev_d, est,
               (("students", 0.6), ("research", 0.3), ("prod", 0.1))),
        Stream("train", rate_for(0.40, 128, train, train_d), train, train_d, est,
               (("research", 0.5), ("prod", 0.4), ("students", 0.1))),
        Stream("dist", rate_for(0.40, 128, dist, dist_d), dist, dist_d, est,
               (("research", 0.6), ("prod", 0.4)), switches=0.5, switches_wait=600),
    )  # fmt: skip
    big = FixedJob(submit=10 * HOUR, gpus=64, duration=4 * HOUR, time_limit=6 * HOUR,
                   name="dist", account="research", user="research-u1")  # fmt: skip
    return GeneratorModel(
        name="demo", cluster="demo", gpus_per_node=8, horizon=DAY, streams=streams, fixed=(big,),
        shares=(("research", 0.5), ("prod", 0.3), ("students", 0.2)),
        description="a mixed day on 16 x 8 GPUs: 1-64-GPU jobs, three accounts (50/30/20)",
    )  # fmt: skip


def month1000() -> GeneratorModel:
    gpus, cap = 8000, 3 * DAY
    est = Estimates(p_exact=0.05, p_max=0.25, factor=Dist("lognormal", 2.5, 0.8), cap=cap)
    classes = (  # name, load share, sizes, duration, accounts, P(--switches)
        ("dev", 0.015, ((1, 0.5), (2, 0.25), (4, 0.25)),
         Dist("lognormal", 1800, 1.0, lo=60, hi=8 * HOUR), (("edu", 0.5), ("nlp", 0.5)), 0.0),
        ("train", 0.35, ((8, 1.0),), Dist("lognormal", 6 * HOUR, 0.8, lo=600, hi=cap),
         (("nlp", 0.4), ("vision", 0.4), ("edu", 0.2)), 0.0),
        ("multi", 0.35, ((16, 0.4), (32, 0.3), (64, 0.2), (128, 0.1)),
         Dist("lognormal", 8 * HOUR, 0.7, lo=1800, hi=cap),
         (("nlp", 0.4), ("vision", 0.3), ("speech", 0.3)), 0.5),
        ("large", 0.18, ((256, 0.5), (512, 0.35), (1024, 0.15)),
         Dist("weibull", 14 * HOUR, 1.5, lo=HOUR, hi=cap), (("frontier", 1.0),), 0.0),
    )  # fmt: skip
    streams = tuple(
        Stream(name, rate_for(load, gpus, sizes, dur), sizes, dur, est, accts,
               users_per_account=12, switches=sw, switches_wait=1800)
        for name, load, sizes, dur, accts, sw in classes
    )  # fmt: skip
    return GeneratorModel(
        name="month1000", cluster=tree_cluster("month1000", nodes=1000, nodes_per_leaf=32),
        gpus_per_node=8, horizon=30 * DAY, streams=streams,
        shares=(("nlp", 0.3), ("vision", 0.2), ("speech", 0.1), ("frontier", 0.3), ("edu", 0.1)),
        description="a synthetic month on 1,000 nodes x 8 GPUs, ~90% offered load",
    )  # fmt: skip


def llm() -> GeneratorModel:
    cap = DAY
    est = Estimates(p_exact=0.1, p_max=0.3, factor=Dist("lognormal", 1.5, 0.5), cap=cap)
    tune = ((8, 0.4), (16, 0.3), (32, 0.2), (64, 0.1))
    tune_d = Dist("lognormal", 2 * HOUR, 0.8, lo=600, hi=24 * HOUR)
    models = ((llm_model(7e9, 1 * M), 0.5), (llm_model(13e9, 1 * M), 0.3),
              (llm_model(34e9, 2 * M), 0.2))  # fmt: skip
    evals = ((1, 0.5), (2, 0.2), (4, 0.2), (8, 0.1))
    eval_d = Dist("lognormal", 1800, 0.8, lo=60, hi=4 * HOUR)
    streams = (
        Stream("finetune", rate_for(0.25, 800, tune, tune_d), tune, tune_d, est,
               (("nlp", 0.5), ("code", 0.3), ("chat", 0.2)), users_per_account=6,
               switches=0.5, switches_wait=1800, checkpoint_interval=1800.0,
               checkpoint_cost=60.0, models=models),
        Stream("eval", rate_for(0.05, 800, evals, eval_d), evals, eval_d, est,
               (("eval", 1.0),), users_per_account=4),
    )  # fmt: skip
    pretrain = FixedJob(submit=0.0, gpus=512, duration=20 * HOUR, time_limit=DAY,
                        name="pretrain-70b", account="pretrain", user="pretrain-u1",
                        train=llm_model(70e9, 4 * M), checkpoint_interval=float(HOUR),
                        checkpoint_cost=300.0)  # fmt: skip
    return GeneratorModel(
        name="llm", cluster="seed004", gpus_per_node=8, horizon=DAY, streams=streams,
        fixed=(pretrain,),
        shares=(("pretrain", 0.5), ("nlp", 0.2), ("code", 0.1), ("chat", 0.1), ("eval", 0.1)),
        description="a day of LLM training on 100 x 8 A100: a 70B pre-training run on "
        "512 GPUs, 7-34B fine-tunes on 8-64 GPUs, evaluations",
    )  # fmt: skip


PRESETS: dict[str, Callable[[], GeneratorModel]] = {
    "seed000": seed000, "seed004": seed004, "demo": demo, "month1000": month1000, "llm": llm,
}  # fmt: skip


def preset(name: str) -> GeneratorModel:
    try:
        return PRESETS[name]()
    except KeyError:
        raise WorkloadError(
            f"unknown generator preset {name!r}; choose one of {', '.join(sorted(PRESETS))}"
        ) from None
