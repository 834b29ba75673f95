"""`tide cluster ...`: import Slurm files, show the cluster, validate a description."""

from __future__ import annotations

from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from tide.config.errors import ConfigError
from tide.config.loaded import LoadedCluster
from tide.config.loader import resolve_cluster
from tide.config.values import format_time
from tide.config.yaml_save import save_yaml
from tide.hostlist import compress
from tide.model import Cluster, Node, Switch

cluster_app = typer.Typer(
    help="Cluster description: import Slurm files, show the tree, validate.\n\n"
    "Example: tide cluster show examples/slurm",
    no_args_is_help=True,
)
out = Console(emoji=False)  # emoji codes would turn H:M:S into HⓂS
err = Console(stderr=True, emoji=False, soft_wrap=True)

SOURCE_HELP = ("a tide YAML file, a slurm.conf, a folder holding slurm.conf, "
               "or a bundled cluster name (demo, seed004)")


def _load(source: str, quiet: bool = False) -> LoadedCluster:
    try:
        loaded = resolve_cluster(source)
    except ConfigError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    if not quiet:
        for w in loaded.warnings:
            err.print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False, soft_wrap=True)
    return loaded


@cluster_app.command("import")
def import_cmd(
    source: str = typer.Argument(..., help=SOURCE_HELP),
    output: Path | None = typer.Option(None, "-o", "--output", help="write the YAML here "
                                       "(default: print it)"),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="do not print warnings"),
) -> None:
    """Convert Slurm's files (slurm.conf, gres.conf, topology.conf, sacctmgr dump) to tide YAML.

    Example: tide cluster import /etc/slurm -o cluster.yaml
    """
    loaded = _load(source, quiet)
    text = save_yaml(loaded)
    if output is None:
        out.print(text, end="", markup=False, highlight=False, soft_wrap=True)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as e:
        where = escape(str(output))
        err.print(f"[red]error:[/red] cannot write {where}: {e.strerror or e}", highlight=False)
        raise typer.Exit(1) from None
    c = loaded.cluster
    err.print(f"wrote {output}: {len(c.nodes)} nodes, {c.total_gpus} GPUs, "
              f"{len(c.partitions)} partitions, {len(loaded.warnings)} warning(s)",
              highlight=False)


@cluster_app.command("show")
def show_cmd(
    source: str = typer.Argument(..., help=SOURCE_HELP),
    nodes: bool = typer.Option(False, "--nodes", help="list every node, not node ranges"),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="do not print warnings"),
) -> None:
    """Show nodes per switch (GPU counts at every level) and the partitions.

    Example: tide cluster show demo
    """
    loaded = _load(source, quiet)
    out.print(topology_tree(loaded.cluster, each_node=nodes))
    out.print(partition_table(loaded.cluster))
    a = loaded.accounts
    out.print(f"accounts: {len(a.accounts)}  user associations: {len(a.users)}  "
              f"QOS: {', '.join(a.qos)}", highlight=False, soft_wrap=True)


@cluster_app.command("validate")
def validate_cmd(
    source: str = typer.Argument(..., help=SOURCE_HELP),
    strict: bool = typer.Option(False, "--strict", help="exit 1 when there are warnings"),
) -> None:
    """Read a cluster description and report errors and warnings.

    Example: tide cluster validate examples/slurm/slurm.conf --strict
    """
    loaded = _load(source)
    c = loaded.cluster
    verdict = "OK" if not loaded.warnings else f"OK with {len(loaded.warnings)} warning(s)"
    out.print(f"{verdict}: {c.name}: {len(c.nodes)} nodes, {c.total_gpus} GPUs, "
              f"{len(c.partitions)} partitions, {len(c.topology.switches)} switches, "
              f"{len(c.topology.blocks)} blocks, {len(loaded.accounts.accounts)} accounts, "
              f"{len(loaded.accounts.users)} user associations, {len(loaded.accounts.qos)} QOS",
              highlight=False, soft_wrap=True)
    if strict and loaded.warnings:
        raise typer.Exit(1)


# --- rendering ---------------------------------------------------------------


def _gpus(nodes: list[Node]) -> int:
    return sum(n.gpu_count for n in nodes)


def _label(name: str, nodes: list[Node]) -> str:
    return f"[bold]{name}[/bold]  {len(nodes)} nodes, {_gpus(nodes)} GPUs"


def topology_tree(c: Cluster, each_node: bool = False) -> Tree:
    kinds = sorted({n.gpu_type() for n in c.nodes if n.gpus} - {""})
    root = Tree(f"[bold]{c.name}[/bold]  {len(c.nodes)} nodes, {c.total_gpus} GPUs"
                f"{' (' + ', '.join(kinds) + ')' if kinds else ''}, "
                f"topology {c.topology.kind.value}")
    by_name = {n.name: n for n in c.nodes}
    placed: set[str] = set()
    if c.topology.switches:
        switches = {s.name: s for s in c.topology.switches}
        children = {ch for s in c.topology.switches for ch in s.switches}
        for s in c.topology.switches:
            if s.name not in children:
                _switch(root, s, switches, by_name, placed, each_node)
    for b in c.topology.blocks:
        members = [by_name[n] for n in b.nodes if n in by_name]
        placed.update(b.nodes)
        _node_rows(root.add(_label(f"block {b.name}", members)), members, each_node)
    rest = [n for n in c.nodes if n.name not in placed]
    if rest:
        branch = root.add(_label("(no switch)", rest)) if placed else root
        _node_rows(branch, rest, each_node)
    return root


def _under(s: Switch, switches: dict[str, Switch], by_name: dict[str, Node]) -> list[Node]:
    nodes = [by_name[n] for n in s.nodes if n in by_name]
    for child in s.switches:
        nodes.extend(_under(switches[child], switches, by_name))
    return nodes


def _switch(parent: Tree, s: Switch, switches: dict[str, Switch], by_name: dict[str, Node],
            placed: set[str], each_node: bool) -> None:
    branch = parent.add(_label(s.name, _under(s, switches, by_name)))
    for child in s.switches:
        _switch(branch, switches[child], switches, by_name, placed, each_node)
    members = [by_name[n] for n in s.nodes if n in by_name]
    placed.update(n.name for n in members)
    _node_rows(branch, members, each_node)


def _node_rows(branch: Tree, nodes: list[Node], each_node: bool) -> None:
    if each_node:
        for n in nodes:
            state = "" if n.state.value == "IDLE" else f"  [red]{n.state.value}[/red]"
            branch.add(f"{n.name}  {n.gpu_count} x {n.gpu_type() or 'gpu'}{state}")
        return
    groups: list[list[Node]] = []
    for n in nodes:
        key = (n.gpu_count, n.gpu_type(), n.state)
        if groups and (groups[-1][0].gpu_count, groups[-1][0].gpu_type(),
                       groups[-1][0].state) == key:
            groups[-1].append(n)
        else:
            groups.append([n])
    for g in groups:
        first = g[0]
        state = "" if first.state.value == "IDLE" else f"  [red]{first.state.value}[/red]"
        per = f"{first.gpu_count} x {first.gpu_type() or 'gpu'}" if first.gpus else "no GPUs"
        branch.add(f"{compress(n.name for n in g)}  {len(g)} x ({per}) = {_gpus(g)} GPUs{state}")


def partition_table(c: Cluster) -> Table:
    t = Table(title="partitions (* = default)", title_justify="left", box=box.SIMPLE_HEAD,
              padding=(0, 1))
    t.add_column("name", no_wrap=True)
    t.add_column("nodes", overflow="fold", min_width=12)
    for col in ("N/GPUs", "MaxTime", "DefTime", "MaxN", "tier", "state"):
        t.add_column(col, no_wrap=True)
    by_name = {n.name: n for n in c.nodes}
    default = c.default_partition()
    for p in c.partitions:
        members = [by_name[n] for n in p.nodes if n in by_name]
        name = f"{p.name}*" if default is p else p.name
        t.add_row(name, compress(p.nodes) or "-", f"{len(members)}/{_gpus(members)}",
                  format_time(p.max_time),
                  "-" if p.default_time is None else format_time(p.default_time),
                  "-" if p.max_nodes is None else str(p.max_nodes), str(p.priority_tier),
                  p.state)
    return t
