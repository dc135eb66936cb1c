"""core.fsmonitor in the tree's .git/config runs on every index refresh (``git status``): the verify
run's source check, its provenance (the git state, the commit time) and publish's preflight ran
it, with GH_TOKEN in its environment (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    marker = tmp / "fired"
    git(tree, "config", "core.fsmonitor", str(payload(tmp, marker)))
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "status", "--porcelain", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import gitops
    from build_steps.source import dirty_tracked_paths
    assert gitops.tracked_changes(p.extra["tree"]) == []
    assert dirty_tracked_paths(p.extra["tree"]) == []
    from build_steps import reproducible
    from build_steps.readers.gitstate import read_git_state
    state = read_git_state(p.extra["tree"])
    assert state.error is None and not state.dirty, state
    assert reproducible.source_date_epoch(p.extra["tree"])
