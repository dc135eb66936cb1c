"""The whole publish path against a tree whose .git carries every hook at once: ``core.fsmonitor``
(ran 2 times in ``mxnet-release publish``, where it saw GH_TOKEN), a ``pre-push`` hook (ran
during the tag push; from there it copied report.key) and a ``reference-transaction`` hook:
preflight, plan and execute with GH_TOKEN set and a recorded ``gh`` (issue 41, 1)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from selftest.attacks._payload import Plant, git, payload

TOKEN = "ghp_the_operators_token"
VERSION = "2.0.0+cu13.bw.20260614.1"


def plant(tmp: Path) -> Plant:
    from selftest.fixtures_publish import make_release_repo
    rel = make_release_repo(tmp / "release")
    marker = tmp / "fired"
    script = payload(tmp, marker)
    git(rel.repo, "config", "core.fsmonitor", str(script))
    for hook in ("pre-push", "reference-transaction", "post-checkout"):
        payload(rel.repo / ".git" / "hooks", marker, hook)
    wheel = tmp / "mxnet_cu13-2.0.0-py3-none-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    return Plant(tmp, marker, {"rel": rel, "wheel": wheel})


def without_fix(p: Plant) -> None:
    repo, env = p.extra["rel"].repo, {"GH_TOKEN": TOKEN}
    git(repo, "status", "--porcelain", env=env, check=False)
    git(repo, "tag", "-a", "v" + VERSION, "-m", "x", env=env)
    git(repo, "push", "-q", "origin", f"refs/tags/v{VERSION}", env=env, check=False)
    assert TOKEN in p.evidence()


def with_harness(p: Plant) -> None:
    from build_steps import publish
    from build_steps.profile_data import PROFILES
    from selftest.fixtures_publish import _GH
    rel = p.extra["rel"]
    bindir = p.root / "gh-bin"
    bindir.mkdir()
    (bindir / "gh").write_text(_GH.format(python=sys.executable, log=str(p.root / "gh-calls.jsonl")))
    (bindir / "gh").chmod(0o755)
    saved = {k: os.environ.get(k) for k in ("PATH", "GH_TOKEN")}
    os.environ.update(PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", GH_TOKEN=TOKEN)
    try:
        state = publish.preflight(rel.repo, "origin", dry_run=False, yes=True)
        release = publish.resolve_release_version(state, PROFILES["cuda"], explicit=VERSION)
        facts = publish.ReleaseFacts(features=("CUDA",), sass=("sm_90",), ptx=(), commits=(state.head,))
        plan = publish.plan_release(state, release, PROFILES["cuda"], facts, p.extra["wheel"])
        assert publish.execute(plan).endswith("v" + VERSION)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert "v" + VERSION in rel.remote_tags(), "the release itself must still be published"
