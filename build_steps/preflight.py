"""Refusals made before configure: the states that would otherwise fail after hours of compile.

A release build of the fork is ~1300 steps. A dirty tree fails the clean-tree gate at the end, an
arch list without sm_100 fails the arch gate at the end, and an arch nvcc cannot build
(``compute_70`` on CUDA 13) fails at step ~521; an emptied submodule fails CMake with a message
that does not name it, a read-only build dir fails every write, and a disk too small for the
build fills at some step with a misleading error. Each is known before CMake runs, so each is
refused here, together, in one message.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import filesystem, source
from .cuda_root import find_nvcc_home
from .errors import HarnessError
from .arch import Arch, ArchSpec, missing_release_archs


def nvcc_for_build(cmake_defines: dict) -> Path | None:
    """The nvcc this build will run: a CMAKE_CUDA_COMPILER override, else the toolkit's (the
    --cuda-from-wheels root holds a copy of that same nvcc). None when there is none."""
    if cmake_defines.get("CMAKE_CUDA_COMPILER"):
        return Path(cmake_defines["CMAKE_CUDA_COMPILER"])
    try:
        return find_nvcc_home() / "bin" / "nvcc"
    except HarnessError:
        found = shutil.which("nvcc")
        return Path(found) if found else None


def nvcc_virtual_archs(nvcc: Path) -> set[int] | None:
    """The ``compute_XX`` values ``nvcc --list-gpu-arch`` accepts (None when nvcc cannot say)."""
    try:
        proc = subprocess.run([str(nvcc), "--list-gpu-arch"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    archs = {int(w[len("compute_"):]) for w in proc.stdout.split()
             if w.startswith("compute_") and w[len("compute_"):].isdigit()}
    return archs if proc.returncode == 0 and archs else None


def nvcc_version(nvcc: Path) -> tuple[int, int] | None:
    """(major, minor) from ``nvcc --version`` ("Cuda compilation tools, release 13.0, V13.0.88")."""
    try:
        proc = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release (\d+)\.(\d+)", proc.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else None


def version_refusal(nvcc: Path, version: tuple[int, int] | None, minimum: str) -> str:
    """The refusal of an nvcc older than ``minimum`` ("" when it is new enough or cannot say).

    Said before any arch advice: an old nvcc cannot build the release archs, and "drop them from
    the arch list" would send the user to the next refusal ("the arch list leaves out sm_100")."""
    if not minimum or version is None:
        return ""
    want = tuple(int(x) for x in minimum.split("."))
    if version >= want:
        return ""
    return (f"{nvcc} is nvcc {version[0]}.{version[1]}; this build needs nvcc {minimum} or newer. "
            f"Install CUDA {minimum} (or newer) and point CUDA_HOME at it, or pass "
            "--cmake-define=CMAKE_CUDA_COMPILER=PATH to its nvcc")


def unsupported_archs(arch: ArchSpec, nvcc: Path | None) -> list[str]:
    """Archs of ``arch`` this nvcc cannot build, each named with what it supports."""
    if nvcc is None:
        return []
    supported = nvcc_virtual_archs(nvcc)
    if supported is None:
        return []
    bad = [a for a in dict.fromkeys((*arch.sass, *arch.ptx)) if a not in supported]
    if not bad:
        return []
    return [f"{nvcc} cannot build " + ", ".join(f"compute_{a}/sm_{a}" for a in bad)
            + f" (it supports {' '.join(str(a / 10) for a in sorted(supported))}); drop "
            + ("them" if len(bad) > 1 else "it") + " from the arch list"]


def build_dir_refusals(build_dir: Path, profile, *, tmp: Path | None = None, cache: Path | None = None) -> list[str]:
    """A build dir that cannot be written, or a filesystem the build needs that cannot hold it.

    Each place the build writes has its own need from the profile: the build dir its measured
    ``build_space_gib`` (what an existing build dir already holds counts towards it: a resumed
    build needs only the rest), TMPDIR ``tmp_space_gib``, the harness cache (``cache``, when
    this build uses it) ``cache_space_gib``. Places on one filesystem add up; each refusal names
    its filesystem, its figures and what moves each place there."""
    build_dir = Path(build_dir)
    why = filesystem.writable(build_dir)
    if why:
        return [f"the build dir {build_dir} cannot be written ({why}): pass --build-dir=DIR on a "
                "writable filesystem (the default build dir is inside the source tree)"]
    places = [("the build dir", build_dir, profile.build_space_gib, "--build-dir=DIR"),
              ("TMPDIR", Path(tmp or tempfile.gettempdir()), profile.tmp_space_gib, "TMPDIR=DIR"),
              ("the harness cache", cache, profile.cache_space_gib, "MXNET_HARNESS_CACHE=DIR")]
    by_fs: dict = {}
    for what, path, gib, moved_by in places:
        if path is None or not gib:
            continue
        try:
            device = os.stat(filesystem.existing(path)).st_dev
        except OSError:
            continue
        by_fs.setdefault(device, []).append((what, Path(path), int(gib * filesystem.GIB), moved_by))
    problems = []
    for group in by_fs.values():
        first = group[0][1]
        free = filesystem.free_bytes(first)
        need = sum(n for _w, _p, n, _m in group)
        if free >= need:
            continue
        have = sum(filesystem.tree_size(p) for w, p, _n, _m in group
                   if w == "the build dir" and p.is_dir())  # only when short: a walk
        if free + have >= need:
            continue
        parts = " + ".join(f"{filesystem.human(n)} for {w} {p}" for w, p, n, _m in group)
        held = f" (its {filesystem.human(have)} already built count towards that)" if have else ""
        movers = " or ".join(f"set {m}" if not m.startswith("--") else f"pass {m}" for _w, _p, _n, m in group)
        if len(group) == 1:
            what, path, n, _m = group[0]
            problems.append(f"{filesystem.human(free)} free on {filesystem.filesystem_name(first)} for {what} "
                            f"{path}; a {profile.name} build needs {filesystem.human(n)}{held}. Free space "
                            f"there, or {movers} on a larger filesystem")
        else:
            problems.append(f"{filesystem.human(free)} free on {filesystem.filesystem_name(first)}; a "
                            f"{profile.name} build needs {filesystem.human(need)} there ({parts}){held}. "
                            f"Free space there, or {movers} on a larger filesystem")
    return problems


def refusals(src: Path, profile, arch: Arch, cmake_defines: dict, *, release: bool,
             allow_dirty: bool, build_dir: Path | None = None, cache: Path | None = None) -> list[str]:
    """Every reason not to start this build, as sentences naming the fix (empty: go ahead).

    ``arch``: the run's archs. One chosen by an MXNET_CUDA_ARCH override or --cuda-arch=native is a
    declared development build (its gate fails and it cannot publish), so the release-matrix
    refusal does not apply; nvcc is asked about the list that is built.
    ``build_dir``: checked for writability and free space with TMPDIR and ``cache`` (the harness
    cache, when the build uses it) (build_dir_refusals)."""
    problems = []
    # An empty submodule is refused dirty or not: nothing can build it, and git sees an emptied
    # vendored copy as deleted files, which would name only the symptom.
    missing = source.missing_submodules(src, {**profile.configure_flags, **cmake_defines})
    if missing:
        problems.append(source.missing_text(src, missing))
    if build_dir is not None:
        problems += build_dir_refusals(build_dir, profile, cache=cache)
    if release and not allow_dirty:
        # a submodule whose only change is its commit: judged by mismatch_refusals, with both commits
        changed = [line for line in source.dirty_tracked_paths(src)
                   if not any(line[3:] == m or line[3:].startswith(m + "/") for m in missing)]
        if changed:
            shown = ", ".join(line[3:] for line in changed[:5])
            more = len(changed) - 5
            problems.append(
                f"{src} has uncommitted changes to tracked files ({shown}{f', +{more} more' if more > 0 else ''}): "
                "a release is built from a commit. Commit or stash them, or pass --allow-dirty for a "
                "development build (the run then cannot publish)")
        problems += source.mismatch_refusals(src)
    if profile.is_cuda:
        nvcc = nvcc_for_build(cmake_defines)
        too_old = version_refusal(nvcc, nvcc_version(nvcc), profile.nvcc_minimum) if nvcc else ""
        if too_old:
            problems.append(too_old)
        if release and arch.is_release_choice:
            missing = missing_release_archs(profile, arch.requested)
            if missing:
                problems.append(
                    f"the arch list leaves out {', '.join(missing)} of the {profile.name} release list "
                    f"{profile.cuda_arch}: those GPUs would get no kernel image. Drop --cuda-arch, or for "
                    "a development build pass --cmake-define=MXNET_CUDA_ARCH=LIST (the run then cannot publish)")
        if not too_old:  # an old nvcc's arch list is not the problem
            problems += unsupported_archs(arch.built, nvcc)
    return problems
