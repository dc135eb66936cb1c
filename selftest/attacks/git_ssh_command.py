"""``core.sshCommand`` in the tree's .git/config is the program git runs for an ssh remote: the
preflight's ``ls-remote`` of an ssh ``origin`` runs it (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    marker = tmp / "fired"
    git(tree, "remote", "add", "origin", "ssh://git@example.invalid/mxnet.git")
    git(tree, "config", "core.sshCommand", str(payload(tmp, marker)))
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    # a caller whose environment names no GIT_SSH_COMMAND: the repo's config decides
    git(p.extra["tree"], "ls-remote", "origin", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import gitops
    try:
        gitops.remote_tags(p.extra["tree"], "origin")
    except gitops.GitError:
        pass  # example.invalid does not resolve: the real ssh was tried and failed
