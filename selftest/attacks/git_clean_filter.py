"""A clean filter the tree's .git/config defines and its .gitattributes applies to every file:
``git status`` re-hashes a file whose stat changed through the filter, so the source check ran it
(and a filter that lies hides a modified file) (issue 41, 1)."""
from __future__ import annotations

import os
from pathlib import Path

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree", {"CMakeLists.txt": "project(mxnet)\n", ".gitattributes": "* filter=lfs2\n"})
    marker = tmp / "fired"
    script = payload(tmp, marker)
    git(tree, "config", "filter.lfs2.clean", f"{script} && cat")
    # the same bytes, a new mtime: git must look at the content again
    st = (tree / "CMakeLists.txt").stat()
    os.utime(tree / "CMakeLists.txt", (st.st_atime + 10, st.st_mtime + 10))
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "status", "--porcelain", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import gitops
    from build_steps.source import dirty_tracked_paths
    gitops.tracked_changes(p.extra["tree"])
    dirty_tracked_paths(p.extra["tree"])
