"""``remote.origin.uploadpack`` in the tree's .git/config names the program git runs to read the
remote: publish's preflight (``ls-remote``) would run the tree's program (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, bare_remote, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    bare_remote(tree, tmp / "remote.git")
    git(tree, "tag", "-a", "v0", "-m", "v0")
    git(tree, "push", "-q", "origin", "refs/tags/v0")
    marker = tmp / "fired"
    git(tree, "config", "remote.origin.uploadpack", str(payload(tmp, marker)))
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "ls-remote", "--tags", "origin", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import gitops
    assert gitops.remote_tags(p.extra["tree"], "origin") == ["v0"], "the remote must still be read"
