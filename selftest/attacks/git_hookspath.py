"""core.hooksPath in the tree's .git/config names a directory of the tree's own hooks: the
``reference-transaction`` hook runs on every ref update, so publish's ``git tag`` ran it (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    marker = tmp / "fired"
    hooks = tree / "tools" / "hooks"
    hooks.mkdir(parents=True)
    payload(hooks, marker, "reference-transaction")
    git(tree, "config", "core.hooksPath", str(hooks))
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "tag", "-a", "v1", "-m", "v1")


def with_harness(p: Plant) -> None:
    from build_steps import publish
    tree = p.extra["tree"]
    proc = publish._run(publish.Command("tag", ("git", "tag", "-a", "v1", "-m", "v1", "HEAD"), tree))
    assert proc.returncode == 0, proc.stderr
    assert "v1" in git(tree, "tag", "--list").stdout
