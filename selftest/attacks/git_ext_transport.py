"""The tree's .git/config turns git's ``ext::`` transport on (``protocol.ext.allow=always``) and
points ``origin`` at ``ext::<payload>``: reading the remote runs the command (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

import pytest

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    marker = tmp / "fired"
    git(tree, "remote", "add", "origin", f"ext::{payload(tmp, marker)} %S")
    git(tree, "config", "protocol.ext.allow", "always")
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "ls-remote", "origin", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import gitops
    with pytest.raises(gitops.GitError, match="ext"):
        gitops.remote_tags(p.extra["tree"], "origin")
