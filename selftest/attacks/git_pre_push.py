"""A ``pre-push`` hook in the tree's .git/hooks ran during publish's tag push, with GH_TOKEN in its
environment; from there it copied report.key (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, bare_remote, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    remote = bare_remote(tree, tmp / "remote.git")
    marker = tmp / "fired"
    payload(tree / ".git" / "hooks", marker, "pre-push")
    git(tree, "tag", "-a", "v1", "-m", "v1")
    return Plant(tmp, marker, {"tree": tree, "remote": remote})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "push", "-q", "origin", "refs/tags/v1")


def with_harness(p: Plant) -> None:
    from build_steps import publish
    proc = publish._run(publish.Command("push", ("git", "push", "origin", "refs/tags/v1"), p.extra["tree"]))
    assert proc.returncode == 0, proc.stderr
    assert "v1" in git(p.extra["remote"], "tag", "--list").stdout, "the tag push itself must still work"
