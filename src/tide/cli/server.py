"""`tide server`: run the controller (store, scheduler, executor, REST API)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tide.client.cli_support import fail
from tide.server.settings import DEFAULT_PORT, Settings

if TYPE_CHECKING:
    from tide.server.cluster_source import ClusterSource

server_app = typer.Typer(add_completion=False)
_RAY_AS_ROOT = (
    "--executor ray cannot run jobs as their users: Ray has no authentication, so any "
    "job could call the node agents; run the Ray executor as a dedicated unprivileged "
    "user, or as root with --single-user (docs/security.md)"
)


@server_app.command(
    "server",
    help="Run the controller: REST API, scheduling loop and executor.\n\n"
    "Example: tide server --data-dir ~/.tide --cluster cluster.yaml --port 6817\n\n"
    "The policy the twin runs: tide server --cluster cluster.yaml --policy tide\n\n"
    "On a Ray cluster (docs/ray.md): tide server --executor ray --ray-address 10.0.0.1:6379",
)
def server(
    data_dir: Annotated[
        Path, typer.Option(help="where the store, tokens and job state live")
    ] = Path.home() / ".tide",
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = DEFAULT_PORT,
    cluster: Annotated[Path | None, typer.Option(help="tide cluster file (YAML)")] = None,
    slurm_conf: Annotated[Path | None, typer.Option(help="a slurm.conf to import")] = None,
    demo: Annotated[bool, typer.Option(help="use the bundled demo cluster")] = False,
    db: Annotated[
        str, typer.Option(help="database URL (default: SQLite in DATA_DIR; or TIDE_DB)")
    ] = "",
    executor: Annotated[
        str,
        typer.Option(
            help="'local' runs jobs here; 'ray' on the nodes of a Ray cluster; 'none' only "
            "schedules"
        ),
    ] = "local",
    ray_address: Annotated[
        str,
        typer.Option(help="--executor ray: the Ray cluster to join, HOST:6379 (default: auto)"),
    ] = "",
    bf_interval: Annotated[int | None, typer.Option(help="seconds between backfill passes")] = None,
    policy: Annotated[
        str,
        typer.Option(
            help="scheduling policy, as in tide sim run: slurm, tide, kueue, volcano or "
            "k8s-default (default: the cluster's scheduler.policy, else slurm)"
        ),
    ] = "",
    enforce_associations: Annotated[
        bool, typer.Option(help="reject jobs of users without an association (Slurm's enforce)")
    ] = False,
    price: Annotated[
        list[str] | None, typer.Option(help="price per GPU-hour, TYPE=PRICE (repeatable)")
    ] = None,
    kill_wait: Annotated[
        float, typer.Option(help="seconds from SIGTERM to SIGKILL at a limit or cancel")
    ] = 30.0,
    standby: Annotated[
        bool,
        typer.Option(
            help="wait for the active controller of this store to die, then take over "
            "(PostgreSQL; like slurmctld's backup controller)"
        ),
    ] = False,
    single_user: Annotated[
        bool,
        typer.Option(
            help="run every job as this server's OS user, even as root (implied when not "
            "root); only this user's jobs are accepted unless --any-user"
        ),
    ] = False,
    any_user: Annotated[
        bool,
        typer.Option(
            help="single-user mode: accept every tide user's jobs, all run as this server's "
            "OS user (one trust domain: a personal machine or tests, not a shared cluster)"
        ),
    ] = False,
    spool_dir: Annotated[
        Path | None,
        typer.Option(
            help="job directories (SlurmdSpoolDir); default DATA_DIR/exec, or as root "
            "/var/spool/tide/NAME-DIGEST, outside the private DATA_DIR"
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
    debug: Annotated[
        bool, typer.Option("--debug", help="show tracebacks of startup errors (also TIDE_DEBUG=1)")
    ] = False,
) -> None:
    from tide.server.main import serve

    if sum(x is not None and x is not False for x in (cluster, slurm_conf, demo or None)) > 1:
        raise typer.BadParameter("give at most one of --cluster, --slurm-conf, --demo")
    if executor not in ("local", "ray", "none"):
        raise typer.BadParameter(f"--executor {executor!r}: use local, ray or none")
    from tide.sched.policies import POLICY_NAMES

    if policy and policy not in POLICY_NAMES:
        raise typer.BadParameter(f"--policy {policy!r}: use one of {', '.join(POLICY_NAMES)}")
    if ray_address and executor != "ray":
        raise typer.BadParameter("--ray-address needs --executor ray")
    if executor == "ray" and not single_user:
        from tide.exec.identity import is_root

        if is_root():
            raise typer.BadParameter(_RAY_AS_ROOT)
    if executor == "ray":
        from tide.exec.ray import require_ray
        from tide.exec.ray.executor import connect

        try:  # here, so a missing ray or an unreachable cluster is one line, not a traceback
            require_ray()
            connect(ray_address)
        except RuntimeError as e:
            raise typer.BadParameter(f"--executor ray: {e}") from None
    prices: dict[str, float] = {}
    for item in price or []:
        gpu_type, sep, value = item.partition("=")
        try:
            prices[gpu_type] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise typer.BadParameter(f"--price {item!r}: use TYPE=PRICE, e.g. a100=2.5")
    settings = Settings(
        data_dir=data_dir.expanduser(),
        host=host,
        port=port,
        db_url=db,
        cluster_file=cluster,
        slurm_conf=slurm_conf,
        demo=demo,
        executor=executor,
        ray_address=ray_address,
        bf_interval=bf_interval,
        policy=policy,
        enforce_associations=enforce_associations,
        prices=prices,
        kill_wait=kill_wait,
        single_user=single_user,
        any_user=any_user,
        spool_dir=spool_dir.expanduser() if spool_dir is not None else None,
    )
    source = preflight(settings, debug or os.environ.get("TIDE_DEBUG", "") not in ("", "0"))
    from tide.server.store_lock import StoreBusy

    try:
        serve(settings, log_level, standby=standby, source=source)
    except StoreBusy as e:
        typer.echo(f"tide server: error: {e}", err=True)
        raise typer.Exit(1) from None


def preflight(settings: Settings, debug: bool) -> ClusterSource:
    """Read the cluster files and reach the database before anything starts, so that a
    bad slurm.conf, a missing --cluster file or a wrong --db is one line naming the
    file:line and the fix (tracebacks only with --debug), not a failed server startup."""
    from tide.config.errors import ConfigError
    from tide.server.cluster_source import load
    from tide.store.db import StoreError, database_error_types, make_engine

    errors: tuple[type[BaseException], ...] = (
        ConfigError, StoreError, *database_error_types(), OSError, ValueError, RuntimeError
    )
    what = "the cluster"
    try:
        source = load(settings)
        what = f"--data-dir {settings.data_dir}"
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # SQLite's home
        what = f"--db {settings.database()}"
        engine = make_engine(settings.database(), schema=settings.db_schema)
        try:
            engine.connect().close()
        finally:
            engine.dispose()
        what = "jobs run as their users"
        check_job_users(settings)
    except errors as e:
        if debug:
            raise
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if isinstance(e, ConfigError):
            fail(text, code=2)
        fail(f"{what}: {text}", "check the value, or run with --debug for the traceback", code=2)
    return source


def check_job_users(settings: Settings) -> None:
    """As root (per-user mode) jobs need a spool and a Python every user can reach,
    and an executor that can run them as their users: RuntimeError says the fix."""
    from tide.exec import identity

    per_user = identity.is_root() and not settings.single_user
    if not per_user:
        return
    if settings.executor == "ray":
        raise RuntimeError(_RAY_AS_ROOT)
    if settings.executor != "local":
        return
    import sys

    from tide.server.controller import job_spool

    job_spool(settings, per_user)
    tide_dir = str(Path(identity.__file__).resolve().parents[2])
    try:
        identity.python_for_users(sys.executable, tide_dir)
    except identity.IdentityError as e:
        raise RuntimeError(str(e)) from None
