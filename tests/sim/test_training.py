"""Training in the twin: the throughput model, the engine's ledger of paid
GPU-time and surviving work (failures' recompute counted as paid), the count
driver's, JSONL and generator declarations, and the report's rows. Expected
values are worked out by hand in the comments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tide.model import AccountTree, JobRequest
from tide.model.sched_config import QueueOrder, SchedulerConfig
from tide.sim.events import Fault
from tide.sim.runner import SimInputs, run_policy
from tide.sim.training import Ledger, Throughput, figures
from tide.sim.workload.base import SimJob, TrainModel, WorkloadError
from tide.sim.workload.clusters import tree_cluster
from tide.sim.workload.generator import generate
from tide.sim.workload.jsonl import parse_line, read_jsonl, write_jsonl

M = 1_048_576
SEVEN_B = TrainModel(flops_per_token=42e9, tokens_per_step=M)  # 6 x 7e9
# 8 A100 (312 TFLOPS) at the table's steady MFU 0.45 train a 7B model at
# 8 x 312e12 x 0.45 / 42e9 = 26,742.857 tokens/s; a 1M-token step takes
# 1,048,576 / 26,742.857 = 39.2095 s
RATE = 8 * 312e12 * 0.45 / 42e9


def test_throughput_per_gpu_type_and_overrides() -> None:
    tp = Throughput()
    assert tp.tokens_per_s(SEVEN_B, 8, "a100") == pytest.approx(RATE)
    assert tp.steady_mfu("NVIDIA A100-SXM4-80GB", SEVEN_B) == 0.45
    assert tp.steady_mfu("h100", SEVEN_B) == 0.40
    assert tp.steady_mfu("mystery", SEVEN_B) == 0.35  # DEFAULT_MFU
    assert Throughput(mfu=0.3).steady_mfu("a100", SEVEN_B) == 0.3  # --mfu
    own = TrainModel(42e9, M, mfu=0.5)
    assert Throughput(mfu=0.3).steady_mfu("a100", own) == 0.5  # the job's own wins
    assert Throughput(peaks={"a100": 624.0}).tokens_per_s(SEVEN_B, 8, "a100") == pytest.approx(
        2 * RATE
    )
    assert tp.tokens_per_s(SEVEN_B, 8, "tpu") is None  # no known peak


def _inputs(jobs: list[SimJob], nodes: int = 2) -> SimInputs:
    return SimInputs("t", tree_cluster("t", nodes=nodes), SchedulerConfig(), AccountTree(),
                     lambda: jobs)  # fmt: skip


def _job(jid: int, train: TrainModel | None = SEVEN_B, **kw: float) -> SimJob:
    req = JobRequest(name="train", nodes_min=1, nodes_max=1, gpus_per_node=8, time_limit=86400,
                     account="lab", requeue=True)  # fmt: skip
    return SimJob(id=jid, submit=0.0, duration=kw.pop("duration", 3600.0), request=req,
                  account="lab", train=train, **kw)  # type: ignore[arg-type]


def test_a_failure_makes_the_job_pay_for_work_it_redoes() -> None:
    """Work 3600 s, a checkpoint every 600 s of work costing 60 s. gpu01 fails
    at t=1000: one checkpoint done (saved 600 s of work, at t=660), so
    8 x (1000 - 660) = 2720 GPU-s are lost. The job restarts on gpu02 after
    the live controller's RequeueBackoff (5 s, tide.sched.requeue) with 3000 s
    of work left: 4 checkpoints (none at the very end), 3240 s.
    Paid: 8 x 1000 + 8 x 3240 = 33,920 GPU-s; work done once: 3600 s."""
    job = _job(1, checkpoint_interval=600.0, checkpoint_cost=60.0)
    run = run_policy(_inputs([job]), "slurm", SchedulerConfig(), [Fault(1000.0, "gpu01", 99999)])
    (res,) = run.results
    assert res.restarts == 1 and res.end == pytest.approx(1000 + 5 + 3240)
    t = run.metrics["training"]
    lab = t["accounts"]["lab"]
    assert t["all"] == lab and lab["jobs"] == 1
    assert lab["paid_gpu_hours"] == pytest.approx(33920 / 3600)
    assert lab["recompute_gpu_hours"] == pytest.approx(2720 / 3600)
    assert lab["recompute_share"] == pytest.approx(2720 / 33920)
    assert lab["tokens"] == pytest.approx(RATE * 3600)
    assert lab["tokens_per_s"] == pytest.approx(RATE)  # steady: per second of work
    # incl. recovery: per second the job held its GPUs (33,920 / 8 = 4240 s)
    assert lab["tokens_per_s_with_recovery"] == pytest.approx(RATE * 3600 / 4240)
    assert lab["step_p50"] == pytest.approx(M / RATE, rel=0.01)
    assert lab["mfu"] == pytest.approx(0.45)
    # useful FLOPs over the peak of the paid GPU-time: 0.45 x 8 x 3600 / 33,920
    assert lab["mfu_effective"] == pytest.approx(0.45 * 8 * 3600 / 33920)


def test_jobs_without_a_model_or_without_training_add_nothing() -> None:
    run = run_policy(_inputs([_job(1, train=None)]), "slurm", SchedulerConfig())
    assert "training" not in run.metrics


def test_the_count_driver_gives_the_same_figures_without_faults() -> None:
    """Two jobs on a flat 2-node cluster (the count driver's case) and the
    general engine (kueue) agree: one attempt each, paid = 8 x 3600."""
    jobs = [_job(1), _job(2, train=TrainModel(6 * 13e9, 2 * M))]
    fcfs = SchedulerConfig(order=QueueOrder.FCFS)
    count = run_policy(_inputs(jobs), "slurm", fcfs)
    general = run_policy(_inputs(jobs), "kueue", fcfs)
    assert count.driver == "count" and general.driver == "general"
    for run in (count, general):
        lab = run.metrics["training"]["accounts"]["lab"]
        assert lab["paid_gpu_hours"] == pytest.approx(2 * 8)
        assert lab["recompute_share"] == 0.0
        # 13B on 8 A100: RATE x 7 / 13 tokens/s; steps of 2M: 2M / that
        assert lab["tokens"] == pytest.approx(3600 * RATE * (1 + 7 / 13))
        assert lab["mfu_effective"] == pytest.approx(0.45)
        # one step time per job, the same number of hours each: p50 is the
        # 7B job's (more, shorter steps), p95 the 13B job's
        assert lab["step_p50"] == pytest.approx(M / RATE, rel=0.01)
        assert lab["step_p95"] == pytest.approx(2 * M / (RATE * 7 / 13), rel=0.01)


def test_figures_group_accounts_and_skip_unknown_gpus() -> None:
    a = Ledger("a", SEVEN_B, 8, "a100", 8 * 100.0, 100.0)
    b = Ledger("b", SEVEN_B, 8, "tpu", 8 * 100.0, 100.0)  # no peak: no throughput
    got = figures([a, b], Throughput())
    assert got is not None and set(got["accounts"]) == {"a"}
    assert figures([b], Throughput()) is None


def test_jsonl_declares_models(tmp_path: Path) -> None:
    line = {"submit": 0, "duration": 60, "gpus": 8, "params": "7B", "tokens_per_step": "1M",
            "mfu": 0.5}  # fmt: skip
    job = parse_line(line, 1, "w.jsonl:1")
    assert job.train == TrainModel(42e9, 1e6, 0.5)  # K/M/B/T: powers of 1000
    by_fpt = parse_line({"submit": 0, "duration": 1, "flops_per_token": 4.2e10}, 2, "w:2")
    assert by_fpt.train == TrainModel(4.2e10)
    path = tmp_path / "w.jsonl"
    write_jsonl([job, by_fpt], path)
    assert [j.train for j in read_jsonl(path)] == [job.train, by_fpt.train]
    assert json.loads(path.read_text().splitlines()[0])["flops_per_token"] == 42e9


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"tokens_per_step": 1024}, "tokens_per_step", "declares no model"),
        ({"params": "lots"}, "params", "positive number"),
        ({"params": 7e9, "mfu": 1.5}, "mfu", "at most 1"),
        ({"params": -1}, "params", "positive number"),
    ],
)
def test_bad_model_fields_name_the_field(extra: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(WorkloadError, match=rf"w:3: field '{field}': .*{words}"):
        parse_line({"submit": 0, "duration": 1, **extra}, 3, "w:3")


def test_the_llm_preset_declares_its_training_jobs() -> None:
    cluster, jobs = generate("llm", seed=1)
    assert cluster == "seed004"
    pretrain = [j for j in jobs if j.name == "pretrain-70b"]
    assert len(pretrain) == 1 and pretrain[0].train == TrainModel(6 * 70e9, 4 * M)
    assert pretrain[0].checkpoint_interval == 3600.0
    tunes = [j for j in jobs if j.name == "finetune"]
    assert tunes and all(j.train is not None and j.checkpoint_interval for j in tunes)
    assert {j.train.flops_per_token for j in tunes if j.train} == {42e9, 78e9, 204e9}
    assert all(j.train is None for j in jobs if j.name == "eval")
    # presets without models draw the same jobs as before models existed
    _, demo = generate("demo", seed=1)
    assert all(j.train is None for j in demo)


def test_the_report_shows_training_per_account(tmp_path: Path) -> None:
    from tide.sim.runner import write_comparison

    jobs = [_job(1, checkpoint_interval=600.0, checkpoint_cost=60.0), _job(2, train=None)]
    inputs = _inputs(jobs)
    run = run_policy(inputs, "slurm", SchedulerConfig(), [Fault(1000.0, "gpu01", 99999)])
    write_comparison(tmp_path, inputs, [run])
    html = (tmp_path / "report.html").read_text()
    for label in ("useful tokens", "tokens/s per job, steady", "step time p95",
                  "MFU incl. overheads (checkpoints, recompute, suspension)",
                  "paid GPU-time recomputed after failures"):  # fmt: skip
        assert f"<td>{label}</td>" in html
    row = re.search(r"<td>training lab \(tokens/s.*?</td><td>(.*?)</td>", html)
    assert row is not None
    # 26.7k tokens/s; 39.2 s steps, shown as the middle of their 2 % bucket
    # (1.02^185.5 = 39.4 s, within 1 %); MFU 0.45 x 28,800 / 33,920 = 38.2 %;
    # 2720 / 33,920 = 8.0 % of the paid GPU-time recomputed
    assert row.group(1) == "26.7k/s · 39.4s · 38.2 % · 8.0 %"
