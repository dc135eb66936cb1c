"""``tag.gpgSign`` and ``gpg.program`` in the tree's .git/config: publish's annotated ``git tag``
would sign with the tree's program (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    marker = tmp / "fired"
    git(tree, "config", "tag.gpgSign", "true")
    git(tree, "config", "gpg.program", str(payload(tmp, marker)))
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "tag", "-a", "v1", "-m", "v1", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import publish
    proc = publish._run(publish.Command("tag", ("git", "tag", "-a", "v1", "-m", "v1", "HEAD"), p.extra["tree"]))
    assert proc.returncode == 0, proc.stderr
