"""The real-Slurm comparison's inputs load in tide and the twin runs them (docs/slurm-peer.md).

tests/data/slurm_peer/ is one measured run of tools/slurm_peer/run.py: the slurm.conf,
gres.conf and topology.conf that ../shared/peers/slurm/start.sh generated (16 nodes x 8 GPUs,
leaves of 4 nodes), `sacctmgr dump`, the job records from parse_jobs.py and the tide JSONL
the tool wrote from them. The real Slurm run itself needs root daemons and minutes, so it is
not part of the suite; these tests check everything around it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tide.config.loader import load_cluster
from tide.model.cluster import TopologyKind
from tide.sim.runner import WorkloadOptions, configure, load_inputs, run_policy

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "slurm_peer"
CONF = DATA / "conf"
START_SH = Path("/work/shared/peers/slurm/start.sh")
sys.path.insert(0, str(ROOT / "tools"))

from slurm_peer import compare, slurmlog, twin  # noqa: E402
from slurm_peer.workload import build  # noqa: E402

# --- the generated configuration ------------------------------------------------


def test_peer_conf_loads_as_start_sh_describes_it() -> None:
    loaded = load_cluster(CONF)
    c, cfg = loaded.cluster, loaded.config
    assert [n.name for n in c.nodes] == [f"node{i:03d}" for i in range(1, 17)]
    assert {(len(n.gpus), n.cpus, n.real_memory) for n in c.nodes} == {(8, 64, 512000)}
    assert [(p.name, p.default, p.priority_tier) for p in c.partitions] == [
        ("gpu", True, 1),
        ("urgent", False, 10),
    ]
    assert c.topology.kind is TopologyKind.TREE
    leaves = {s.name: s.nodes for s in c.topology.switches if s.nodes}
    assert leaves == {
        f"leaf{k}": tuple(f"node{i:03d}" for i in range(4 * k + 1, 4 * k + 5)) for k in range(4)
    }
    assert (cfg.bf_interval, cfg.bf_resolution, cfg.bf_window) == (1, 1, 86400)
    assert cfg.bf_continue and cfg.default_queue_depth == 1000
    w = cfg.weights
    assert (w.age, w.fairshare, w.job_size, w.partition) == (1000, 10000, 1000, 1000)
    assert w.tres == {"gres/gpu": 1000.0}
    assert (cfg.max_age, cfg.decay_half_life) == (600, 1800)
    assert cfg.topology_plugin == "topology/tree" and cfg.select_type == "select/cons_tres"
    shares = {a.name: a.fairshare for a in loaded.accounts.accounts.values() if a.name != "root"}
    assert shares == {"teama": 50, "teamb": 30, "teamc": 20}


def test_peer_conf_warnings_are_only_unmodelled_keys() -> None:
    # AccountingStorageEnforce and JobRequeue are kept but not used
    for w in load_cluster(CONF).warnings:
        assert "not modelled" in w or "not used" in w, w


def _conf_lines(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and re.fullmatch(r"(Scheduler|Select|Priority|Topology)\w*", key):
            out[key] = value.rstrip('"')  # start.sh's ACCT block ends in a shell quote
    return out


@pytest.mark.skipif(not START_SH.is_file(), reason="the shared Slurm peer scripts are absent")
def test_shipped_conf_is_what_start_sh_writes() -> None:
    """The copy under tests/data must follow start.sh's scheduling lines (refresh it with
    tools/slurm_peer/run.py when they change)."""
    script = START_SH.read_text().replace("$BF_INTERVAL", "1").replace("$TOPOLOGY", "tree")
    expected = _conf_lines(script)
    shipped = _conf_lines((CONF / "slurm.conf").read_text())
    assert expected, "start.sh no longer writes the scheduling keys this test reads"
    assert {k: shipped.get(k) for k in expected} == expected


# --- the tool's pure parts ----------------------------------------------------------


def test_workload_is_deterministic_and_matches_the_shipped_run() -> None:
    jobs = build(seed=1, jobs=32, accounts=("teama",))
    assert jobs == build(seed=1, jobs=32, accounts=("teama",))
    manifest = (DATA / "manifest.csv").read_text().splitlines()[1:]
    assert [line.split(",")[1] for line in manifest] == [j.name for j in jobs]
    assert [line.rsplit(",", 1)[1] for line in manifest] == [
        " ".join(j.sbatch_options()) for j in jobs
    ]


def test_sbatch_options_follow_the_peer_readme() -> None:
    from slurm_peer.workload import PeerJob

    small = PeerJob(0, 0, 5, 4, 1, 1, "teamb")
    big = PeerJob(1, 3, 30, 32, 4, 2, "", "1@0:20")
    assert small.sbatch_options() == ["-N", "1", "--gpus=4", "-p", "gpu", "--time=1", "-A",
                                      "teamb"]  # fmt: skip
    assert big.sbatch_options() == ["-N", "4", "--gpus-per-node=8", "-p", "gpu", "--time=2",
                                    "--switches=1@0:20"]  # fmt: skip


def test_jsonl_is_rebuilt_from_slurm_records(tmp_path: Path) -> None:
    records = twin.read_slurm(DATA / "slurm_jobs.csv", DATA / "manifest.csv")
    out = tmp_path / "twin.jsonl"
    assert twin.write_jsonl(records, out) == 32
    assert out.read_text() == (DATA / "twin.jsonl").read_text()


def test_log_gives_initial_priorities_and_backfill_starts() -> None:
    log = slurmlog.read_log(DATA / "slurmctld.log")
    assert {j.job_id for j in log.values() if j.init_prio is not None} == set(range(1, 33))
    assert log[1].init_prio == 11062 and log[5].init_prio == 11753
    bf = [j for j in log.values() if j.started_by == "backfill"]
    assert bf and all(j.start is not None and j.nodes for j in bf)


@pytest.mark.parametrize(
    ("slurm", "tide", "discordant"),
    [
        ([0, 1, 2], [0, 1, 2], 0),
        ([0, 1, 2], [2, 1, 0], 3),
        ([0, 0, 5], [3, 1, 5], 0),  # a tie on one side is never discordant
        ([0, 1, 5], [1, 0, 5], 1),
    ],
)
def test_discordant_pairs(slurm: list[float], tide: list[float], discordant: int) -> None:
    recs = [twin.SlurmRecord(i, f"j{i}", 1, 0, s, s + 1, "n1", 1, "", "") for i, s in
            enumerate(slurm)]  # fmt: skip
    res = {i: twin.TwinRecord(i, t, t + 1, "n1", 1) for i, t in enumerate(tide)}
    rows = compare.build_rows(recs, res, 0.0)
    s = compare.summarize(rows)
    assert s["discordant_pairs"] == discordant
    assert s["same_order"] is (discordant == 0)
    assert s["max_abs_dstart"] == max(abs(a - b) for a, b in zip(slurm, tide, strict=True))


# --- the twin on the compared workload ---------------------------------------------


@pytest.fixture(scope="module")
def twin_run() -> dict[int, twin.TwinRecord]:
    inputs = load_inputs(str(DATA / "twin.jsonl"), None, str(CONF), WorkloadOptions())
    run = run_policy(inputs, "slurm", configure(inputs.config, None, None, None))
    return {r.job_id: twin.TwinRecord(r.job_id, r.start, r.end, r.nodelist, r.leaf_switches)
            for r in run.results}  # fmt: skip


@pytest.mark.slow
def test_twin_runs_the_compared_workload(twin_run: dict[int, twin.TwinRecord]) -> None:
    assert sorted(twin_run) == list(range(1, 33))
    assert all(r.start is not None and r.end is not None for r in twin_run.values())
    # one-leaf requests are honoured (their 300 s / 20 s waits never run out here)
    for rec in twin.read_slurm(DATA / "slurm_jobs.csv", DATA / "manifest.csv"):
        if "--switches=1" in rec.sbatch:
            assert twin_run[rec.job_id].leaves == 1, rec.name


@pytest.mark.slow
def test_twin_priorities_at_submit_equal_slurm_initprio() -> None:
    log = slurmlog.read_log(DATA / "slurmctld.log")
    ours = twin.priorities_at_submit(CONF, DATA / "twin.jsonl")
    assert {j: round(p) for j, p in ours.items()} == {j: lj.init_prio for j, lj in log.items()}


def _rows(twin_run: dict[int, twin.TwinRecord]) -> list[compare.Row]:
    records = twin.read_slurm(DATA / "slurm_jobs.csv", DATA / "manifest.csv")
    return compare.build_rows(records, twin_run, twin.origin(records))


@pytest.mark.slow
def test_twin_matches_slurm_until_the_first_will_run_batch(
    twin_run: dict[int, twin.TwinRecord],
) -> None:
    """Jobs 1-5 start in the same second on the same nodes as in the real Slurm."""
    rows = {r.job_id: r for r in _rows(twin_run)}
    for jid in (1, 2, 3, 4, 5):
        assert rows[jid].delta == 0 and rows[jid].slurm_nodes == rows[jid].tide_nodes


@pytest.mark.slow
@pytest.mark.xfail(
    reason="Slurm's backfill pass ran between job 13's submission and job 5's end, within the "
    "same second; the twin's whole-second events cannot order them "
    "(docs/slurm-peer.md, 'Sub-second order of events')",
    strict=False,
)
def test_twin_backfills_job9_as_slurm_did(twin_run: dict[int, twin.TwinRecord]) -> None:
    rows = {r.job_id: r for r in _rows(twin_run)}
    assert abs(rows[9].delta or 1e9) <= 2
