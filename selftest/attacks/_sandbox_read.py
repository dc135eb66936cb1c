"""Shared by the bind attacks: a secret under a place every sandbox hides (the host's /tmp), and a
read of it from inside the harness's own configure/compile sandbox."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SECRET = "ghp_attack_corpus_secret\n"


def secrets(tmp: Path) -> Path:
    """A dir of credentials (a stand-in for /root: gh token, report.key, .netrc)."""
    from build_steps import sandbox
    if sandbox.probe() is not None:
        pytest.skip(f"no sandbox here: {sandbox.probe()}")
    d = tmp / "root-secrets"
    (d / ".config" / "gh").mkdir(parents=True)
    (d / ".config" / "gh" / "hosts.yml").write_text(SECRET)
    return d


def read_inside(box: dict, secret_dir: Path, marker: Path) -> None:
    """Read the secret from inside the sandbox ``box`` describes; the marker records a success."""
    import os
    from build_steps import sandbox
    # the path goes in the environment: a path on the command line is one the sandbox binds
    # (sandbox.path_args), which is not what is tested here
    argv, env = sandbox.wrap(["sh", "-c", 'cat "$ATTACK_READ"'],
                             {**os.environ, "ATTACK_READ": str(secret_dir / ".config" / "gh" / "hosts.yml")}, **box)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if SECRET.strip() in proc.stdout:
        marker.write_text(f"read from inside the sandbox: {proc.stdout}")


def cache_plant(tmp: Path, cache: str) -> "Plant":
    """A tree, a secrets dir and a build dir whose CMakeCache.txt is ``cache`` (``{secrets}`` and
    ``{src}`` filled in): what the tree's CMake could have written there."""
    from selftest.attacks._payload import Plant
    secret_dir = secrets(tmp)
    src = tmp / "tree"
    (src / "src").mkdir(parents=True)
    build = tmp / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text(cache.format(secrets=secret_dir, src=src))
    return Plant(tmp, tmp / "fired", {"src": src, "build": build, "secrets": secret_dir})
