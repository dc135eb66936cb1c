"""The tree's CMake names its own script as ``CMAKE_MAKE_PROGRAM``: a resumed compile asked that
program (``-t commands``) how many steps the build has, outside the sandbox (issue 41, 2)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, payload


def plant(tmp: Path) -> Plant:
    marker = tmp / "fired"
    script = payload(tmp, marker)
    build = tmp / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text(f"CMAKE_MAKE_PROGRAM:FILEPATH={script}\n")
    return Plant(tmp, marker, {"build": build, "script": script})


def without_fix(p: Plant) -> None:
    import subprocess
    subprocess.run([str(p.extra["script"]), "-C", str(p.extra["build"]), "-t", "commands"], check=True)


def with_harness(p: Plant) -> None:
    from build_steps import compile as compile_step
    compile_step._resuming(p.extra["build"], ["mxnet"], 3)
