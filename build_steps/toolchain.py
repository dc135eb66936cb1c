"""The toolchain a build used, for the report and the review page: nvcc, the host compiler,
cmake, ninja (each the one CMake's cache names, asked for its version) and the CUDA wheels of
``--cuda-from-wheels`` (the versions installed, which cuda_lock has checked against the lock)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from . import cuda_lock

#: cache entry -> the name the report gives the tool
_TOOLS = (("CMAKE_CUDA_COMPILER", "nvcc"), ("CMAKE_CXX_COMPILER", "c++"), ("CMAKE_COMMAND", "cmake"),
          ("CMAKE_MAKE_PROGRAM", "ninja"))


def tool_version(path: str) -> str:
    """The version a tool prints (``nvcc --version``: its V13.0.88), "" when it cannot say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = [line for line in out.splitlines() if line.strip()]
    cuda = next((line for line in lines if "release" in line and ", V" in line), None)
    m = re.search(r", V(\d+(?:\.\d+)+)", cuda) if cuda else None
    if m:
        return m.group(1)
    m = re.search(r"(\d+\.\d+(?:\.\d+)*)", lines[0]) if lines else None
    return m.group(1) if m else ""


def versions(cache: dict, cuda_wheels: Path | None = None) -> dict:
    """tool -> version (``{"nvcc": "13.0.88", "c++": "12.2.0", ..., "nvidia-cublas": "13.10.0.20"}``)."""
    out = {}
    for key, name in _TOOLS:
        path = cache.get(key)
        if path:
            out[name] = tool_version(path) or "unknown"
    if cuda_wheels is not None and Path(cuda_wheels).is_dir():
        out.update(cuda_lock.toolchain_entry(Path(cuda_wheels)))
    return out
