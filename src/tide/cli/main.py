"""The `tide` command: one Typer app, one sub-app per area."""

from __future__ import annotations

import sys

import typer

app = typer.Typer(
    name="tide",
    help="tide: a GPU-cluster workload manager.\n\nExample: tide sim compare --scenario demo",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
_FIRST = sys.argv[1] if len(sys.argv) > 1 else ""

if _FIRST == "sim":
    # `tide sim ...` replays run as one process per replay (benchmarks time them whole):
    # only the twin's commands are loaded, not the client, server and cluster tools,
    # and option values are coerced without pydantic where that is certain. The twin
    # is single-threaded and never calls BLAS: numpy need not start OpenBLAS's
    # threads (about 0.1 s of CPU at import), unless the user asked for them.
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from tide.cli import fast_params
    from tide.cli.sim import sim_app

    fast_params.install()

    app.add_typer(sim_app, name="sim")
else:
    from tide.cli import jobs as jobs_cli
    from tide.cli.admin import admin_app
    from tide.cli.server import server_app
    from tide.cli.services import service_app

    # Everyday commands (`tide queue`, `tide sbatch`, ...) must start fast: when one of
    # them is what runs, the twin and cluster tools (numpy, the core, YAML schemas)
    # are not imported at all.
    if _FIRST not in jobs_cli.FAST_COMMANDS:
        from tide.cli.cluster import cluster_app
        from tide.cli.shims import shims_app
        from tide.cli.sim import sim_app

        app.add_typer(cluster_app, name="cluster")
        app.add_typer(sim_app, name="sim")
        app.add_typer(shims_app, name="shims")
    app.registered_commands += server_app.registered_commands  # `tide server`
    jobs_cli.register(app)  # sbatch, queue, cancel, show, acct, nodes, ...
    app.add_typer(admin_app, name="admin")
    app.add_typer(service_app, name="service")


if __name__ == "__main__":  # pragma: no cover
    app()
