"""A small PyTorch model trained with torch.distributed under tide, checkpointing
through tide's protocol (docs/recovery.md). Launched by train_ddp.sbatch with
srun: one process per task, gloo on CPU, NCCL when GPUs are visible.

Deterministic by seed: the model starts from the seed, and the batch of step
s on rank r is drawn from a generator seeded by (seed, s, r), so a run that is
killed and resumed from its last checkpoint ends with exactly the same loss as
one that never stopped. Rank 0 prints one line per step:

    step 17 loss 0.123456789 restart 1

and, at the end, `final loss <repr>`. It saves `ckpt-<step>.pt` (model,
optimiser, step) every --every steps, atomically, then tells tide
(`tide.job.notify_checkpoint`), and on the --signal warning (or SIGTERM)
it saves at the next step boundary.

Run outside tide for a quick look (one process, no distribution):
    python train_ddp.py --steps 20
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time

import torch
import torch.distributed as dist

import tide.job as tj


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60, help="training steps in all")
    p.add_argument("--every", type=int, default=10, help="checkpoint every N steps")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--sleep", type=float, default=0.0, help="seconds per step (demos)")
    return p.parse_args()


def setup() -> tuple[int, int, torch.device]:
    """torch.distributed from the variables srun sets (RANK, WORLD_SIZE, MASTER_*)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if cuda else "cpu")
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    return rank, world, device


def model_for(seed: int, device: torch.device) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)
    ).to(device)


def batch(seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The same samples for (seed, step, rank) on every run: y = sum(sin(x))."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + rank)
    x = torch.randn(size, 16, generator=g)
    return x, torch.sin(x).sum(dim=1, keepdim=True)


def resume(model: torch.nn.Module, opt: torch.optim.Optimizer) -> tuple[int, float | None]:
    """The step to start from (after the newest checkpoint, else 0) and the loss of
    the step before it: a job whose last checkpoint is its last step resumes with
    no step left to run, and must still report the loss it ended with."""
    last = tj.latest_checkpoint()
    if last is None:
        return 0, None
    state = torch.load(last[1], map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    return int(state["step"]) + 1, state.get("loss")


def save(model: torch.nn.Module, opt: torch.optim.Optimizer, step: int, loss: float) -> None:
    buf = io.BytesIO()
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "loss": loss}
    torch.save(state, buf)
    tj.atomic_write(tj.checkpoint_path(step), buf.getvalue())
    print(f"checkpoint {step}", flush=True)  # durable now: a restart resumes after it
    tj.notify_checkpoint(step)


def average_gradients(model: torch.nn.Module, world: int) -> None:
    if world == 1:
        return
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad /= world


def main() -> int:
    args = parse()
    torch.set_num_threads(1)  # virtual nodes share this machine's cores
    torch.use_deterministic_algorithms(True)
    tj.install_signal_handler()
    rank, world, device = setup()
    model = model_for(args.seed, device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start, loss = resume(model, opt)
    if rank == 0:
        print(f"start step {start} restart {tj.restart_count()} world {world}", flush=True)
    for step in range(start, args.steps):
        x, y = batch(args.seed, step, rank, args.batch)
        opt.zero_grad()
        step_loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        step_loss.backward()
        loss = step_loss.item()
        average_gradients(model, world)
        opt.step()
        warned = tj.should_checkpoint()
        if rank == 0:
            print(f"step {step} loss {loss:.9f} restart {tj.restart_count()}", flush=True)
            tj.notify_step(step)
            if (step + 1) % args.every == 0 or warned:
                save(model, opt, step, loss)
        if args.sleep:
            time.sleep(args.sleep)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        print(f"final loss {loss!r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
