"""Refusals made before configure: the states that would otherwise fail after hours of compile.

A release build of the fork is ~1300 steps. A dirty tree fails the clean-tree gate at the end, an
arch list without sm_100 fails the arch gate at the end, and an arch nvcc cannot build
(``compute_70`` on CUDA 13) fails at step ~521; an emptied submodule fails CMake with a message
that does not name it, a read-only build dir fails every write, and a disk too small for the
build fills at some step with a misleading error. Each is known before CMake runs, so each is
refused here, together, in one message.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from . import filesystem, source
from .cuda_root import find_nvcc_home
from .errors import HarnessError
from .profiles import Arch, ArchSpec, missing_release_archs


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


def build_dir_refusals(build_dir: Path, profile) -> list[str]:
    """A build dir that cannot be written, or whose filesystem cannot hold the build.

    The need is the profile's measured ``build_space_gib``; what an existing build dir already
    holds counts towards it (a resumed build needs only the rest)."""
    build_dir = Path(build_dir)
    why = filesystem.writable(build_dir)
    if why:
        return [f"the build dir {build_dir} cannot be written ({why}): pass --build-dir=DIR on a "
                "writable filesystem (the default build dir is inside the source tree)"]
    need = int(profile.build_space_gib * filesystem.GIB)
    if not need:
        return []
    free = filesystem.free_bytes(build_dir)
    if free >= need:
        return []
    have = filesystem.tree_size(build_dir) if build_dir.is_dir() else 0  # only when short: a walk
    if free + have >= need:
        return []
    held = f" (its {filesystem.human(have)} already built count towards that)" if have else ""
    return [f"{filesystem.human(free)} free on {filesystem.filesystem_name(build_dir)} for the build dir "
            f"{build_dir}; a {profile.name} build needs {filesystem.human(need)}{held}. Free space "
            "there, or pass --build-dir=DIR on a larger filesystem"]


def refusals(src: Path, profile, arch: Arch, cmake_defines: dict, *, release: bool,
             allow_dirty: bool, build_dir: Path | None = None) -> list[str]:
    """Every reason not to start this build, as sentences naming the fix (empty: go ahead).

    ``arch``: the run's archs. One chosen by an MXNET_CUDA_ARCH override or --cuda-arch=native is a
    declared development build (its gate fails and it cannot publish), so the release-matrix
    refusal does not apply; nvcc is asked about the list that is built.
    ``build_dir``: checked for writability and free space (build_dir_refusals)."""
    problems = []
    # An empty submodule is refused dirty or not: nothing can build it, and git sees an emptied
    # vendored copy as deleted files, which would name only the symptom.
    missing = source.missing_submodules(src, {**profile.configure_flags, **cmake_defines})
    if missing:
        problems.append(source.missing_text(src, missing))
    if build_dir is not None:
        problems += build_dir_refusals(build_dir, profile)
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
        if release and arch.is_release_choice:
            missing = missing_release_archs(profile, arch.requested)
            if missing:
                problems.append(
                    f"the arch list leaves out {', '.join(missing)} of the {profile.name} release list "
                    f"{profile.cuda_arch}: those GPUs would get no kernel image. Drop --cuda-arch, or for "
                    "a development build pass --cmake-define=MXNET_CUDA_ARCH=LIST (the run then cannot publish)")
        problems += unsupported_archs(arch.built, nvcc_for_build(cmake_defines))
    return problems
