"""`tide sim ...`: the digital twin."""

from __future__ import annotations

import typer

sim_app = typer.Typer(
    help="Digital twin: replay workloads under several policies.", no_args_is_help=True
)
