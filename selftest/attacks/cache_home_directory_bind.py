"""The tree's CMake writes ``CMAKE_HOME_DIRECTORY`` (the source dir CMake records) as a directory of
secrets: the compile sandbox bound the cached home read-only as "the tree" (issue 41, 3). The
tree bound is now the one the harness was given (--mxnet-src)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant
from selftest.attacks._sandbox_read import cache_plant, read_inside


def plant(tmp: Path) -> Plant:
    return cache_plant(tmp, "CMAKE_HOME_DIRECTORY:INTERNAL={secrets}\n")


def without_fix(p: Plant) -> None:
    from build_steps import configure
    box = configure.build_box(p.extra["secrets"], p.extra["build"])  # the cached home as the tree
    read_inside(box, p.extra["secrets"], p.marker)


def with_harness(p: Plant) -> None:
    from build_steps import compile as compile_step
    box = compile_step.compile_box(p.extra["build"], src=p.extra["src"])
    read_inside(box, p.extra["secrets"], p.marker)
    # and the compile's sccache server's sandbox
    argv, _env = compile_step._server_box(p.extra["build"], None, src=p.extra["src"])(["true"], {}, False)
    assert str(p.extra["secrets"]) not in " ".join(map(str, argv)), argv
