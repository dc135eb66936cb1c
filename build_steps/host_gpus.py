"""The GPUs of this host, for ``--cuda-arch=native``: a development build with SASS for them only.

Asked of ``nvidia-smi`` first (its ``compute_cap`` column, driver R510 and later), else of the
CUDA driver library itself (``cuDeviceGetAttribute`` for the compute capability), so a host whose
driver ships without nvidia-smi (some containers) still answers. No GPU, no driver, or a driver
that cannot see a device: an empty list, and the caller says what that means.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from dataclasses import dataclass

#: cuDeviceGetAttribute's CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR (cuda.h).
_CC_MAJOR, _CC_MINOR = 75, 76


@dataclass(frozen=True)
class HostGpu:
    name: str
    #: "9.0": the form MXNET_CUDA_ARCH takes
    compute_capability: str
    source: str


def _from_nvidia_smi() -> list[HostGpu] | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        proc = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    gpus = []
    for line in proc.stdout.splitlines():
        name, _, cap = line.rpartition(",")
        cap = cap.strip()
        if name.strip() and cap.replace(".", "", 1).isdigit():
            gpus.append(HostGpu(name.strip(), cap, "nvidia-smi"))
    return gpus


def _from_driver() -> list[HostGpu] | None:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count = ctypes.c_int()
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return None
    gpus = []
    for ordinal in range(count.value):
        dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        name = ctypes.create_string_buffer(256)
        if cuda.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
            continue
        cuda.cuDeviceGetName(name, len(name), dev)
        if (cuda.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, dev) == 0
                and cuda.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, dev) == 0):
            gpus.append(HostGpu(name.value.decode(errors="replace"), f"{major.value}.{minor.value}",
                                "CUDA driver"))
    return gpus


def host_gpus() -> list[HostGpu]:
    """Every GPU this host's driver reports (empty when there is none, or no driver)."""
    gpus = _from_nvidia_smi()
    if not gpus:
        gpus = _from_driver()
    return gpus or []


def native_arch_list(gpus: list[HostGpu]) -> str:
    """``MXNET_CUDA_ARCH`` for exactly these GPUs: each distinct compute capability once, SASS only."""
    caps = sorted({g.compute_capability for g in gpus}, key=lambda c: tuple(int(x) for x in c.split(".")))
    return ";".join(caps)
