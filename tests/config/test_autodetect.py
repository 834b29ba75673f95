"""Autodetect: the real no-GPU path on this machine, and NVML logic against a fake library."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tide.config import autodetect
from tide.config.autodetect import (
    CpuTopology,
    cpu_topology,
    detect_gpus,
    gpu_type,
    local_node,
    memory_mb,
)


def test_real_machine_without_nvidia_gpu() -> None:
    """This machine has nvidia-ml-py but no driver: None and a clear reason, no exception."""
    found, message = detect_gpus()
    assert found is None
    assert message.startswith("no GPUs detected: ")
    notes: list[str] = []
    node = local_node(notes=notes)
    assert node.gpus == [] and node.links == []
    assert node.cpus >= 1 and node.real_memory > 1 and node.name
    assert node.cpus == node.sockets * node.cores_per_socket * node.threads_per_core
    assert notes == [message]


def test_library_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import now raises ImportError
    found, message = detect_gpus(CpuTopology())
    assert found is None and "nvidia-ml-py is not installed" in message


def write_cpu(root: Path, cpu: int, pkg: int, core: int) -> None:
    d = root / f"cpu{cpu}" / "topology"
    d.mkdir(parents=True)
    (d / "physical_package_id").write_text(f"{pkg}\n")
    (d / "core_id").write_text(f"{core}\n")


def test_cpu_topology_from_sysfs(tmp_path: Path) -> None:
    # 2 sockets x 2 cores x 2 threads; core ids are sparse, as on real machines
    layout = [(0, 0, 0), (1, 0, 4), (2, 1, 0), (3, 1, 4), (4, 0, 0), (5, 0, 4), (6, 1, 0),
              (7, 1, 4)]
    for cpu, pkg, core in layout:
        write_cpu(tmp_path, cpu, pkg, core)
    (tmp_path / "cpufreq").mkdir()  # not a cpuN folder
    t = cpu_topology(tmp_path)
    assert (t.cpus, t.sockets, t.cores_per_socket, t.threads_per_core) == (8, 2, 2, 2)
    assert t.core_of_cpu == {0: 0, 1: 1, 2: 2, 3: 3, 4: 0, 5: 1, 6: 2, 7: 3}


def test_memory_from_meminfo(tmp_path: Path) -> None:
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       16384000 kB\nMemFree: 1 kB\n")
    assert memory_mb(f) == 16000
    assert memory_mb(tmp_path / "missing") == 1


@pytest.mark.parametrize(
    ("name", "kind"),
    [("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"), ("NVIDIA H200", "h200"),
     ("Tesla V100-SXM2-16GB", "tesla_v100-sxm2-16gb"), (b"NVIDIA L4", "l4")],
)
def test_gpu_type(name: Any, kind: str) -> None:
    assert gpu_type(autodetect._text(name)) == kind


class FakeNvml:
    """Just enough of pynvml: 4 GPUs; 0-1 and 2-3 linked directly (2 links each way),
    GPUs 0-3 also hold 3 links each to an NVSwitch (bus 0:99:00.0)."""

    NVML_FEATURE_ENABLED = 1
    NVML_NVLINK_MAX_LINKS = 6

    class NVMLError(Exception):
        pass

    def __init__(self, fail_init: bool = False) -> None:
        self.fail_init = fail_init
        self.shutdown = False
        self.bus = ["00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0",
                    "00000000:4E:00.0"]
        peer = {0: 1, 1: 0, 2: 3, 3: 2}
        self.remote = {i: [self.bus[peer[i]].replace("00000000", "0000")] * 2 +
                       ["0000:99:00.0"] * 3 for i in range(4)}

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        self.shutdown = True

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.54"

    def nvmlDeviceGetCount(self) -> int:
        return 4

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA A100-SXM4-80GB"

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:
        return 3 - h

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self.bus[h].encode())

    def nvmlDeviceGetCpuAffinity(self, h: int, words: int) -> list[int]:
        return [0x0F if h < 2 else 0xF0]  # CPUs 0-3 or 4-7

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        if link >= 5:
            raise self.NVMLError("Not Supported")
        return 1

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: int, link: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self.remote[h][link])


CPU = CpuTopology(cpus=8, sockets=2, cores_per_socket=4,
                  core_of_cpu={i: i for i in range(8)})


def test_nvml_devices_links_and_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    found, message = detect_gpus(CPU)
    assert found is not None and fake.shutdown
    assert message == "4 GPU(s) via NVML (a100-sxm4-80gb), driver 550.54"
    assert [(g.index, g.file, g.socket, g.cores) for g in found.gpus] == [
        (0, "/dev/nvidia3", 0, (0, 1, 2, 3)), (1, "/dev/nvidia2", 0, (0, 1, 2, 3)),
        (2, "/dev/nvidia1", 1, (4, 5, 6, 7)), (3, "/dev/nvidia0", 1, (4, 5, 6, 7))]
    # 2 direct links to the partner plus min(3, 3) through the NVSwitch to everyone
    assert found.links == [[0, 5, 3, 3], [5, 0, 3, 3], [3, 3, 0, 5], [3, 3, 5, 0]]


def test_nvml_init_failure_and_query_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(fail_init=True))
    assert detect_gpus(CPU) == (
        None, "no GPUs detected: NVML is unavailable (Driver Not Loaded); no NVIDIA driver here?")
    broken = FakeNvml()
    broken.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(RuntimeError("boom"))  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    found, message = detect_gpus(CPU)
    assert found is None and message == "no GPUs detected: NVML query failed (boom)"
    assert broken.shutdown


def test_local_node_with_fake_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    monkeypatch.setattr(autodetect, "cpu_topology", lambda: CPU)
    node = local_node("box")
    assert (node.name, node.cpus, node.sockets, node.gpu_count) == ("box", 8, 2, 4)
    assert node.features == ("a100-sxm4-80gb",) and node.links[0][1] == 5


def test_pcie_only_gives_zero_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml()

    def no_nvlink(h: int, link: int) -> int:
        raise fake.NVMLError("Not Supported")

    fake.nvmlDeviceGetNvLinkState = no_nvlink  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    found, _ = detect_gpus(CPU)
    assert found is not None and found.links == [[0] * 4 for _ in range(4)]
