"""progress: training progress per job (tokens, step times, FLOPs per token)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:00:00

One row per job that reported steps with tokens (docs/dashboard.md,
tide.efficiency): the folded Progress as JSON, with the job's user and
account copied so per-account figures need no join.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_progress",
        sa.Column(
            "job_id",
            sa.Integer(),
            sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("user", sa.String(128), nullable=False),
        sa.Column("account", sa.String(128), nullable=False),
        sa.Column("updated", sa.Float(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
    )
    op.create_index("ix_job_progress_user", "job_progress", ["user"])
    op.create_index("ix_job_progress_account", "job_progress", ["account"])
    op.create_index("ix_job_progress_updated", "job_progress", ["updated"])


def downgrade() -> None:
    op.drop_table("job_progress")
