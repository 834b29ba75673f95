"""Accounts, users (associations), QOS and limits, as sacctmgr defines them.

An association is an (account, user) pair, or an account alone; associations
form the tree that fair-share and Grp* limits walk. TRES limits are kept as
dicts keyed by Slurm's TRES names ("cpu", "mem", "node", "gres/gpu",
"gres/gpu:a100").
"""

from __future__ import annotations

from dataclasses import dataclass, field

Tres = dict[str, int]

# sacctmgr's Fairshare=parent: the association has no shares of its own; for
# fair-share its children count as children of its nearest non-"parent" ancestor.
FAIRSHARE_PARENT = -1


@dataclass(slots=True)
class Limits:
    """Association or QOS limits. None = unlimited (sacctmgr's -1)."""

    grp_tres: Tres = field(default_factory=dict)  # GrpTRES
    grp_jobs: int | None = None  # GrpJobs (running)
    grp_submit_jobs: int | None = None  # GrpSubmitJobs
    max_jobs: int | None = None  # MaxJobs (running, per user)
    max_submit_jobs: int | None = None  # MaxSubmitJobs (per user)
    max_tres_per_job: Tres = field(default_factory=dict)  # MaxTRES
    max_tres_per_user: Tres = field(default_factory=dict)  # MaxTRESPerUser (QOS)
    max_tres_per_node: Tres = field(default_factory=dict)
    max_wall: int | None = None  # MaxWall, seconds
    max_jobs_per_user: int | None = None  # QOS MaxJobsPerUser
    max_submit_jobs_per_user: int | None = None  # QOS MaxSubmitJobsPerUser

    def is_empty(self) -> bool:
        return self == Limits()


@dataclass(slots=True)
class Account:
    name: str
    parent: str | None = "root"  # None only for root
    fairshare: int = 1  # raw shares (sacctmgr Fairshare=); FAIRSHARE_PARENT = "parent"
    limits: Limits = field(default_factory=Limits)
    description: str = ""
    organization: str = ""
    qos: tuple[str, ...] = ()
    default_qos: str = ""
    priority: int | None = None  # association Priority=; None = inherit from the parent


@dataclass(slots=True)
class UserAssoc:
    """A user's association with one account."""

    user: str
    account: str
    fairshare: int = 1  # raw shares; FAIRSHARE_PARENT = "parent"
    limits: Limits = field(default_factory=Limits)
    qos: tuple[str, ...] = ()
    default_qos: str = ""
    priority: int | None = None  # association Priority=; None = inherit from the account
    admin_level: str = "None"  # None, Operator, Administrator
    default_account: bool = False


@dataclass(slots=True)
class Qos:
    name: str
    priority: int = 0
    limits: Limits = field(default_factory=Limits)
    preempt: tuple[str, ...] = ()  # QOS names this one may preempt
    preempt_mode: str = ""  # "" = cluster PreemptMode
    preempt_exempt_time: int | None = None
    grace_time: int = 0
    usage_factor: float = 1.0
    flags: tuple[str, ...] = ()


@dataclass(slots=True)
class AccountTree:
    """Everything sacctmgr knows for one cluster."""

    cluster: str = "tide"
    accounts: dict[str, Account] = field(default_factory=dict)
    users: list[UserAssoc] = field(default_factory=list)
    qos: dict[str, Qos] = field(default_factory=lambda: {"normal": Qos("normal")})
    # bumped by whoever edits the tree in place (`edited`), so caches built
    # from it (the scheduling core's per-job contexts) know to start again
    version: int = field(default=0, compare=False)
    _index: tuple[tuple[int, int], dict[tuple[str, str], UserAssoc]] | None = field(
        default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.accounts.setdefault("root", Account("root", parent=None))

    def edited(self) -> None:
        """Record an in-place change (a new tree needs no call)."""
        self.version += 1

    def children(self, account: str) -> list[Account]:
        return [a for a in self.accounts.values() if a.parent == account]

    def user_assocs(self, account: str) -> list[UserAssoc]:
        return [u for u in self.users if u.account == account]

    def assoc(self, user: str, account: str) -> UserAssoc | None:
        return self._assoc_index().get((user, account))

    def _assoc_index(self) -> dict[tuple[str, str], UserAssoc]:
        """(user, account) -> association; rebuilt when the user list changes
        (lookups happen per job per cycle, so a linear scan would dominate)."""
        key = (id(self.users), len(self.users))
        if self._index is None or self._index[0] != key:
            index: dict[tuple[str, str], UserAssoc] = {}
            for u in self.users:
                index.setdefault((u.user, u.account), u)
            self._index = (key, index)
        return self._index[1]

    def default_account(self, user: str) -> str | None:
        first = None
        for u in self.users:
            if u.user == user:
                if u.default_account:
                    return u.account
                first = first or u.account
        return first

    def lineage(self, account: str) -> list[str]:
        """account, its parent, ..., root."""
        out: list[str] = []
        cur: str | None = account
        while cur is not None and cur in self.accounts and cur not in out:
            out.append(cur)
            cur = self.accounts[cur].parent
        return out
