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
from dataclasses import dataclass
from pathlib import Path

from . import filesystem, source
from .cuda_root import find_nvcc_home, wheels_held
from .deterministic_compile import NVCC_UNQUOTABLE
from .errors import HarnessError
from .arch import Arch, ArchSpec, missing_release_archs
from .profile_data import Profile


def nvcc_for_build(cmake_defines: dict[str, str]) -> Path | None:
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


#: what profiles.toml's space_sources counts
SOURCE_SUFFIXES = (".cu", ".cc", ".cpp", ".c")


def source_count(src: Path) -> int:
    """The C/C++/CUDA source files under ``src`` (SOURCE_SUFFIXES), outside ``.git`` and any
    configured build dir (one holding a CMakeCache.txt): the measure space_sources is in."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames
                       if d != ".git" and not os.path.exists(os.path.join(dirpath, d, "CMakeCache.txt"))]
        count += sum(1 for name in filenames if name.endswith(SOURCE_SUFFIXES))
    return count


@dataclass(frozen=True)
class SpaceNeed:
    """One place a build writes: what it is, where, how many bytes it needs, and what moves it."""
    what: str
    path: Path
    need: int
    moved_by: str


def space_needs(src: Path, profile: Profile, build_dir: Path, *, tmp: Path | None = None,
                cache: Path | None = None, cuda_wheels: bool = False,
                compiler_cache: bool = False) -> tuple[int, list[SpaceNeed]]:
    """(the tree's source count, each place's need) for a ``profile`` build of ``src``.

    The build dir's and the compiler cache's figures were measured on the fork's
    ``space_sources`` sources and scale with this tree's (a build dir never below
    ``build_space_min_gib``: its staged libraries and wheel do not shrink with the tree); TMPDIR's
    is per compile in flight, not scaled. The harness cache counts the stack's CUDA wheels only
    for a ``cuda_wheels`` build that does not hold them yet, the objects only for a
    ``compiler_cache`` build. A place whose figure is 0 is not listed."""
    count = source_count(src) if profile.space_sources else 0
    scale = min(1.0, count / profile.space_sources) if profile.space_sources else 1.0
    build_gib = max(profile.build_space_min_gib, profile.build_space_gib * scale) if profile.build_space_gib else 0.0
    cache_gib = profile.cache_space_gib * scale if compiler_cache else 0.0
    if cache is not None and cuda_wheels and profile.cuda is not None and not wheels_held(cache, profile.cuda):
        cache_gib += profile.cuda.wheels_space_gib
    places = [SpaceNeed("the build dir", Path(build_dir), int(build_gib * filesystem.GIB), "--build-dir=DIR"),
              SpaceNeed("TMPDIR", Path(tmp or filesystem.tmpdir()), int(profile.tmp_space_gib * filesystem.GIB),
                        "TMPDIR=DIR")]
    if cache is not None:
        places.append(SpaceNeed("the harness cache", Path(cache), int(cache_gib * filesystem.GIB),
                                "MXNET_HARNESS_CACHE=DIR"))
    return count, [p for p in places if p.need > 0]


def build_dir_refusals(src: Path, build_dir: Path, profile: Profile, *, tmp: Path | None = None,
                       cache: Path | None = None, cuda_wheels: bool = False,
                       compiler_cache: bool = False) -> list[str]:
    """A build dir that cannot be written, or a filesystem the build needs that cannot hold it.

    Each place the build writes has its own need (space_needs); what an existing build dir
    already holds counts towards its need (a resumed build needs only the rest). Places on one
    filesystem add up; each refusal names its filesystem, its figures and what moves each place."""
    build_dir = Path(build_dir)
    why = filesystem.writable(build_dir)
    if why:
        return [f"the build dir {build_dir} cannot be written ({why}): pass --build-dir=DIR on a "
                "writable filesystem (the default build dir is beside the source tree)"]
    count, needs = space_needs(src, profile, build_dir, tmp=tmp, cache=cache, cuda_wheels=cuda_wheels,
                               compiler_cache=compiler_cache)
    by_fs: dict[int, list[SpaceNeed]] = {}
    for place in needs:
        try:
            device = os.stat(filesystem.existing(place.path)).st_dev
        except OSError:
            continue
        by_fs.setdefault(device, []).append(place)
    build = (f"a {profile.name} build of {count} source{'s' if count != 1 else ''}" if profile.space_sources
             else f"a {profile.name} build")
    problems = []
    for group in by_fs.values():
        first = group[0].path
        free = filesystem.free_bytes(first)
        need = sum(p.need for p in group)
        if free >= need:
            continue
        have = sum(filesystem.tree_size(p.path) for p in group
                   if p.what == "the build dir" and p.path.is_dir())  # only when short: a walk
        if free + have >= need:
            continue
        parts = " + ".join(f"{filesystem.human(p.need)} for {p.what} {p.path}" for p in group)
        held = f" (its {filesystem.human(have)} already built count towards that)" if have else ""
        movers = " or ".join(f"pass {p.moved_by}" if p.moved_by.startswith("--") else f"set {p.moved_by}"
                             for p in group)
        if len(group) == 1:
            (place,) = group
            problems.append(f"{filesystem.human(free)} free on {filesystem.filesystem_name(first)} for {place.what} "
                            f"{place.path}; {build} needs {filesystem.human(place.need)}{held}. Free space "
                            f"there, or {movers} on a larger filesystem")
        else:
            problems.append(f"{filesystem.human(free)} free on {filesystem.filesystem_name(first)}; "
                            f"{build} needs {filesystem.human(need)} there ({parts}){held}. "
                            f"Free space there, or {movers} on a larger filesystem")
    return problems


def build_dir_in_tree(src: Path, build_dir: Path) -> str:
    """The refusal of a build dir that is the tree or inside it ("" when it is outside).

    CMake writes ~100 files there, and its own sources (CMakeCUDACompilerId.cu) match a tree's
    GLOB_RECURSE: the fork compiled one into libmxnet (issue 42). Outside the tree, nothing the
    build writes can be globbed as the tree's source."""
    src, build_dir = Path(src).resolve(), Path(build_dir).resolve()
    if build_dir != src and src not in build_dir.parents:
        return ""
    where = "is the source tree" if build_dir == src else "is inside the source tree"
    return (f"the build dir {build_dir} {where} {src}: CMake's files there can be compiled into the "
            f"wheel by the tree's source globs. Pass --build-dir=DIR outside the tree, or leave it "
            f"out for the default beside it")


def path_refusals(places: list[tuple[str, Path, str]], cuda: bool) -> list[str]:
    """One line for each path the build cannot carry: ``places`` is (what, path, what moves it).

    A newline breaks build.ninja (ninja's lexer stops on it, without naming the path) and every
    log line; a CUDA build also hands the tree and build dir to nvcc's host-compiler command line
    inside double quotes (deterministic_compile._for_nvcc), which cannot carry a quote, a backslash,
    ``$`` or a backtick. Spaces work."""
    problems = []
    for what, path, moved_by in places:
        text = str(path)
        if "\n" in text or "\r" in text:
            problems.append(f"{what} {text!r} has a newline, which ninja cannot write into build.ninja: "
                            f"{moved_by} to a path without one")
        elif cuda and what in ("the source tree", "the build dir") and any(c in text for c in NVCC_UNQUOTABLE):
            bad = " ".join(sorted({c for c in text if c in NVCC_UNQUOTABLE}))
            problems.append(f"{what} {text!r} has {bad}, which nvcc's host-compiler command line cannot "
                            f"carry: {moved_by} to a path without it")
    return problems


def cache_refusal(cache: Path, profile: Profile) -> str:
    """One line when a --cuda-from-wheels build must download into a harness cache it cannot write
    ("" when it can, or holds the wheels already). Its default is under HOME (~/.cache): a read-only
    HOME is moved by MXNET_HARNESS_CACHE or XDG_CACHE_HOME, not by --build-dir or TMPDIR."""
    if profile.cuda is None or wheels_held(cache, profile.cuda):
        return ""
    why = filesystem.writable(cache)
    if not why:
        return ""
    return (f"the harness cache {cache} cannot be written ({why}), and this --cuda-from-wheels build "
            f"downloads the CUDA wheels there: set {filesystem.CACHE_MOVERS} to a writable directory")


def untracked_refusal(src: Path) -> str:
    """The refusal of a release tree with untracked files git does not ignore ("" when none)."""
    # sources first, then headers: what a glob compiles
    found = sorted(source.untracked_paths(src),
                   key=lambda p: 0 if p.endswith(SOURCE_SUFFIXES) else 1 if p.endswith((".h", ".cuh")) else 2)
    if not found:
        return ""
    shown = ", ".join(found[:5]) + (f", +{len(found) - 5} more" if len(found) > 5 else "")
    return (f"{src} has {len(found)} untracked file{'s' if len(found) != 1 else ''} that git does not "
            f"ignore ({shown}): the tree's CMake globs may compile them into a wheel stamped with the "
            f"commit. Remove them (`git -C {src} clean -n` lists them), commit them or add them to "
            ".gitignore, or pass --allow-untracked for a development build (the run then cannot publish)")


def refusals(src: Path, profile: Profile, arch: Arch, cmake_defines: dict[str, str], *, release: bool,
             allow_dirty: bool, build_dir: Path | None = None, cache: Path | None = None,
             cuda_wheels: bool = False, compiler_cache: bool = False,
             allow_untracked: bool = False) -> list[str]:
    """Every reason not to start this build, as sentences naming the fix (empty: go ahead).

    ``arch``: the run's archs. One chosen by an MXNET_CUDA_ARCH override or --cuda-arch=native is a
    declared development build (its gate fails and it cannot publish), so the release-matrix
    refusal does not apply; nvcc is asked about the list that is built.
    ``build_dir``: refused in the tree (build_dir_in_tree); checked for writability and free space with TMPDIR and ``cache`` (the harness
    cache, holding the CUDA wheels of a ``cuda_wheels`` build and the objects of a
    ``compiler_cache`` one) (build_dir_refusals)."""
    problems: list[str] = []
    # An empty submodule is refused dirty or not: nothing can build it, and git sees an emptied
    # vendored copy as deleted files, which would name only the symptom.
    missing = source.missing_submodules(src, {**profile.configure_flags, **cmake_defines})
    if missing:
        problems.append(source.missing_text(src, missing))
    places = [("the source tree", Path(src), "move or clone it"), ("TMPDIR", filesystem.tmpdir(), "set TMPDIR")]
    if build_dir is not None:
        places.append(("the build dir", Path(build_dir), "pass --build-dir=DIR"))
    if cache is not None:
        places.append(("the harness cache", Path(cache), "set MXNET_HARNESS_CACHE"))
    bad_paths = path_refusals(places, profile.is_cuda)
    if bad_paths:  # nothing else can be said of a path the build cannot carry
        return problems + bad_paths
    # TMPDIR as the compilers and the sandbox will use it; a missing or unwritable one is its own
    # line, and its space is then not measured (that would be another filesystem's)
    tmp_refused = filesystem.tmpdir_refusal()
    if tmp_refused:
        problems.append(tmp_refused)
    cache_refused = cache_refusal(cache, profile) if cache is not None and cuda_wheels else ""
    if cache_refused:
        problems.append(cache_refused)
    in_tree = build_dir_in_tree(src, build_dir) if build_dir is not None else ""
    if in_tree:
        problems.append(in_tree)
    elif build_dir is not None:
        problems += [p for p in build_dir_refusals(src, build_dir, profile, cache=cache, cuda_wheels=cuda_wheels,
                                                   compiler_cache=compiler_cache)
                     if not (tmp_refused and " for TMPDIR " in p) and not (cache_refused and "harness cache" in p)]
    if release and not allow_untracked:
        untracked = untracked_refusal(src)
        if untracked:
            problems.append(untracked)
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
            left_out = missing_release_archs(profile, arch.requested)
            if left_out:
                problems.append(
                    f"the arch list leaves out {', '.join(left_out)} of the {profile.name} release list "
                    f"{profile.cuda_arch}: those GPUs would get no kernel image. Drop --cuda-arch, or for "
                    "a development build pass --cmake-define=MXNET_CUDA_ARCH=LIST (the run then cannot publish)")
        if not too_old:  # an old nvcc's arch list is not the problem
            problems += unsupported_archs(arch.built, nvcc)
    return problems
