"""tide: a GPU-cluster workload manager."""

__version__ = "0.1.0"
