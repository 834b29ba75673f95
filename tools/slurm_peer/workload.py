"""The deterministic workload submitted to the real Slurm peer and replayed by the twin.

Every job is a `sleep` of whole seconds. Its shape follows the peer's README: G <= 8 GPUs is
`-N 1 --gpus=G`, more is `-N G/8 --gpus-per-node=8` (whole nodes, gang start). Some multi-node
jobs ask for `--switches` (one leaf, or two for 8-node jobs), some of them with a short wait so
that max-wait expiry is exercised too. Time limits are whole minutes, as Slurm keeps them
(`--time=2` is 2 minutes), chosen with slack over the sleep so that backfill plans on limits
that differ from the real run times, as in production.

The same seed always gives the same jobs; submit offsets are whole seconds from the first
submission so that Slurm's 1 s time stamps record them exactly.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

SIZES = (1, 2, 4, 4, 8, 8, 16, 16, 32, 64)  # GPUs; repeats weight the draw
GAPS = (0, 0, 0, 1, 1, 2, 3, 5)  # seconds between consecutive submissions


@dataclass(frozen=True, slots=True)
class PeerJob:
    index: int  # position in the workload, 0-based
    submit: int  # seconds after the first submission
    sleep: int  # seconds the batch script sleeps
    gpus: int
    nodes: int
    limit_min: int  # --time, whole minutes
    account: str  # "" = the user's default account
    switches: str = ""  # --switches value ("1", "1@0:20"), "" = none

    @property
    def name(self) -> str:
        return f"p{self.index:03d}_g{self.gpus}_d{self.sleep}"

    def sbatch_options(self, gpus_per_node: int = 8) -> list[str]:
        """Resource options as typed on the sbatch command line (no -J/-o/--wrap), so the
        same string drives Slurm and the twin's JSONL `sbatch` field."""
        if self.gpus <= gpus_per_node:
            opts = ["-N", "1", f"--gpus={self.gpus}"]
        else:
            opts = ["-N", str(self.nodes), f"--gpus-per-node={gpus_per_node}"]
        opts += ["-p", "gpu", f"--time={self.limit_min}"]
        if self.account:
            opts += ["-A", self.account]
        if self.switches:
            opts.append(f"--switches={self.switches}")
        return opts


def build(
    seed: int = 1,
    jobs: int = 32,
    accounts: tuple[str, ...] = ("teama",),
    gpus_per_node: int = 8,
    nodes_per_leaf: int = 4,
    min_sleep: int = 5,
    max_sleep: int = 60,
) -> list[PeerJob]:
    """`jobs` jobs drawn from `seed`; accounts are used round-robin."""
    rng = random.Random(seed)
    out: list[PeerJob] = []
    t = 0
    for i in range(jobs):
        if i:
            t += rng.choice(GAPS)
        gpus = rng.choice(SIZES)
        sleep = rng.randint(min_sleep, max_sleep)
        slack = rng.choice((1.2, 1.5, 2.0, 3.0))
        limit = max(1, math.ceil(sleep * slack / 60))
        nodes = max(1, math.ceil(gpus / gpus_per_node))
        out.append(
            PeerJob(
                index=i,
                submit=t,
                sleep=sleep,
                gpus=gpus,
                nodes=nodes,
                limit_min=limit,
                account=accounts[i % len(accounts)] if accounts else "",
                switches=_switches(rng, nodes, nodes_per_leaf),
            )
        )
    return out


def _switches(rng: random.Random, nodes: int, nodes_per_leaf: int) -> str:
    """Half of the multi-node jobs ask for the fewest leaves they can use; a third of those
    wait only 20 s for it (Slurm's default wait is max_switch_wait, 300 s)."""
    if nodes < 2 or rng.random() < 0.5:
        return ""
    count = math.ceil(nodes / nodes_per_leaf)
    return f"{count}@0:20" if rng.random() < 1 / 3 else str(count)
