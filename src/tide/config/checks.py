"""Cross-checks on a loaded cluster: things that parse but look wrong.

Each returns warnings (never raises); load_cluster appends them.
"""

from __future__ import annotations

from tide.config.loaded import LoadedCluster
from tide.hostlist import compress
from tide.model import Account, AccountTree, Cluster, UserAssoc


def check_loaded(loaded: LoadedCluster) -> list[str]:
    return [*check_cluster(loaded.cluster), *check_accounts(loaded.accounts, loaded.cluster)]


def check_cluster(c: Cluster) -> list[str]:
    out: list[str] = []
    asym = [n.name for n in c.nodes if any(
        row[j] != n.links[j][i] for i, row in enumerate(n.links) for j in range(len(row)))]
    if asym:
        out.append(f"{compress(asym)}: NVLink matrix is not symmetric (Links of GPU i to j "
                   "differ from j to i)")
    if c.partitions:
        orphans = [n.name for n in c.nodes if not n.partitions]
        if orphans:
            out.append(f"{compress(orphans)} in no partition (no job can run there)")
    out.extend(f"partition {p.name} has no nodes" for p in c.partitions if not p.nodes)
    if c.nodes and not c.partitions:
        out.append("no partitions: jobs have nowhere to run")
    return out


def check_accounts(tree: AccountTree, c: Cluster) -> list[str]:
    out: list[str] = []
    assocs: list[Account | UserAssoc] = [*tree.accounts.values(), *tree.users]
    undefined = sorted({q for a in assocs for q in (*a.qos, a.default_qos)
                        if q and q not in tree.qos})
    if undefined:
        out.append(f"QOS {', '.join(undefined)} used by associations but not defined")
    for a in assocs:
        if a.default_qos and a.qos and a.default_qos not in a.qos:
            who = a.name if isinstance(a, Account) else f"{a.user}@{a.account}"
            out.append(f"{who}: default QOS {a.default_qos} is not in its QOS list "
                       f"({','.join(a.qos)}); Slurm rejects that")
    for p in c.partitions:
        bad_q = [q for q in p.allow_qos if q not in tree.qos]
        if bad_q:
            out.append(f"partition {p.name}: AllowQos names undefined QOS {', '.join(bad_q)}")
        for key, names in (("AllowAccounts", p.allow_accounts), ("DenyAccounts", p.deny_accounts)):
            bad_a = [a for a in names if a not in tree.accounts]
            if bad_a and len(tree.accounts) > 1:
                out.append(f"partition {p.name}: {key} names unknown account {', '.join(bad_a)}")
    defaults: dict[str, int] = {}
    for u in tree.users:
        defaults[u.user] = defaults.get(u.user, 0) + u.default_account
    out.extend(f"user {user} has {n} default accounts" for user, n in defaults.items() if n > 1)
    return out
