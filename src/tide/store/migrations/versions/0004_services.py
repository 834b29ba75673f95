"""services: inference services, their replicas and events

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 16:00:00

Tables for issue 14 (docs/services.md): `services` (the spec and what the
controller decided), `service_replicas` (one per replica job: port,
readiness, the scale decision it answers), `service_events` (the history).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "services",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("user", sa.String(128), nullable=False, index=True),
        sa.Column("account", sa.String(128), nullable=False, server_default=""),
        sa.Column("qos", sa.String(64), nullable=False, server_default=""),
        sa.Column("partition", sa.String(128), nullable=False, server_default=""),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("desired", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("autoscaler", sa.Text(), nullable=False, server_default=""),
        sa.Column("router_port", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("state", sa.String(16), nullable=False, server_default="Active"),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("updated", sa.Float(), nullable=False),
        sa.Column("last_scale_time", sa.Float(), nullable=True),
        sa.Column("last_scale", sa.Text(), nullable=False, server_default=""),
    )
    op.create_table(
        "service_replicas",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("service", sa.String(64), nullable=False, index=True),
        sa.Column("job_id", sa.Integer(), nullable=False, index=True),
        sa.Column("generation", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("host", sa.String(256), nullable=False, server_default=""),
        sa.Column("port", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("state", sa.String(16), nullable=False, server_default="Pending", index=True),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("decided", sa.Float(), nullable=False),
        sa.Column("started", sa.Float(), nullable=True),
        sa.Column("ready", sa.Float(), nullable=True),
        sa.Column("stopping", sa.Float(), nullable=True),
        sa.Column("ended", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False, server_default=""),
    )
    op.create_table(
        "service_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("service", sa.String(64), nullable=False, index=True),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False, server_default=""),
        sa.Column("value", sa.Float(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("service_events")
    op.drop_table("service_replicas")
    op.drop_table("services")
