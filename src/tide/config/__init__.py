"""Cluster descriptions: Slurm's own files or tide's YAML -> tide.model objects.

    from tide.config import load_cluster
    loaded = load_cluster("/etc/slurm")      # or a slurm.conf, or cluster.yaml
    loaded.cluster, loaded.config, loaded.accounts, loaded.warnings

See docs/cluster.md.
"""

from tide.config.errors import ConfigError
from tide.config.loaded import LoadedCluster
from tide.config.loader import bundled_cluster, bundled_names, load_cluster, resolve_cluster
from tide.config.yaml_save import save_yaml

__all__ = ["ConfigError", "LoadedCluster", "bundled_cluster", "bundled_names", "load_cluster",
           "resolve_cluster", "save_yaml"]
