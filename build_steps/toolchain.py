"""The toolchain a build used, for the report and the review page: nvcc, the host compiler,
cmake, ninja and the CUDA wheels of ``--cuda-from-wheels`` (the versions installed, which
cuda_lock has checked against the lock).

Computed once, by the configure step (build_steps.build_chain), into its product (ConfigureResult.toolchain).

The compilers and their versions are what CMake found and used, from its File API reply
(ConfigureResult.compilers, build_steps.readers.cmake_file_api): read, nothing run, and not found
a second way. cmake and ninja are asked of the harness's own copies (the configure runs ``cmake``
and ``-G Ninja`` by the harness's PATH). The build dir is written by the tree's CMake, so
CMakeCache.txt and the reply are data, never a list of programs to run (issue 41, 2): a compiler or
tool they name that is not the harness's own (its PATH lookup, the CUDA root's nvcc, the operator's
CXX or -DCMAKE_CUDA_COMPILER) is reported under ``not the harness's`` (that program is never run)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from . import cuda_lock

#: File API language -> the name the report gives its compiler
_COMPILERS = (("CUDA", "nvcc"), ("CXX", "c++"))
#: cache entry -> the name the report gives the tool
_TOOLS = (("CMAKE_COMMAND", "cmake"), ("CMAKE_MAKE_PROGRAM", "ninja"))


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


def harness_tools(nvcc: str | Path | None = None, env: dict[str, str] | None = None) -> dict[str, str]:
    """tool -> the path the harness runs it from: cmake and ninja by the harness's PATH (the
    configure command runs ``cmake`` and ``-G Ninja`` by name), the host compiler from the
    operator's CXX or ``c++``, nvcc as given (the CUDA root's or -DCMAKE_CUDA_COMPILER) or on PATH."""
    env = {**os.environ, **(env or {})}
    path = env.get("PATH")
    found = {"cmake": shutil.which("cmake", path=path), "ninja": shutil.which("ninja", path=path),
             "c++": shutil.which(env.get("CXX") or "c++", path=path),
             "nvcc": str(nvcc) if nvcc else shutil.which("nvcc", path=path)}
    return {name: str(p) for name, p in found.items() if p}


def _same(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def versions(cache: dict[str, str], compilers: dict[str, dict[str, Any]] | None = None,
             cuda_wheels: Path | None = None, *, tools: dict[str, str] | None = None) -> dict[str, str]:
    """tool -> version (``{"nvcc": "13.0.88", "c++": "12.2.0", ..., "nvidia-cublas": "13.10.0.20"}``):
    the compilers the configure's File API reply says it used (``compilers``: language ->
    {"id", "version", "path"}, ConfigureResult.compilers), and cmake and ninja where the cache says
    the build used them, asked of the harness's own (``tools``, default :func:`harness_tools`).
    Nothing the cache or the reply names is run."""
    tools = harness_tools() if tools is None else tools
    out = {}
    foreign = []
    for lang, name in _COMPILERS:
        used = (compilers or {}).get(lang)
        if not used:
            continue
        out[name] = used.get("version") or "unknown"
        own = tools.get(name)
        if not own or not _same(used.get("path") or "", own):
            foreign.append(f"{name}: {used.get('path') or 'unnamed'}")
    for key, name in _TOOLS:
        named = cache.get(key)
        if not named:
            continue
        own = tools.get(name)
        out[name] = (tool_version(own) if own else "") or "unknown"
        if not own or not _same(named, own):
            foreign.append(f"{name}: {named}")
    if foreign:
        out["not the harness's"] = "; ".join(foreign)
    if cuda_wheels is not None and Path(cuda_wheels).is_dir():
        out.update(cuda_lock.toolchain_entry(Path(cuda_wheels)))
    return out
