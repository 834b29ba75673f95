"""`tide shims install DIR`: Slurm's command names (sbatch, squeue, ...) as small
scripts in DIR that run tide's versions (tide.slurm) with this Python.

Opt-in: nothing is installed unless asked, and a real Slurm found on PATH is
never shadowed unless --force says so (the shims would win wherever DIR comes
first in PATH).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from tide.client.cli_support import fail
from tide.slurm import COMMANDS

MARK = "# tide shim"
shims_app = typer.Typer(
    help="Slurm's command names (sbatch, squeue, ...) running tide's versions.",
    no_args_is_help=True,
)


def shim_text(command: str, python: str = sys.executable) -> str:
    return (
        f"#!{python}\n{MARK}: `{command}` runs tide's {command} (docs/slurm-commands.md)\n"
        "import sys\n\nfrom tide.slurm.main import main\n\n"
        f"sys.exit(main({command!r}, sys.argv[1:]))\n"
    )


def is_shim(path: Path) -> bool:
    try:
        return MARK in path.read_text(errors="replace")[:300]
    except OSError:
        return False


def real_slurm(folder: Path, names: tuple[str, ...] = COMMANDS) -> dict[str, str]:
    """Slurm commands on PATH that are not tide shims (DIR itself left out)."""
    here = folder.resolve()
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != here
    )
    found = {}
    for name in names:
        where = shutil.which(name, path=path)
        if where and not is_shim(Path(where)):
            found[name] = where
    return found


@shims_app.command("install")
def install(
    folder: Annotated[Path, typer.Argument(help="where to put them, e.g. ~/.local/bin")],
    force: Annotated[
        bool, typer.Option("--force", help="install even where a real Slurm is on PATH")
    ] = False,
    only: Annotated[str, typer.Option(help="comma-separated subset, e.g. sbatch,squeue")] = "",
) -> None:
    """Install sbatch, srun, salloc, squeue, scancel, sacct, sinfo, scontrol, sprio,
    sshare and sreport into FOLDER, each running tide's version with this Python.

    Example: tide shims install ~/.local/bin && squeue --me
    """
    names = tuple(n for n in (only.split(",") if only else COMMANDS) if n)
    unknown = [n for n in names if n not in COMMANDS]
    if unknown:
        fail(f"--only: {', '.join(unknown)} is not one of {', '.join(COMMANDS)}")
    real = real_slurm(folder, names)
    if real and not force:
        where = ", ".join(sorted({str(Path(p).parent) for p in real.values()}))
        fail(
            f"a real Slurm is on PATH ({len(real)} of these commands, in {where}): "
            "shims would shadow it wherever FOLDER comes first in PATH",
            "use --force to install anyway, or run tide's without shims: "
            "python -m tide.slurm squeue ...",
        )
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = folder / name
        if target.exists() and not is_shim(target) and not force:
            fail(f"{target} exists and is not a tide shim", "remove it or use --force")
        target.write_text(shim_text(name))
        target.chmod(0o755)
    print(f"installed {len(names)} commands in {folder}: {' '.join(names)}")
    if str(folder.resolve()) not in map(os.path.realpath, os.environ.get("PATH", "").split(":")):
        print(f"add it to PATH: export PATH={folder}:$PATH")


@shims_app.command("uninstall")
def uninstall(folder: Annotated[Path, typer.Argument(help="where they were installed")]) -> None:
    """Remove the shims from FOLDER (files that are not tide shims are left alone).

    Example: tide shims uninstall ~/.local/bin
    """
    gone = [n for n in COMMANDS if is_shim(folder / n)]
    for name in gone:
        (folder / name).unlink()
    print(f"removed {len(gone)} shims from {folder}")
