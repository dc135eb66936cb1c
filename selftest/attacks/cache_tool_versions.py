"""The tree's CMake writes its own script as ``CMAKE_COMMAND`` (and ``CMAKE_CXX_COMPILER``,
``CMAKE_CUDA_COMPILER``, ``CMAKE_MAKE_PROGRAM``) into CMakeCache.txt: the report's toolchain
ran each with ``--version``, outside the sandbox (issue 41, 2). The compilers the File API reply
names (ConfigureResult.compilers, issue 47 item 3) are the tree's to name as well: reported, not run."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, payload

KEYS = ("CMAKE_COMMAND", "CMAKE_CXX_COMPILER", "CMAKE_CUDA_COMPILER", "CMAKE_MAKE_PROGRAM")


def plant(tmp: Path) -> Plant:
    marker = tmp / "fired"
    script = payload(tmp, marker)
    build = tmp / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text("".join(f"{k}:FILEPATH={script}\n" for k in KEYS))
    return Plant(tmp, marker, {"build": build, "script": script})


def without_fix(p: Plant) -> None:
    import subprocess
    subprocess.run([str(p.extra["script"]), "--version"], check=True)


def with_harness(p: Plant) -> None:
    from build_steps import toolchain
    from build_steps.configure import read_cache
    script = str(p.extra["script"])
    compilers = {lang: {"id": "GNU", "version": "1.0", "path": script} for lang in ("CXX", "CUDA")}
    tools = toolchain.versions(read_cache(p.extra["build"] / "CMakeCache.txt"), compilers)
    # the versions are those of the tools the harness runs; the cache's own names are reported
    assert str(p.extra["script"]) in tools.get("not the harness's", ""), tools
