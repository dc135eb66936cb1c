"""Issue 41 item 4: no code of the tree writes a compiler-cache entry that a build of another commit reads.

The red team's malicious commit ran a CMake custom command in the compile sandbox, where the
compiler cache was writable: it stored a backdoored object under the key of the clean commit's
compile, and a later build of the clean commit got a hit and shipped it. Replayed here on the
sample tree, through the harness's build chain (configure and compile, sccache as the launcher):

1. the clean commit C builds (its entries land in the cache);
2. commit M of the same tree adds a custom command that plants a file in every compiler cache
   dir it can see and overwrites every entry there;
3. C builds again from an empty build dir.

The cache is per tree and commit (build_steps.launcher.cache_env): M's build writes its own
partition only, so C's second build reads none of M's writes and is still all hits (the
development build's speed where the commit is the same). Before, all three used one dir: M's
plant is there when C reads it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selftest.conftest import HARNESS_ROOT, host_opencv
from selftest.fixtures_build import copy_sample_tree

POISON_SH = r"""#!/bin/sh
# the malicious commit: poison whatever compiler cache this step can write
out="$1"; : > "$out"
for d in "$SCCACHE_DIR" "$CCACHE_DIR"; do
  [ -n "$d" ] && [ -d "$d" ] || continue
  echo "planted by M" > "$d/POISON-M" 2>/dev/null && echo "planted $d" >> "$out"
  find "$d" -type f ! -name 'POISON-*' 2>/dev/null | while read -r f; do
    printf 'POISON' > "$f" 2>/dev/null && echo "poisoned $f" >> "$out"
  done
done
echo "poison ran" >> "$out"
"""

POISON_CMAKE = r"""
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/poison.txt
  COMMAND sh ${CMAKE_SOURCE_DIR}/poison.sh ${CMAKE_BINARY_DIR}/poison.txt)
add_custom_target(poison_step DEPENDS ${CMAKE_BINARY_DIR}/poison.txt)
add_dependencies(mxnet poison_step)
"""


def _git(src: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(src), "-c", "user.email=selftest@example.invalid", "-c", "user.name=selftest",
                    *args], check=True, capture_output=True)


def _build(src: Path, build: Path, env: dict) -> str:
    cmd = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
           "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests" / "test_build_chain.py"),
           "-k", "test_compile_produced_an_elf_libmxnet", f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2",
           *host_opencv([f"--build-dir={build}", "--compiler-launcher=sccache"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(src.parent), timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


def _cache_of(out: str) -> tuple[Path, int, int]:
    """The sccache dir the build used and its hits and misses (the compile's summary line)."""
    m = re.search(r"sccache: (\d+) requests, (\d+) hits, (\d+) misses .*\[Local disk: \"?([^\"\]]+)\"?\]", out)
    assert m, out[-3000:]
    return Path(m.group(4)), int(m.group(2)), int(m.group(3))


@pytest.mark.slow
def test_a_commit_cannot_poison_the_cache_another_commit_reads(tmp_path):
    src = copy_sample_tree(tmp_path / "src")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    env.pop("SCCACHE_SERVER_PORT", None)
    env["SCCACHE_DIR"] = str(tmp_path / "sccache")  # this test's own cache, not the machine's

    clean = _build(src, tmp_path / "build-c", env)
    c_cache, _hits, c_misses = _cache_of(clean)
    assert c_misses > 0  # C filled its cache

    (src / "poison.sh").write_text(POISON_SH)
    (src / "CMakeLists.txt").write_text((src / "CMakeLists.txt").read_text() + POISON_CMAKE)
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "M: a custom command")
    _build(src, tmp_path / "build-m", env)
    said = (tmp_path / "build-m" / "poison.txt").read_text()
    assert "poison ran" in said and "planted" in said, said  # the attack ran and wrote its cache

    _git(src, "checkout", "-q", "HEAD~1")
    shutil.rmtree(tmp_path / "build-c")  # from an empty build dir at the same path: hits, if the cache serves
    again = _build(src, tmp_path / "build-c", env)
    cache, hits, misses = _cache_of(again)
    assert cache == c_cache
    planted = sorted(str(p) for p in cache.rglob("POISON-*"))
    assert planted == [], f"C's build reads a cache that M wrote: {planted}\n{said}"
    assert f"poisoned {cache}" not in said and f"planted {cache}" not in said, said
    assert misses == 0 and hits > 0, again[-3000:]  # still all hits: the commit's own partition
