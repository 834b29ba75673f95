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


@dataclass(slots=True, frozen=True)
class _AssocIndex:
    key: tuple[int, int, int]  # the user list's identity and length, the tree's version
    pairs: dict[tuple[str, str], UserAssoc]
    by_user: dict[str, list[UserAssoc]]

    @staticmethod
    def of(key: tuple[int, int, int], users: list[UserAssoc]) -> _AssocIndex:
        pairs: dict[tuple[str, str], UserAssoc] = {}
        by_user: dict[str, list[UserAssoc]] = {}
        for u in users:
            pairs.setdefault((u.user, u.account), u)
            by_user.setdefault(u.user, []).append(u)
        return _AssocIndex(key, pairs, by_user)


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
    _index: _AssocIndex | None = field(default=None, repr=False, compare=False)

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
        return self._indexes().pairs.get((user, account))

    def user_assocs_of(self, user: str) -> list[UserAssoc]:
        """The user's associations, in the tree's order."""
        return self._indexes().by_user.get(user, [])

    def _indexes(self) -> _AssocIndex:
        """Associations by (user, account) and by user; rebuilt when the user list
        changes (lookups happen per job per cycle and per submission, so a linear
        scan over a site's thousands of associations would dominate)."""
        key = (id(self.users), len(self.users), self.version)
        if self._index is None or self._index.key != key:
            self._index = _AssocIndex.of(key, self.users)
        return self._index

    def default_account(self, user: str) -> str | None:
        mine = self.user_assocs_of(user)
        for u in mine:
            if u.default_account:
                return u.account
        return mine[0].account if mine else None

    def lineage(self, account: str) -> list[str]:
        """account, its parent, ..., root."""
        out: list[str] = []
        cur: str | None = account
        while cur is not None and cur in self.accounts and cur not in out:
            out.append(cur)
            cur = self.accounts[cur].parent
        return out
