"""``core.askPass`` in the tree's .git/config: GIT_TERMINAL_PROMPT=0 (all the old gitops set)
turns off only the terminal, and git still runs the askpass program for a password (issue 41, 1)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant, git, payload, repo, unauthorized_server


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree")
    marker = tmp / "fired"
    git(tree, "remote", "add", "origin", unauthorized_server() + "/mxnet.git")
    git(tree, "config", "core.askPass", str(payload(tmp, marker)))
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "ls-remote", "origin", check=False, env={"GIT_TERMINAL_PROMPT": "0"})


def with_harness(p: Plant) -> None:
    from build_steps import gitops
    proc = gitops.run(p.extra["tree"], "ls-remote", "origin", extra_config=[("protocol.http.allow", "always")],
                      timeout=60)
    assert proc.returncode != 0, proc.stdout
