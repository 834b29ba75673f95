"""tide's Slurm commands against a real Slurm 22.05 (issue 15, item 2).

tests/data/slurm_cli/slurm.json holds what the real peer printed for one scenario
(tools/slurm_peer/cli_compare.py record-slurm: 4 nodes x 8 GPUs, conf/ is its
slurm.conf, gres.conf, topology.conf and sacctmgr dump). Here a tide server is
started on that conf/, the same scenario is submitted through the shims and the
same commands run: every header line is Slurm's, and the rows are the same once
times are masked and job ids numbered in submission order. Rows are compared as
sets where Slurm's order among jobs of equal state depends on priority details.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from serverproc import ServerProc

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "slurm_cli"
sys.path.insert(0, str(ROOT / "tools"))
from slurm_peer.cli_compare import COMMANDS, normalize, record, tide_runner  # noqa: E402

pytestmark = pytest.mark.slow

# Lines of scontrol show node that only a real slurmd has (its port, kernel, boot time).
NODE_ONLY_SLURM = ("NodeAddr=", "OS=", "BootTime=", "LastBusyTime=")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    tmp = tmp_path_factory.mktemp("slurmcli")
    shutil.copytree(DATA / "conf", tmp / "conf")
    srv = ServerProc(tmp / "data", ["--slurm-conf", str(tmp / "conf")]).start()
    os.environ["TIDE_URL"], os.environ["TIDE_TOKEN"] = srv.url, srv.admin_token
    try:
        with srv.client() as c:

            def settled(ids: list[str]) -> bool:
                rows = c.get("/v1/jobs", params={"all": "true", "format": "columns"}).json()
                st = {r[0]: r[rows["columns"].index("state")] for r in rows["rows"]}
                running = sum(s == "RUNNING" for s in st.values())
                return running == 3 and st.get(int(ids[3])) == "COMPLETED"

            tide = record(tide_runner(cwd=str(tmp)), settled)
    finally:
        os.environ.pop("TIDE_URL"), os.environ.pop("TIDE_TOKEN")
        srv.stop()
    return json.loads((DATA / "slurm.json").read_text()), tide


def _lines(out: dict, cmd: str) -> list[str]:
    return [ln.rstrip() for ln in normalize(out[cmd]["stdout"], out["ids"]).splitlines()]


@pytest.mark.parametrize("cmd", [" ".join(c) for c in COMMANDS if c[0] != "scontrol"])
def test_tables_match_real_slurm(outputs: tuple[dict, dict], cmd: str) -> None:
    slurm, tide = outputs
    want, got = _lines(slurm, cmd), _lines(tide, cmd)
    assert tide[cmd]["rc"] == slurm[cmd]["rc"] == 0
    heads = 0 if "-h" in cmd.split() or "-n" in cmd.split() else 1
    heads += ("-l" in cmd.split()) + (cmd.startswith("sacct") and "-P" not in cmd and heads > 0)
    assert got[:heads] == want[:heads]  # the date line, headers and dashes
    assert sorted(got[heads:]) == sorted(want[heads:])


def test_pending_jobs_come_first_as_in_slurm(outputs: tuple[dict, dict]) -> None:
    _, tide = outputs
    states = [ln.split()[4] for ln in _lines(tide, "squeue")[1:]]
    assert states == sorted(states, key=lambda s: s != "PD") and states.count("PD") == 2


def test_scontrol_hostnames_and_partition_match(outputs: tuple[dict, dict]) -> None:
    slurm, tide = outputs
    for cmd in ("scontrol show hostnames node[001-003]", "scontrol show partition gpu"):
        assert _lines(tide, cmd) == _lines(slurm, cmd)


def test_scontrol_show_node_has_slurms_keys_and_values(outputs: tuple[dict, dict]) -> None:
    slurm, tide = outputs
    cmd = "scontrol show node node004"

    def pairs(out: dict) -> dict[str, str]:
        return dict(
            w.split("=", 1)
            for ln in _lines(out, cmd)
            if not ln.strip().startswith(NODE_ONLY_SLURM)
            for w in ln.split()
            if "=" in w
        )

    want, got = pairs(slurm), pairs(tide)
    assert set(want) <= set(got)
    varying = {"CPULoad", "FreeMem", "SlurmdStartTime", "Port", "Version"}
    assert {k: v for k, v in got.items() if k in want and k not in varying} == {
        k: v for k, v in want.items() if k not in varying
    }


def test_sbatch_test_only_says_when_where_and_submits_nothing(outputs: tuple[dict, dict]) -> None:
    slurm, tide = outputs
    for line in (slurm["test_only"], tide["test_only"]):
        words = line.split()
        assert words[:2] == ["sbatch:", "Job"] and words[3:6] == ["to", "start", "at"]
        assert line.endswith("using 1 processors on nodes node004 in partition gpu"), line


def test_dates_are_masked_whole_so_recordings_compare_on_any_day() -> None:
    """The recorded real-Slurm tables carry the day they were made: masked after
    the times, the date kept its day and the comparison failed after midnight."""
    assert normalize("Tue Dec 01 22:15:03 2026", []) == "<DATE>"
    assert normalize("Wed Dec  2 00:01:02 2026", []) == "<DATE>"
    assert normalize("up 1-02:03:04 at 2026-12-01T22:15:03", []) == "up <T> at <TS>"
