"""share history: fair-share state per association over time

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 10:00:00

Samples of `sshare -l` (decayed usage, effective usage, normalized shares,
level fair-share and the Fair Tree factor) for every association, taken every
PriorityCalcPeriod and kept hourly when old (tide.store.share_history), so the
dashboard can draw fair-share over time.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "share_samples",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("every", sa.Integer(), nullable=False),
        sa.Column("account", sa.String(128), nullable=False),
        sa.Column("user", sa.String(128), nullable=False),
        sa.Column("raw_usage", sa.Float(), nullable=False),
        sa.Column("eff_usage", sa.Float(), nullable=False),
        sa.Column("norm_shares", sa.Float(), nullable=False),
        sa.Column("level_fs", sa.Float(), nullable=True),
        sa.Column("fairshare", sa.Float(), nullable=True),
    )
    op.create_index("ix_share_samples_every_time", "share_samples", ["every", "time"])


def downgrade() -> None:
    op.drop_table("share_samples")
