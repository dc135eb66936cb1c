"""The tree's .git/config points ``origin`` at a bare repository the tree ships, with a
``pre-receive`` hook: git runs the remote side of a local push on this machine, hooks included,
and ``-c`` overrides do not reach it (git clears them for a local transport) (issue 41, 1)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    remote = tree / "third_party" / "mirror.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    marker = tmp / "fired"
    payload(remote / "hooks", marker, "pre-receive")
    git(tree, "remote", "add", "origin", str(remote))
    git(tree, "tag", "-a", "v1", "-m", "v1")
    return Plant(tmp, marker, {"tree": tree, "remote": remote})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "push", "-q", "origin", "refs/tags/v1", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import publish
    publish._run(publish.Command("push", ("git", "push", "origin", "refs/tags/v1"), p.extra["tree"]))
