"""A malicious commit's custom command stored a backdoored object in the compiler cache, under the
key of the clean commit's compile; the clean commit's next build read it (issue 41 item 4). Here
commit M's step (in the compile's sandbox, with the cache env a build of M gets) plants an entry
in every cache dir it can write; then the clean commit C's step looks for it in the dir its own
build reads, and records it when it finds it. (The build-chain replay on the sample tree is
selftest/test_compiler_cache_poison.py.)"""
from __future__ import annotations

import subprocess
from pathlib import Path

from selftest.attacks._payload import Plant, git, repo

POISON = ('for d in "$SCCACHE_DIR" "$CCACHE_DIR"; do [ -d "$d" ] && echo backdoor > "$d/entry-of-C" 2>/dev/null; '
          'done; true')
READ = 'for d in "$SCCACHE_DIR" "$CCACHE_DIR"; do cat "$d/entry-of-C" >> "$MARKER" 2>/dev/null; done; true'


def plant(tmp: Path) -> Plant:
    tree = repo(tmp / "tree", {"CMakeLists.txt": "project(mxnet)\n"})
    clean = git(tree, "rev-parse", "HEAD").stdout.strip()
    (tree / "CMakeLists.txt").write_text("project(mxnet)\nadd_custom_command(...)\n")
    git(tree, "commit", "-qam", "M")
    (tmp / "out").mkdir()
    return Plant(tmp, tmp / "out" / "fired", {"tree": tree, "clean": clean, "cache": tmp / "sccache",
                                      "ccache": tmp / "ccache"})


def _step(script: str, cache_env: dict, marker: Path) -> None:
    from build_steps import sandbox
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    try:
        sandbox.configure(True, hidden=[])
        _readable, writable = sandbox.cache_dirs(cache_env)  # as configure.build_box binds them
        argv, env = sandbox.wrap(["sh", "-c", script], {"PATH": "/usr/bin:/bin", "MARKER": str(marker),
                                                        **cache_env}, writable=[*writable, marker.parent])
        subprocess.run(argv, env=env, capture_output=True, timeout=60, check=True)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved


def _base(p: Plant) -> dict:
    return {"SCCACHE_DIR": str(p.extra["cache"]), "CCACHE_DIR": str(p.extra["ccache"])}


def without_fix(p: Plant) -> None:
    """One cache dir for every build, as before."""
    for d in _base(p).values():
        Path(d).mkdir(parents=True, exist_ok=True)
    _step(POISON, _base(p), p.marker)
    _step(READ, _base(p), p.marker)


def with_harness(p: Plant) -> None:
    from unittest import mock

    from build_steps import launcher
    tree = p.extra["tree"]
    with mock.patch.dict("os.environ", _base(p)):
        _step(POISON, launcher.cache_env(tree), p.marker)        # a build of M
        git(tree, "checkout", "-q", p.extra["clean"])
        _step(READ, launcher.cache_env(tree), p.marker)          # the next build of C
    if p.marker.exists() and not p.marker.read_text():
        p.marker.unlink()  # the step's redirection made it, empty: nothing was read
