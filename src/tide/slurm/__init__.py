"""Slurm's own commands on tide: sbatch, srun, salloc, squeue, scancel, sacct, sinfo,
scontrol, sprio, sshare, sreport (docs/slurm-commands.md).

They take Slurm's options (getopt_long style: `-j12`, `-j 12`, `--jobs=12`,
unambiguous prefixes of long options) and print Slurm's formats. Each command
starts on the standard library and tide's HTTP client only (no Typer, Rich,
pydantic or numpy), so that a shell loop of `squeue` calls costs what Python's
own start does. They are installed opt-in by `tide shims install DIR`, and also
run as `python -m tide.slurm COMMAND ...`.
"""

COMMANDS = (
    "sbatch",
    "srun",
    "salloc",
    "squeue",
    "scancel",
    "sacct",
    "sinfo",
    "scontrol",
    "sprio",
    "sshare",
    "sreport",
)
