"""``remote.origin.receivepack`` in the tree's .git/config names the program git runs to write the
remote: publish's tag push would run the tree's program (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, bare_remote, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    remote = bare_remote(tree, tmp / "remote.git")
    git(tree, "tag", "-a", "v1", "-m", "v1")
    marker = tmp / "fired"
    git(tree, "config", "remote.origin.receivepack", str(payload(tmp, marker)))
    return Plant(tmp, marker, {"tree": tree, "remote": remote})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "push", "-q", "origin", "refs/tags/v1", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import publish
    proc = publish._run(publish.Command("push", ("git", "push", "origin", "refs/tags/v1"), p.extra["tree"]))
    assert proc.returncode == 0, proc.stderr
    assert "v1" in git(p.extra["remote"], "tag", "--list").stdout
