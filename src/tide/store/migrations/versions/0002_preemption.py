"""preemption: victim columns on jobs, QOS PreemptExemptTime

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 17:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# (name, type, server default): existing rows get the default, new ones the model's
_JOB_COLUMNS = (
    ("last_checkpoint", sa.Float(), None),
    ("preempted_by", sa.Integer(), None),
    ("preempt_reason", sa.Text(), ""),
    ("preempt_time", sa.Float(), None),
    ("preempt_mode", sa.String(length=16), ""),
    ("preempt_phase", sa.String(length=16), ""),
    ("preempt_kill_at", sa.Float(), None),
    ("preempt_lost", sa.Float(), "0"),
    ("lost_gpu_seconds", sa.Float(), "0"),
    ("preemptions", sa.Integer(), "0"),
    ("suspended_seconds", sa.Float(), "0"),
    ("preempt_eligible", sa.Float(), None),
)


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        for name, kind, default in _JOB_COLUMNS:
            batch_op.add_column(
                sa.Column(name, kind, nullable=default is None, server_default=default)
            )
        batch_op.create_index(batch_op.f("ix_jobs_preempt_phase"), ["preempt_phase"])
    with op.batch_alter_table("qos", schema=None) as batch_op:
        batch_op.add_column(sa.Column("preempt_exempt_time", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("qos", schema=None) as batch_op:
        batch_op.drop_column("preempt_exempt_time")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_jobs_preempt_phase"))
        for name, _, _ in reversed(_JOB_COLUMNS):
            batch_op.drop_column(name)
