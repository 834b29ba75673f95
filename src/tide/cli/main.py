"""The `tide` command: one Typer app, one sub-app per area."""

from __future__ import annotations

import typer

from tide.cli.cluster import cluster_app
from tide.cli.sim import sim_app

app = typer.Typer(
    name="tide",
    help="tide: a GPU-cluster workload manager.\n\nExample: tide sim compare --scenario demo",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(cluster_app, name="cluster")
app.add_typer(sim_app, name="sim")


if __name__ == "__main__":  # pragma: no cover
    app()
