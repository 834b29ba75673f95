"""sacctmgr dump files (and the QOS table section) -> AccountTree."""

from __future__ import annotations

import pytest

from tide.config.errors import ConfigError, Warnings
from tide.config.qos_table import parse_qos_rows
from tide.config.sacctmgr_dump import parse_sacctmgr_dump, split_options
from tide.config.values import Loc
from tide.model import AccountTree
from tide.model.account import FAIRSHARE_PARENT

DUMP = """\
# To edit this file start with a cluster line for the new cluster
QOS - 'high':Description='a:b':Priority=100:Preempt='low,normal':MaxTRESPerUser=gres/gpu=16
Cluster - 'c1':Fairshare=1:QOS='normal,high':DefaultQOS='normal':GrpTRES=gres/gpu=128
Parent - 'root'
User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1
Account - 'research':Description='research: the group':Organization='x':Fairshare=60:\
GrpTRES=cpu=1000,gres/gpu=64:GrpJobs=50:GrpSubmitJobs=100:Priority=10
Account - 'ops':Fairshare=parent
Parent - 'research'
Account - 'nlp':Fairshare=40:MaxJobs=5:MaxSubmitJobs=9:MaxTRESPerJob=gres/gpu=16:\
MaxTRESPerNode=gres/gpu=8:MaxWallDurationPerJob=2880:GrpCPUs=64:MaxNodes=4
Parent - 'nlp'
User - 'alice':DefaultAccount='nlp':Fairshare=3:MaxJobs=10:AdminLevel='Operator':QOS='normal'
User - 'bob':DefaultAccount='ops':Fairshare=2147483647
Parent - 'ops'
User - 'bob':DefaultAccount='ops':Coordinator='ops':WCKeys='x'
"""


def read(text: str) -> tuple[AccountTree, Warnings]:
    warn = Warnings()
    return parse_sacctmgr_dump(text, warn), warn


def test_tree_limits_and_users() -> None:
    tree, warn = read(DUMP)
    assert tree.cluster == "c1"
    root = tree.accounts["root"]
    assert (root.qos, root.default_qos, root.limits.grp_tres) == (
        ("normal", "high"), "normal", {"gres/gpu": 128})
    r = tree.accounts["research"]
    assert (r.parent, r.fairshare, r.description, r.organization, r.priority) == (
        "root", 60, "research: the group", "x", 10)
    assert (r.limits.grp_tres, r.limits.grp_jobs, r.limits.grp_submit_jobs) == (
        {"cpu": 1000, "gres/gpu": 64}, 50, 100)
    nlp = tree.accounts["nlp"].limits
    assert tree.accounts["nlp"].parent == "research"
    assert (nlp.max_jobs, nlp.max_submit_jobs, nlp.max_wall) == (5, 9, 2880 * 60)
    assert (nlp.max_tres_per_job, nlp.max_tres_per_node, nlp.grp_tres) == (
        {"gres/gpu": 16, "node": 4}, {"gres/gpu": 8}, {"cpu": 64})
    assert tree.accounts["ops"].fairshare == FAIRSHARE_PARENT
    assert tree.lineage("nlp") == ["nlp", "research", "root"]
    users = [(u.user, u.account, u.fairshare, u.default_account, u.admin_level)
             for u in tree.users]
    assert users == [("root", "root", 1, True, "Administrator"),
                     ("alice", "nlp", 3, True, "Operator"),
                     ("bob", "nlp", FAIRSHARE_PARENT, False, "None"),
                     ("bob", "ops", 1, True, "None")]
    assert tree.default_account("bob") == "ops"
    assert tree.assoc("alice", "nlp").limits.max_jobs == 10  # type: ignore[union-attr]
    high = tree.qos["high"]
    assert (high.priority, high.preempt, high.limits.max_tres_per_user) == (
        100, ("low", "normal"), {"gres/gpu": 16})
    assert list(tree.qos) == ["normal", "high", "low"]  # low: named by high's Preempt
    assert list(warn) == ["sacctmgr.dump: QOS low used but not defined; using default "
                          "settings (add QOS lines or a `sacctmgr -P show qos` table)"]


def test_undefined_qos_get_defaults_with_warning() -> None:
    tree, warn = read("Cluster - 'c'\nAccount - 'a':QOS='normal,gold':DefaultQOS='gold'\n")
    assert "gold" in tree.qos and tree.qos["gold"].priority == 0
    assert list(warn) == ["sacctmgr.dump: QOS gold used but not defined; using default "
                          "settings (add QOS lines or a `sacctmgr -P show qos` table)"]


def test_qos_table_embedded() -> None:
    tree, warn = read(
        "Cluster - 'c':QOS='normal,low,high'\n"
        "Name|Priority|GraceTime|Preempt|PreemptMode|UsageFactor|MaxTRESPU|MaxWall|MaxJobsPU|"
        "UsageThres|Flags\n"
        "low|0|00:00:00||cluster|0.500000||1-00:00:00|||\n"
        "high|100|00:05:00|low|requeue|1.000000|gres/gpu=8||4|0.5|DenyOnLimit\n"
        "Account - 'a'\n")
    low, high = tree.qos["low"], tree.qos["high"]
    assert (low.usage_factor, low.limits.max_wall, low.preempt_mode) == (0.5, 86400, "")
    assert (high.priority, high.grace_time, high.preempt, high.preempt_mode) == (
        100, 300, ("low",), "REQUEUE")
    assert (high.limits.max_tres_per_user, high.limits.max_jobs_per_user, high.flags) == (
        {"gres/gpu": 8}, 4, ("DenyOnLimit",))
    assert "a" in tree.accounts
    assert list(warn) == ["sacctmgr.dump:4: QOS option UsageThres is not modelled by tide "
                          "(ignored)"]


def test_qos_table_parsable_with_trailing_bar() -> None:
    rows = [(1, "Name|Priority|MaxWall|"), (2, "normal|0||"), (3, "long|5|7-00:00:00|")]
    qos = parse_qos_rows(rows, "qos.txt", Warnings())
    assert (qos["long"].priority, qos["long"].limits.max_wall) == (5, 7 * 86400)


@pytest.mark.parametrize(
    ("rest", "name", "opts"),
    [
        ("'nlp':Fairshare=40", "nlp", [("Fairshare", "40")]),
        ("'a':Description='x:y:z':Organization=\"o:p\"", "a",
         [("Description", "x:y:z"), ("Organization", "o:p")]),
        ("plain:QOS+=a,b", "plain", [("QOS", "a,b")]),
        ("'a':MaxWall=1-00:00:00", "a", [("MaxWall", "1-00:00:00")]),
        ("'a'::Fairshare=1:", "a", [("Fairshare", "1")]),
    ],
)
def test_split_options(rest: str, name: str, opts: list[tuple[str, str]]) -> None:
    assert split_options(rest, Loc("f", 1)) == (name, opts)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Account - 'a'", "sacctmgr.dump:1: Account line before any Cluster line"),
        ("Cluster - 'c'\nParent - 'x'", "sacctmgr.dump:2: Parent 'x' is not defined above; "
         "add Account - 'x' before Parent - 'x'"),
        ("Cluster - 'c'\nCluster - 'd'", "sacctmgr.dump:2: second Cluster line (d)"),
        ("Cluster - 'c'\nAccount - 'a'\nAccount - 'a'", "sacctmgr.dump:3: account 'a' is "
         "defined twice"),
        ("Cluster - 'c'\nUser - 'u':AdminLevel='King'", "AdminLevel='King' is not valid"),
        ("Cluster - 'c'\nAccount - 'a:Fairshare=1", "sacctmgr.dump:2: unbalanced quote"),
        ("Cluster - 'c'\nAccount - 'a':Fairshare=lots", "Fairshare='lots' is not a number"),
        ("Cluster - 'c'\nWidget - 'w'", "unknown object 'Widget'"),
        ("Cluster - 'c'\njunk", "sacctmgr.dump:2: cannot read 'junk'"),
        ("# nothing\n", "sacctmgr.dump: no Cluster line"),
        ("Cluster - 'c'\nAccount - 'a':MaxWall=soon", "MaxWall='soon' is not a time"),
    ],
)
def test_dump_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        read(text)
    assert message in str(e.value)


def test_unmodelled_options_warn_once() -> None:
    _, warn = read("Cluster - 'c'\nAccount - 'a':GrpTRESMins=cpu=1:Flavour=x\n"
                   "Account - 'b':GrpTRESMins=cpu=2\nUser - 'u':Partition='gpu'\n"
                   "User - 'u':Partition='cpu'\n")
    assert list(warn) == [
        "sacctmgr.dump:2: association option GrpTRESMins is not modelled by tide (ignored)",
        "sacctmgr.dump:2: unknown association option 'Flavour' ignored",
        "sacctmgr.dump:4: user u: Partition= association kept as the root association "
        "(partitions are not modelled)",
        "sacctmgr.dump:5: user u already has an association with root; line ignored "
        "(partition associations are not modelled)",
    ]
