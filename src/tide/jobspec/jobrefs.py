"""Values that refer to jobs and tasks: --dependency and --array.

--dependency (sbatch(1)): TYPE:JOBID[+MINUTES][:JOBID...] items joined by ','
(all must hold) or '?' (any may), never both; "singleton"; bare job ids
("123,456") mean afterany. Job ids are "123", "123_4", "123_*" or
"123_[1-3,5]" (expanded to one id per task).

--array: "0-15", "1,3,5-7", "0-15:4" (step), with "%N" to run at most N at once.
"""

from __future__ import annotations

import re

from tide.hostlist import parse_index_ranges
from tide.jobspec.errors import JobSpecError
from tide.model import ArraySpec, Dependency, DependencyItem, DependencyType

MAX_ARRAY_INDEX = 4_000_000  # Slurm's ceiling for MaxArraySize - 1
MAX_ARRAY_SIZE = MAX_ARRAY_INDEX + 1  # without a site's MaxArraySize (the server passes its own)

_TYPES = {t.value: t for t in DependencyType if t is not DependencyType.SINGLETON}
_JOB_RE = re.compile(r"(\d+)(?:_(\d+|\*|\[[\d,\-]+\]))?(?:\+(\d+))?")
_DEP_ACCEPTED = (
    "use TYPE:JOBID[:JOBID...] with TYPE after, afterany, afterok, afternotok or "
    "aftercorr, or singleton; join with ',' (all) or '?' (any), e.g. --dependency=afterok:123:124"
)


def dependency(text: str) -> tuple[Dependency | None, list[str]]:
    """The parsed --dependency (None for "" or "0") and any warnings."""
    s = text.strip()
    if s in ("", "0"):
        return None, []
    parts, seps = _split_items(s)
    if len(seps) > 1:
        raise JobSpecError("--dependency", text, f"use ',' or '?', not both; {_DEP_ACCEPTED}")
    any_of = seps == {"?"}
    items: list[DependencyItem] = []
    warnings: list[str] = []
    for part in parts:
        items.extend(_dependency_item(text, part, any_of, warnings))
    return Dependency(tuple(items), any_of=any_of and len(items) > 1), warnings


def _split_items(s: str) -> tuple[list[str], set[str]]:
    """Split on ',' and '?' outside brackets (123_[1,3] is one job id)."""
    parts: list[str] = []
    seps: set[str] = set()
    cur: list[str] = []
    depth = 0
    for ch in s:
        depth += (ch == "[") - (ch == "]")
        if ch in ",?" and depth == 0:
            parts.append("".join(cur))
            seps.add(ch)
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts, seps


def _dependency_item(
    text: str, part: str, any_of: bool, warnings: list[str]
) -> list[DependencyItem]:
    word, colon, jobs = part.strip().partition(":")
    kind = word.lower()
    if kind == "singleton" and not colon:
        return [DependencyItem(DependencyType.SINGLETON)]
    if not colon and re.fullmatch(r"\d+(_\d+)?", word):  # the old form: a bare job id
        if any_of:
            raise JobSpecError(
                "--dependency", text, f"bare job ids join with ',' only; {_DEP_ACCEPTED}"
            )
        return _job_items(text, DependencyType.AFTERANY, word)
    if kind == "afterburstbuffer" and colon:
        warnings.append(
            "--dependency=afterburstbuffer: tide has no burst buffers; treated as afterany"
        )
        return _job_items(text, DependencyType.AFTERANY, jobs)
    if kind not in _TYPES or not colon:
        raise JobSpecError("--dependency", text, f"{part!r} is not a dependency; {_DEP_ACCEPTED}")
    return _job_items(text, _TYPES[kind], jobs)


def _job_items(text: str, kind: DependencyType, jobs: str) -> list[DependencyItem]:
    """JOBID[+MIN]:JOBID... -> items; consecutive ids with the same delay share one."""
    runs: list[tuple[int, list[str]]] = []
    for job in jobs.split(":"):
        m = _JOB_RE.fullmatch(job.strip())
        if not m:
            raise JobSpecError(
                "--dependency", text,
                f"{job!r} is not a job id; use 123, 123_4 or 123_* with an optional "
                "+MINUTES (e.g. after:123+10)",
            )
        job_id, task, minutes = m.groups()
        if int(job_id) == 0:
            raise JobSpecError("--dependency", text, "job id 0 does not exist; use a job's id")
        job_id = str(int(job_id))
        delay = int(minutes) * 60 if minutes else 0
        if minutes is not None and delay == 0:
            raise JobSpecError("--dependency", text, f"{job!r}: the +MINUTES delay must be > 0")
        ids = _task_ids(text, job_id, task)
        if runs and runs[-1][0] == delay:
            runs[-1][1].extend(ids)
        else:
            runs.append((delay, ids))
    return [DependencyItem(kind, tuple(ids), delay) for delay, ids in runs]


def _task_ids(text: str, job_id: str, task: str | None) -> list[str]:
    if task is None:
        return [job_id]
    if not task.startswith("["):
        return [f"{job_id}_{task}"]
    try:
        tasks = sorted(set(parse_index_ranges(task[1:-1])))
    except ValueError:
        tasks = []
    if not tasks:
        raise JobSpecError("--dependency", text, f"bad task list {task!r}; e.g. 123_[1-4,7]")
    return [f"{job_id}_{t}" for t in tasks]


_ARRAY_PART = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")
_ARRAY_ACCEPTED = (
    "use indexes, ranges and steps with an optional %LIMIT "
    "(e.g. --array=0-15, --array=1,3,5-7, --array=0-15:4%2)"
)


def array(text: str, max_size: int = MAX_ARRAY_SIZE) -> ArraySpec:
    """--array: the task ids (sorted, without repeats) and the throttle. Every
    id must be below `max_size` (MaxArraySize), checked before any is listed,
    so a short option can never build a huge list."""
    body, pct, limit = text.strip().partition("%")
    max_running = None
    if pct:
        if not limit.isdigit() or int(limit) < 1:
            raise JobSpecError(
                "--array", text, f"the %LIMIT must be a count >= 1; {_ARRAY_ACCEPTED}"
            )
        max_running = int(limit)
    ids: set[int] = set()
    for part in body.split(","):
        m = _ARRAY_PART.fullmatch(part.strip())
        if not m:
            raise JobSpecError(
                "--array", text, f"{part!r} is not an index or range; {_ARRAY_ACCEPTED}"
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        if hi < lo or step < 1:
            raise JobSpecError("--array", text, f"{part!r} is an empty range; {_ARRAY_ACCEPTED}")
        if hi >= max_size:
            raise JobSpecError(
                "--array", text,
                f"index {hi} is not below MaxArraySize={max_size}; use indexes "
                f"0-{max(0, max_size - 1)} (split a bigger sweep into several arrays)",
            )  # fmt: skip
        ids.update(range(lo, hi + 1, step))
    return ArraySpec(tuple(sorted(ids)), max_running)
