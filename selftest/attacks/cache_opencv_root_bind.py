"""The tree's CMake writes ``OPENCV_ROOT=/root`` into CMakeCache.txt; the compile sandbox bound the
cached OPENCV_ROOT read-only, so the compile read the gh token, report.key and .netrc and baked
them into libmxnet.so (issue 41, 3). The binds now come from the harness's own options only."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant
from selftest.attacks._sandbox_read import cache_plant, read_inside


def plant(tmp: Path) -> Plant:
    return cache_plant(tmp, "OPENCV_ROOT:PATH={secrets}\nCMAKE_HOME_DIRECTORY:INTERNAL={src}\n")


def without_fix(p: Plant) -> None:
    # what the unfixed build_box made of that cache: the cached OPENCV_ROOT bound read-only
    from build_steps import configure
    box = configure.build_box(p.extra["src"], p.extra["build"], inputs=[str(p.extra["secrets"])])
    read_inside(box, p.extra["secrets"], p.marker)


def with_harness(p: Plant) -> None:
    from build_steps import compile as compile_step
    # the compile's sandbox, for a run with no --opencv-prefix
    box = compile_step.compile_box(p.extra["build"], src=p.extra["src"])
    read_inside(box, p.extra["secrets"], p.marker)
