"""Describe this machine: CPUs and memory from Linux, GPUs from NVML.

`detect_gpus()` uses nvidia-ml-py (the `nvml` extra) the way Slurm's
AutoDetect=nvml does: one GPU per NVML device (index = NVML index, which is
PCI bus order; file = /dev/nvidia<minor>), its type from the device name
("NVIDIA A100-SXM4-80GB" -> "a100-sxm4-80gb"), the cores of its CPU
affinity, and NVLink counts between GPUs. Links that end on an NVSwitch
connect a GPU to every other GPU on the switch fabric; tide counts
min(links of i, links of j) for such pairs. Without the library, a driver
or a GPU, it returns None and says why; it never raises.
"""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide.model import Gpu, Node

SYS_CPU = Path("/sys/devices/system/cpu")
PROC_MEMINFO = Path("/proc/meminfo")


@dataclass(slots=True)
class CpuTopology:
    cpus: int = 1
    sockets: int = 1
    cores_per_socket: int = 1
    threads_per_core: int = 1
    core_of_cpu: dict[int, int] = field(default_factory=dict)  # logical CPU -> Slurm core id


@dataclass(slots=True)
class GpuDetection:
    gpus: list[Gpu]
    links: list[list[int]]
    driver: str = ""


def cpu_topology(root: Path = SYS_CPU) -> CpuTopology:
    """Sockets, cores and threads from sysfs; core ids numbered socket by socket
    (socket 0's cores first), as Slurm numbers them for gres.conf Cores=."""
    cpus: dict[int, tuple[int, int]] = {}
    for d in sorted(root.glob("cpu[0-9]*")):
        try:
            pkg = int((d / "topology" / "physical_package_id").read_text())
            core = int((d / "topology" / "core_id").read_text())
        except (OSError, ValueError):
            continue
        cpus[int(d.name[3:])] = (pkg, core)
    if not cpus:
        n = os.cpu_count() or 1
        return CpuTopology(cpus=n, cores_per_socket=n, core_of_cpu={i: i for i in range(n)})
    packages = sorted({p for p, _ in cpus.values()})
    per_pkg = {p: sorted({c for q, c in cpus.values() if q == p}) for p in packages}
    cps = max(len(v) for v in per_pkg.values())
    core_of = {cpu: packages.index(p) * cps + per_pkg[p].index(c)
               for cpu, (p, c) in cpus.items()}
    cores = len(set(cpus.values()))
    return CpuTopology(cpus=len(cpus), sockets=len(packages), cores_per_socket=cps,
                       threads_per_core=max(1, len(cpus) // max(1, cores)), core_of_cpu=core_of)


def memory_mb(meminfo: Path = PROC_MEMINFO) -> int:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return max(1, int(line.split()[1]) // 1024)
    except (OSError, ValueError, IndexError):
        pass
    return 1


def detect_gpus(cpu: CpuTopology | None = None) -> tuple[GpuDetection | None, str]:
    """(GPUs and NVLink matrix, message), or (None, why not)."""
    try:
        import pynvml  # type: ignore[import-untyped]
    except ImportError:
        return None, "no GPUs detected: nvidia-ml-py is not installed (pip install 'tide[nvml]')"
    try:
        pynvml.nvmlInit()
    except Exception as e:
        return None, f"no GPUs detected: NVML is unavailable ({_text(e)}); no NVIDIA driver here?"
    try:
        found = _read_nvml(pynvml, cpu or cpu_topology())
    except Exception as e:  # NVML errors vary by driver; report, never crash
        return None, f"no GPUs detected: NVML query failed ({_text(e)})"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
    if not found.gpus:
        return None, "no GPUs detected: NVML reports no devices"
    types = sorted({g.type for g in found.gpus})
    return found, f"{len(found.gpus)} GPU(s) via NVML ({', '.join(types)}), driver {found.driver}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_type(name: str) -> str:
    """'NVIDIA A100-SXM4-80GB' -> 'a100-sxm4-80gb' (Slurm-like AutoDetect type)."""
    t = name.strip().lower().removeprefix("nvidia ").strip()
    return t.replace(" ", "_")


def _bus(bus_id: Any) -> str:
    """'00000000:07:00.0' / '0000:07:00.0' -> '0:07:00.0' (domain width differs by API)."""
    text = _text(bus_id).strip().lower()
    dom, _, rest = text.partition(":")
    try:
        return f"{int(dom, 16):x}:{rest}"
    except ValueError:
        return text


def _read_nvml(nv: Any, cpu: CpuTopology) -> GpuDetection:
    count = nv.nvmlDeviceGetCount()
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    gpus = [_gpu(nv, i, h, cpu) for i, h in enumerate(handles)]
    try:
        driver = _text(nv.nvmlSystemGetDriverVersion())
    except Exception:
        driver = "unknown"
    return GpuDetection(gpus, _nvlinks(nv, handles), driver)


def _gpu(nv: Any, i: int, h: Any, cpu: CpuTopology) -> Gpu:
    try:
        file = f"/dev/nvidia{nv.nvmlDeviceGetMinorNumber(h)}"
    except Exception:
        file = ""
    cores = _affinity_cores(nv, h, cpu)
    sockets = {c // max(1, cpu.cores_per_socket) for c in cores}
    return Gpu(index=i, type=gpu_type(_text(nv.nvmlDeviceGetName(h))),
               socket=sockets.pop() if len(sockets) == 1 else None, cores=cores, file=file)


def _affinity_cores(nv: Any, h: Any, cpu: CpuTopology) -> tuple[int, ...]:
    words = max(1, (max(cpu.core_of_cpu, default=0) + 64) // 64)
    try:
        mask = list(nv.nvmlDeviceGetCpuAffinity(h, words))
    except Exception:
        return ()
    cpus = [w * 64 + b for w, word in enumerate(mask) for b in range(64) if int(word) >> b & 1]
    cores = {cpu.core_of_cpu[c] for c in cpus if c in cpu.core_of_cpu}
    if len(cores) == len(set(cpu.core_of_cpu.values())):
        return ()  # affinity to every core says nothing (single socket, or unknown)
    return tuple(sorted(cores))


def _nvlinks(nv: Any, handles: list[Any]) -> list[list[int]]:
    n = len(handles)
    bus = {}
    for i, h in enumerate(handles):
        try:
            bus[_bus(nv.nvmlDeviceGetPciInfo(h).busId)] = i
        except Exception:
            continue
    links = [[0] * n for _ in range(n)]
    to_switch = [0] * n
    for i, h in enumerate(handles):
        for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
            try:
                if nv.nvmlDeviceGetNvLinkState(h, link) != nv.NVML_FEATURE_ENABLED:
                    continue
                remote = _bus(nv.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId)
            except Exception:  # link index not present on this device
                continue
            j = bus.get(remote)
            if j is None:
                to_switch[i] += 1
            elif j != i:
                links[i][j] += 1
    for i in range(n):
        for j in range(n):
            if i != j and to_switch[i] and to_switch[j]:
                links[i][j] += min(to_switch[i], to_switch[j])
    return links  # all zeros when NVML sees no NVLink: PCIe only


def local_node(name: str | None = None, notes: list[str] | None = None) -> Node:
    """This machine as a Node; `notes` (if given) gets what was found or missing."""
    cpu = cpu_topology()
    found, message = detect_gpus(cpu)
    if notes is not None:
        notes.append(message)
    host = name or socket.gethostname().split(".")[0] or "localhost"
    node = Node(name=host, cpus=cpu.cpus, sockets=cpu.sockets,
                cores_per_socket=cpu.cores_per_socket, threads_per_core=cpu.threads_per_core,
                real_memory=memory_mb())
    if found is not None:
        node.gpus, node.links = found.gpus, found.links
        node.features = tuple(sorted({g.type for g in found.gpus}))
    return node
