"""The controller starts on each cluster source: slurm.conf, a cluster file, the
demo, and this machine (autodetected); accounts from the source seed the store once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tide.server.controller import Controller
from tide.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("kw", "nodes", "partitions"),
    [
        ({"slurm_conf": ROOT / "examples" / "slurm" / "slurm.conf"}, 16, {"gpu", "debug"}),
        ({"cluster_file": Path(__file__).with_name("data") / "tiny.yaml"}, 3, {"gpu", "cpu"}),
        ({"demo": True}, 16, {"gpu", "debug"}),
        ({}, 1, {"local"}),
    ],
)
def test_controller_starts_on_each_source(
    tmp_path: Path, kw: dict[str, object], nodes: int, partitions: set[str]
) -> None:
    ctl = Controller(Settings(data_dir=tmp_path / "d", executor="none", **kw))  # type: ignore[arg-type]
    ctl.start()
    try:
        assert len(ctl.cluster.nodes) == nodes
        assert {p.name for p in ctl.cluster.partitions} == partitions
        assert (tmp_path / "d" / "admin.token").stat().st_mode & 0o777 == 0o600
        if kw:
            assert len(ctl.tree.accounts) > 1  # seeded from the source's accounts
    finally:
        ctl.stop()


def test_accounts_are_seeded_once(tmp_path: Path) -> None:
    """An admin's change survives a restart: the file seeds an empty store only."""
    from tide.model import Account
    from tide.store import accounts as acctrepo

    s = Settings(data_dir=tmp_path / "d", executor="none", demo=True)
    ctl = Controller(s)
    ctl.start()
    with ctl.sessions.begin() as ses:
        acctrepo.put_account(ses, Account("added", parent="root", fairshare=9))
    token = (tmp_path / "d" / "admin.token").read_text()
    ctl.stop()
    ctl = Controller(s)
    ctl.start()
    try:
        assert ctl.tree.accounts["added"].fairshare == 9
        assert (tmp_path / "d" / "admin.token").read_text() == token
    finally:
        ctl.stop()
