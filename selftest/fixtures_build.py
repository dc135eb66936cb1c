"""Selftest fixtures: build area.

``sample_tree()`` copies selftest/sample_mxnet to a fresh directory and commits it in a new git
repo (so the commit stamp and the clean-tree check see a real HEAD). The selftests never build
inside the repo's own copy. ``step_counts(build_dir)`` reads the chain's per-step execution log.
``small_fs()`` mounts a real small tmpfs for one test (root only).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

SAMPLE_TREE = Path(__file__).resolve().parent / "sample_mxnet"


def copy_sample_tree(dest: Path, edit=None, date: str | None = None) -> Path:
    """A committed copy of the sample tree at ``dest``; ``edit(path)`` may change it first.
    ``date`` (ISO 8601): the commit's author and committer date, so that two copies are the same
    commit (the reproducible-build selftests)."""
    shutil.copytree(SAMPLE_TREE, dest, symlinks=True, ignore=_ignore_outputs)
    if edit is not None:
        edit(dest)
    git = ["git", "-C", str(dest), "-c", "user.email=selftest@example.invalid", "-c", "user.name=selftest",
           "-c", "init.defaultBranch=main"]
    env = {**os.environ, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "sample tree"], check=True, env=env)
    return dest


def _ignore_outputs(directory, names):
    # The repo's copy may hold outputs of a README main-job run; only sources are copied.
    rel = Path(directory).relative_to(SAMPLE_TREE)
    drop = {n for n in names if n.startswith("build") and rel == Path(".")}
    drop |= {n for n in names if n in ("dist", "__pycache__") or n.endswith(".egg-info")}
    if rel == Path("python"):
        drop |= {n for n in names if n == "build"}
    if rel == Path("python/mxnet"):
        drop |= {n for n in names if n in ("lib", "include", "libmxnet.so", "_build_info.py")}
    return drop


def slow_compile_edit(seconds: float):
    """An edit for ``sample_tree``: the compile gets a step that sleeps ``seconds`` unless stopped.
    Give each test its own odd number: the process checks find the sleep by its argument."""
    def edit(path: Path):
        cm = path / "CMakeLists.txt"
        cm.write_text(cm.read_text() + (
            'add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/slow.stamp\n'
            f'  COMMAND sleep {seconds} COMMAND ${{CMAKE_COMMAND}} -E touch ${{CMAKE_BINARY_DIR}}/slow.stamp)\n'
            'add_custom_target(slow_step DEPENDS ${CMAKE_BINARY_DIR}/slow.stamp)\n'
            'add_dependencies(mxnet slow_step)\n'))
    return edit


def default_build(src: Path, flavor: str = "cuda") -> Path:
    """The build dir a run of ``flavor`` uses for ``src`` without --build-dir (beside the tree)."""
    from build_steps.profile_data import get_profile
    return get_profile(flavor).default_build_dir(Path(src))


def step_counts(build_dir: Path) -> Counter:
    """How often each step ran in ``build_dir`` (configure/compile lines of .harness-steps.log)."""
    log = Path(build_dir) / ".harness-steps.log"
    if not log.exists():
        return Counter()
    return Counter(line.split()[2] for line in log.read_text().splitlines() if len(line.split()) > 2)


@pytest.fixture
def sample_tree(tmp_path):
    """``sample_tree(name="src", edit=None)`` -> path of a fresh committed copy of the sample."""
    def make(name: str = "src", edit=None) -> Path:
        return copy_sample_tree(tmp_path / name, edit)
    return make


@pytest.fixture
def small_fs(tmp_path):
    """``small_fs()``: a real 64 MiB tmpfs, unmounted after the test; ``small_fs.fill(fs, kib)``
    leaves ``kib`` KiB of it free (a filler file takes the rest)."""
    mounts = []

    def make(size_mib: int = 64) -> Path:
        where = tmp_path / f"fs{len(mounts)}"
        where.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(where)], check=True)
        mounts.append(where)
        return where

    def fill(where: Path, free_kib: int) -> None:
        free = shutil.disk_usage(where).free
        with open(where / "filler", "wb") as fh:
            fh.write(b"\0" * max(0, free - free_kib * 1024))
    make.fill = fill
    yield make
    for where in mounts:
        subprocess.run(["umount", "-l", str(where)], check=False)
