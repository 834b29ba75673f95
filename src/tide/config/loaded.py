"""What every loader returns: the three model objects and the warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

from tide.model import AccountTree, Cluster
from tide.model.quota import QuotaTree
from tide.model.sched_config import SchedulerConfig
from tide.model.service import PoolConfig


@dataclass(slots=True)
class LoadedCluster:
    cluster: Cluster
    config: SchedulerConfig
    accounts: AccountTree
    warnings: list[str] = field(default_factory=list)
    source: str = ""  # what was loaded (a path or "bundled:NAME"), for messages
    quotas: QuotaTree | None = None  # Kueue-style quotas (YAML `quotas:`); None = none
    pools: PoolConfig | None = None  # serving pools that lend (YAML `pools:`); None = none

    def same_model(self, other: LoadedCluster) -> bool:
        """Equal cluster, config, accounts and quotas (warnings and source aside)."""
        return (self.cluster, self.config, self.accounts, self.quotas, self.pools) == (
            other.cluster, other.config, other.accounts, other.quotas, other.pools)
