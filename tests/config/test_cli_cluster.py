"""`tide cluster import | show | validate` through Typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tide.cli.main import app
from tide.config.loader import bundled_cluster, load_cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "slurm"
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["cluster", *args], env={"COLUMNS": "120"})
    return result.exit_code, result.stdout, result.stderr


def test_import_writes_yaml_that_loads_back(tmp_path: Path) -> None:
    out = tmp_path / "demo.yaml"
    code, _, err = run("import", str(EXAMPLES), "-o", str(out))
    assert code == 0
    assert "wrote" in err and "16 nodes, 128 GPUs, 2 partitions" in err
    loaded = load_cluster(out)
    loaded.config.extra.clear()
    assert loaded.same_model(bundled_cluster("demo"))


def test_import_to_stdout_and_warnings_to_stderr(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text("ClusterName=x\nNodeName=n1 Colour=red\n"
                                         "PartitionName=p Nodes=ALL\n")
    code, out, err = run("import", str(tmp_path / "slurm.conf"))
    assert code == 0
    assert out.startswith("# tide cluster description") and "name: x" in out
    assert "warning: slurm.conf:2: unknown NodeName key 'Colour' ignored" in err
    code, _, err = run("import", "-q", str(tmp_path / "slurm.conf"))
    assert "warning" not in err


def test_show_tree_and_partitions() -> None:
    code, out, _ = run("show", "demo")
    assert code == 0
    for text in ("demo  16 nodes, 128 GPUs (a100), topology tree",
                 "spine  16 nodes, 128 GPUs", "leaf3  4 nodes, 32 GPUs",
                 "node[09-12]  4 x (8 x a100) = 32 GPUs", "gpu*", "debug",
                 "accounts: 7  user associations: 8  QOS: normal, high, low"):
        assert text in out
    code, out, _ = run("show", "--nodes", str(EXAMPLES))
    assert "node07  8 x a100" in out


def test_show_flat_cluster(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("name: tiny\nnodes:\n- {names: 'n[1-2]', gpus: {count: 2}}\n"
                                     "- {names: n3, state: DOWN}\npartitions: [{name: p}]\n")
    code, out, _ = run("show", str(tmp_path / "c.yaml"))
    assert code == 0
    assert "tiny  3 nodes, 4 GPUs, topology flat" in out
    assert "n[1-2]  2 x (2 x gpu) = 4 GPUs" in out and "n3  1 x (no GPUs) = 0 GPUs  DOWN" in out


def test_validate_ok_and_strict(tmp_path: Path) -> None:
    code, out, _ = run("validate", "seed004")
    assert code == 0 and out.startswith("OK: seed004: 100 nodes, 800 GPUs")
    (tmp_path / "slurm.conf").write_text("ClusterName=x\nNodeName=n1\nNodeName=n2\n"
                                         "PartitionName=p Nodes=n1\n")
    code, out, err = run("validate", str(tmp_path))
    assert code == 0 and "OK with 1 warning(s)" in out and "n2 in no partition" in err
    assert run("validate", "--strict", str(tmp_path))[0] == 1


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"slurm.conf": "NodeName=n CPUs=abc\n"},
         "error: slurm.conf:1: CPUs='abc' is not a number; write an integer of at least 1"),
        ({"c.yaml": "nodes: [{names: n1, cpus: x}]\n"}, "error: c.yaml:1: nodes.0.cpus"),
        ({}, "no slurm.conf here"),
    ],
)
def test_errors_are_one_line_exit_1(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    target = tmp_path / next(iter(files)) if files else tmp_path
    for command in ("import", "show", "validate"):
        code, out, err = run(command, str(target))
        assert code == 1
        assert message in err
        assert "Traceback" not in err + out and len(err.strip().splitlines()) == 1


def test_unwritable_output(tmp_path: Path) -> None:
    code, _, err = run("import", "demo", "-o", str(tmp_path / "no" / "such" / "dir.yaml"))
    assert code == 1 and "error: cannot write" in err


@pytest.mark.parametrize("command", ["import", "show", "validate"])
def test_help_has_an_example(command: str) -> None:
    code, out, _ = run(command, "--help")
    assert code == 0 and "Example: tide cluster " in out
