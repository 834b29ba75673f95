"""The `pools:` section of the cluster YAML: read, checked with the line and the
fix, saved back the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tide.config.errors import ConfigError
from tide.config.yaml_load import load_yaml, load_yaml_text
from tide.config.yaml_save import save_yaml

TIDAL = Path(__file__).resolve().parent / "data" / "tidal.yaml"


def test_pools_are_read_and_round_trip():
    loaded = load_yaml(TIDAL)
    assert loaded.pools is not None
    (pool,) = loaded.pools.pools
    assert (pool.name, pool.partition, pool.lend_partition, pool.mode) == (
        "serving", "serving", "lend", "gpu")  # fmt: skip
    assert (pool.lend_after, pool.reclaim_objective, pool.startup) == (3.0, 40.0, 10.0)
    again = load_yaml_text(save_yaml(loaded))
    assert again.same_model(loaded)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    partition: serving\n", "    partition: nope\n"),
        ("    lend_partition: lend\n", "    lend_partition: training\n"),
        ("    keep_idle: 0\n", "    keep_idle: 0\n    mode: half\n"),
        ("    lend_after: 3s\n", "    lend_after: 3\n"),
    ],
)
def test_bad_pools_name_the_line_and_the_fix(old, new):
    text = TIDAL.read_text().replace(old, new)
    with pytest.raises(ConfigError) as e:
        load_yaml_text(text, "tidal.yaml")
    assert e.value.line is not None and e.value.fix, str(e.value)
    assert "pool" in str(e.value) or "pools" in str(e.value)
