"""recovery: checkpoint steps, failure causes, lost GPU-seconds per attempt

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 17:25:00

Columns for issue 5 (docs/recovery.md). 0002 already gives jobs
`last_checkpoint` (the time of the last checkpoint) and `lost_gpu_seconds`
(over all attempts); this adds the step numbers the job reported, why its
first failure happened, and per attempt the checkpoint it had and the
GPU-seconds it lost (its GPUs x the time since that checkpoint).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_JOBS: list[sa.Column[Any]] = [
    sa.Column("last_step_time", sa.Float(), nullable=True),
    sa.Column("last_checkpoint_step", sa.Integer(), nullable=True),
    sa.Column("fail_cause", sa.Text(), nullable=False, server_default=""),
]
_ATTEMPTS: list[sa.Column[Any]] = [
    sa.Column("last_checkpoint_step", sa.Integer(), nullable=True),
    sa.Column("last_checkpoint_time", sa.Float(), nullable=True),
    sa.Column("lost_gpu_seconds", sa.Float(), nullable=False, server_default="0"),
    sa.Column("cause", sa.Text(), nullable=False, server_default=""),
]


def upgrade() -> None:
    # batch mode: SQLite cannot ALTER a table much; batch recreates it there
    with op.batch_alter_table("jobs") as b:
        for c in _JOBS:
            b.add_column(c)
    with op.batch_alter_table("job_attempts") as b:
        for c in _ATTEMPTS:
            b.add_column(c)


def downgrade() -> None:
    with op.batch_alter_table("job_attempts") as b:
        for c in reversed(_ATTEMPTS):
            b.drop_column(c.name)
    with op.batch_alter_table("jobs") as b:
        for c in reversed(_JOBS):
            b.drop_column(c.name)
