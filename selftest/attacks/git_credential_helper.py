"""``credential.helper`` in the tree's .git/config: git asks it for the remote's password, and a
helper of the tree's gets the request (and can answer with anything) (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

import pytest

from selftest.attacks._payload import Plant, git, payload, repo, unauthorized_server


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    marker = tmp / "fired"
    git(tree, "remote", "add", "origin", unauthorized_server() + "/mxnet.git")
    git(tree, "config", "credential.helper", f"!{payload(tmp, marker)}")
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "ls-remote", "origin", check=False, env={"GIT_TERMINAL_PROMPT": "0"})


def with_harness(p: Plant) -> None:
    from build_steps import gitops
    with pytest.raises(gitops.GitError, match="transport 'http' not allowed"):
        gitops.remote_tags(p.extra["tree"], "origin")
    # and where plain http were allowed, the tree's helper is still never asked
    proc = gitops.run(p.extra["tree"], "ls-remote", "origin", extra_config=[("protocol.http.allow", "always")],
                      timeout=60)
    assert proc.returncode != 0 and "could not read Username" in proc.stderr, proc.stderr
