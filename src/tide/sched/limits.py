"""Limits: partition rules and association/QOS limits, with Slurm's reasons.

Counters start from the running jobs and grow as the cycle starts jobs, so
a limit holds within one cycle as well as across cycles. Association Grp*
limits apply to the account and every ancestor (Slurm's hierarchy); user
limits (MaxJobs, MaxTRESPerUser...) to the user's own association.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tide.model import AccountTree, Job, Limits, Partition
from tide.sched.quota import QuotaLedger
from tide.sched.shape import Shape
from tide.sched.types import Reason, Running, RunningDelta

GPU = "gres/gpu"


def partition_reason(job: Job, part: Partition | None, shape: Shape, n_nodes: int) -> Reason | None:
    """Why the partition can never (or not now) take this job, else None."""
    if part is None:
        return Reason.BAD_CONSTRAINTS
    if part.state in ("DOWN", "DRAIN"):
        return Reason.PARTITION_DOWN
    if part.state == "INACTIVE":
        return Reason.PARTITION_INACTIVE
    if part.max_time is not None and shape.time_limit > part.max_time:
        return Reason.PARTITION_TIME_LIMIT
    if part.max_nodes is not None and shape.nodes_min > part.max_nodes:
        return Reason.PARTITION_NODE_LIMIT
    if shape.nodes_min > n_nodes:
        return Reason.PARTITION_NODE_LIMIT
    if part.refuses_account(job.account):
        return Reason.ACCOUNT_NOT_ALLOWED
    if part.refuses_qos(job.qos):
        return Reason.QOS_NOT_ALLOWED
    return None


def limit_key(job: Job) -> tuple[str, str, str, int | None]:
    """What the counters key a running job on."""
    return (job.account, job.user, job.qos, job.array_job_id)


class RunningGroups:
    """The running jobs grouped by `limit_key`, kept from one cycle to the next:
    each cycle only the jobs that started or ended since are counted in or out.

    Jobs are told apart by the identity of their `Running` (the groups hold
    every one they counted, so no identity is reused while kept): a driver that
    changes a running job gives a new `Running` for it (the twin when its limit
    moves, the controller when its row changes)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Running, tuple, int]] = {}
        self.groups: dict[tuple, list[int]] = {}  # key -> [jobs, GPUs]
        self._gen: int | None = None  # the driver's snapshot they follow (RunningDelta)

    def update(
        self, running: list[Running], delta: RunningDelta | None = None
    ) -> dict[tuple, list[int]]:
        """The groups of `running`; with the driver's delta that follows the
        last update, only the jobs it names are counted in or out."""
        if delta is not None and self._gen is not None and delta.since == self._gen:
            for r in delta.started:  # first: a job started and gone since is no-op
                if id(r) not in self._seen:
                    self._add(id(r), r)
            for r in delta.gone:
                if id(r) in self._seen:
                    self._remove(id(r))
            if len(self._seen) == len(running):
                self._gen = delta.gen
                return self.groups
        self._gen = None
        now = dict(zip(map(id, running), running, strict=True))
        if len(now) != len(running):  # one Running listed twice: counted twice, not kept
            return _grouped(running)
        seen, groups = self._seen, self.groups
        self._gen = delta.gen if delta is not None else None
        if now.keys() == seen.keys():
            return groups
        for gone in seen.keys() - now.keys():
            self._remove(gone)
        for new in now.keys() - seen.keys():
            self._add(new, now[new])
        return groups

    def _add(self, ident: int, r: Running) -> None:
        key, gpus = limit_key(r.job), r.alloc.gpu_count
        self._seen[ident] = (r, key, gpus)
        group = self.groups.setdefault(key, [0, 0])
        group[0] += 1
        group[1] += gpus

    def _remove(self, ident: int) -> None:
        _, key, gpus = self._seen.pop(ident)
        group = self.groups[key]
        group[0] -= 1
        group[1] -= gpus
        if not group[0]:
            del self.groups[key]


def _grouped(running: Iterable[Running]) -> dict[tuple, list[int]]:
    groups: dict[tuple, list[int]] = {}
    for r in running:
        group = groups.setdefault(limit_key(r.job), [0, 0])
        group[0] += 1
        group[1] += r.alloc.gpu_count
    return groups


@dataclass(slots=True)
class Counters:
    """Running totals the limits compare against."""

    acct_gpus: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    acct_jobs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    user_jobs: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    user_gpus: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    qos_gpus: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    qos_jobs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    qos_user_gpus: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    qos_user_jobs: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    array_running: dict[int, int] = field(default_factory=lambda: defaultdict(int))


def unlimited(accounts: AccountTree) -> bool:
    """Whether no association or QOS sets a limit the running counters are
    compared with (`LimitChecker.reason` then only checks array task limits)."""
    users = (u.limits for u in accounts.users)
    if any(lim.max_jobs is not None or GPU in lim.grp_tres for lim in users):
        return False
    for a in accounts.accounts.values():
        lim = a.limits
        if GPU in lim.grp_tres or lim.grp_jobs is not None or lim.max_jobs is not None:
            return False
    for q in accounts.qos.values():
        lim = q.limits
        if GPU in lim.grp_tres or lim.grp_jobs is not None or GPU in lim.max_tres_per_user:
            return False
        if lim.max_jobs_per_user is not None:
            return False
    return True


def no_static_limits(accounts: AccountTree) -> bool:
    """Whether no association or QOS sets a MaxWall or a GPU MaxTRES per job
    (`LimitChecker.static_reason` is then None for every job)."""
    every = [
        *(u.limits for u in accounts.users),
        *(a.limits for a in accounts.accounts.values()),
        *(q.limits for q in accounts.qos.values()),
    ]
    return all(lim.max_wall is None and GPU not in lim.max_tres_per_job for lim in every)


class LimitChecker:
    """The running counters and the limits they are compared with. With
    `unlimited` (no such limit is set: tide.sched.limits.unlimited) the
    running jobs' groups are counted only if something reads the counters;
    with `no_static` (tide.sched.limits.no_static_limits) no static reason is
    looked for."""

    def __init__(
        self,
        accounts: AccountTree,
        quota: QuotaLedger | None = None,
        unlimited: bool = False,
        no_static: bool = False,
    ) -> None:
        self.accounts = accounts
        self.no_static = no_static
        self._counters = Counters()
        self._lineage: dict[str, list[str]] = {}
        self.quota = quota  # Kueue-style quotas (tide.sched.quota), checked last
        self.unlimited = unlimited
        self._deferred: list[tuple[tuple, int, int]] = []  # groups not counted yet

    @property
    def count(self) -> Counters:
        """The counters, with the running groups not yet counted in (sums: the
        order they are added in does not matter)."""
        if self._deferred:
            deferred, self._deferred = self._deferred, []
            for (account, user, qos, array), jobs, gpus in deferred:
                self._count(account, user, qos, array, jobs, gpus)
        return self._counters

    def lineage(self, account: str) -> list[str]:
        if account not in self._lineage:
            self._lineage[account] = self.accounts.lineage(account)
        return self._lineage[account]

    def add(self, job: Job, gpus: int, sign: int = 1) -> None:
        self._count(job.account, job.user, job.qos, job.array_job_id, sign, sign * gpus)
        if self.quota is not None:
            self.quota.add(job, gpus, sign)

    def add_running(self, running: Iterable[Running]) -> None:
        """`add` for every running job; the same totals, counted per group of jobs
        that share what the counters key on (a cycle counts hundreds of jobs)."""
        if self.quota is not None:  # the ledger counts job by job
            for r in running:
                self.add(r.job, r.alloc.gpu_count)
            return
        self.add_groups(_grouped(running))

    def add_groups(self, groups: Mapping[tuple, tuple[int, int] | list[int]]) -> None:
        """Running jobs already grouped: (account, user, QOS, array job id) ->
        (jobs, GPUs), as `running_groups` keeps them (no quota ledger: it counts
        job by job)."""
        assert self.quota is None, "a quota ledger counts running jobs one by one"
        if self.unlimited:  # most cycles then read no counter: count on first read
            self._deferred += [(key, jobs, gpus) for key, (jobs, gpus) in groups.items()]
            return
        for (account, user, qos, array), (jobs, gpus) in groups.items():
            self._count(account, user, qos, array, jobs, gpus)

    def _count(
        self, account: str, user: str, qos: str, array: int | None, jobs: int, gpus: int
    ) -> None:
        c = self._counters  # (not `count`: a start is added without counting the rest)
        for acct in self.lineage(account):
            c.acct_gpus[acct] += gpus
            c.acct_jobs[acct] += jobs
        key = (account, user)
        c.user_jobs[key] += jobs
        c.user_gpus[key] += gpus
        c.qos_gpus[qos] += gpus
        c.qos_jobs[qos] += jobs
        c.qos_user_gpus[(qos, user)] += gpus
        c.qos_user_jobs[(qos, user)] += jobs
        if array is not None:
            c.array_running[array] += jobs

    def reason(self, job: Job, gpus: int) -> Reason | None:
        """The first limit this job would break by starting now, else None."""
        if self.unlimited:
            reason = self.array_reason(job)
        else:
            reason = self._assoc(job, gpus) or self._qos(job, gpus) or self.array_reason(job)
        if reason is None and self.quota is not None:
            reason = self.quota.check(job, gpus)
        return reason

    def static_reason(self, job: Job, shape: Shape) -> Reason | None:
        """Limits no amount of waiting can satisfy (MaxWall, per-job TRES)."""
        if self.no_static:
            return None
        assoc = self.accounts.assoc(job.user, job.account)
        limits = [assoc.limits] if assoc else []
        limits += [self.accounts.accounts[a].limits for a in self.lineage(job.account)]
        for lim in limits:
            if lim.max_wall is not None and shape.time_limit > lim.max_wall:
                return Reason.ASSOC_MAX_WALL
            if _over(lim.max_tres_per_job, shape.gpus, 0):
                return Reason.ASSOC_MAX_GRES_PER_JOB
        qos = self.accounts.qos.get(job.qos)
        if qos is not None:
            if qos.limits.max_wall is not None and shape.time_limit > qos.limits.max_wall:
                return Reason.QOS_MAX_WALL
            if _over(qos.limits.max_tres_per_job, shape.gpus, 0):
                return Reason.QOS_MAX_GRES_PER_JOB
        return None

    def _assoc(self, job: Job, gpus: int) -> Reason | None:
        c = self.count
        assoc = self.accounts.assoc(job.user, job.account)
        if assoc is not None:
            lim = assoc.limits
            if lim.max_jobs is not None and c.user_jobs[(job.account, job.user)] + 1 > lim.max_jobs:
                return Reason.ASSOC_MAX_JOBS_LIMIT
            if _over(lim.grp_tres, gpus, c.user_gpus[(job.account, job.user)]):
                return Reason.ASSOC_GRP_GRES
        for acct in self.lineage(job.account):
            lim = self.accounts.accounts[acct].limits
            if _over(lim.grp_tres, gpus, c.acct_gpus[acct]):
                return Reason.ASSOC_GRP_GRES
            if lim.grp_jobs is not None and c.acct_jobs[acct] + 1 > lim.grp_jobs:
                return Reason.ASSOC_GRP_JOBS_LIMIT
            if lim.max_jobs is not None and c.user_jobs[(job.account, job.user)] + 1 > lim.max_jobs:
                return Reason.ASSOC_MAX_JOBS_LIMIT
        return None

    def _qos(self, job: Job, gpus: int) -> Reason | None:
        qos = self.accounts.qos.get(job.qos)
        if qos is None:
            return None
        c, lim = self.count, qos.limits
        if _over(lim.grp_tres, gpus, c.qos_gpus[job.qos]):
            return Reason.QOS_GRP_GRES
        if lim.grp_jobs is not None and c.qos_jobs[job.qos] + 1 > lim.grp_jobs:
            return Reason.QOS_GRP_JOBS_LIMIT
        if _over(lim.max_tres_per_user, gpus, c.qos_user_gpus[(job.qos, job.user)]):
            return Reason.QOS_MAX_GRES_PER_USER
        per_user = lim.max_jobs_per_user
        if per_user is not None and c.qos_user_jobs[(job.qos, job.user)] + 1 > per_user:
            return Reason.QOS_MAX_JOBS_PER_USER
        return None

    def array_reason(self, job: Job) -> Reason | None:
        """JobArrayTaskLimit when the array already runs its %N tasks (Slurm checks
        it for every pending task, whatever its place in the queue)."""
        spec = job.request.array
        if job.array_job_id is None or spec is None or spec.max_running is None:
            return None
        if self.count.array_running[job.array_job_id] + 1 > spec.max_running:
            return Reason.JOB_ARRAY_TASK_LIMIT
        return None


def _over(tres: dict[str, int], gpus: int, used: int) -> bool:
    limit = tres.get(GPU)
    return limit is not None and limit >= 0 and used + gpus > limit


def gpu_limit(limits: Limits) -> int | None:
    return limits.grp_tres.get(GPU)
