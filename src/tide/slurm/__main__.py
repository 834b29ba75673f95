"""python -m tide.slurm squeue -u alice"""

from tide.slurm.main import entry

entry()
