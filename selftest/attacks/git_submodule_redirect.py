"""From inside the acceptance-shard sandbox (the tree writable, only its top .git masked), the
wheel's tests rewrite a submodule's ``.git`` file to point at a gitdir they made, whose config
names an fsmonitor: the harness's next ``git status`` of the tree recursed into the submodule
and ran it outside the sandbox (issue 41, 1)."""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from selftest.attacks._payload import Plant, git, payload, repo


def plant(tmp: Path) -> Plant:
    from build_steps import sandbox
    if sandbox.probe() is not None:
        pytest.skip("bwrap is not usable here: the shard sandbox cannot be entered")
    sub = repo(tmp / "sub-origin", {"include/x.h": "int x;\n"})
    tree = repo(tmp / "tree")
    git(tree, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "3rdparty/sub")
    git(tree, "commit", "-q", "-m", "add submodule")
    marker = tmp / "fired"
    script = payload(tmp, marker)
    # what a shard's test writes, run in the shard's own sandbox (build_steps.acceptance.venv.shard_box)
    inside = (
        "set -e; cd 3rdparty/sub; rm -f .git; mkdir -p ../.pytest_cache/g; "
        "git init -q --separate-git-dir ../.pytest_cache/g/sub.git .; "
        "git -c user.name=t -c user.email=t@t add -A; git -c user.name=t -c user.email=t@t commit -qm x; "
        f"git config core.fsmonitor {shlex.quote(str(script))}")
    argv, env = sandbox.wrap(["sh", "-c", inside], None, writable=[tree], masked=[tree / ".git"], cwd=tree)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "gitdir:" in (tree / "3rdparty/sub/.git").read_text()
    assert not marker.exists()
    return Plant(tmp, marker, {"tree": tree})


def without_fix(p: Plant) -> None:
    git(p.extra["tree"], "status", "--porcelain", check=False)


def with_harness(p: Plant) -> None:
    from build_steps import gitops, source
    gitops.tracked_changes(p.extra["tree"])
    source.dirty_tracked_paths(p.extra["tree"])
    source.submodule_state(p.extra["tree"], "3rdparty/sub")
