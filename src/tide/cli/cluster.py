"""`tide cluster ...`: import Slurm files, show the cluster."""

from __future__ import annotations

import typer

cluster_app = typer.Typer(
    help="Cluster description: import Slurm files, show the tree.", no_args_is_help=True
)
