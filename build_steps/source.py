"""The MXNet source tree: which tree to build, and is it complete enough to build.

An MXNet checkout with uninitialised submodules fails deep inside CMake with messages that do
not name the cause (an empty 3rdparty/tvm gives only "No SOURCES given to target: nnvm"), so
the tree is checked first. Submodules are judged by what the build reads (SUBMODULE_NEEDS, the
rule as data), not by git's bookkeeping: a vendored copy without git metadata (a source archive)
is fine, an empty one is refused with what CMake would say, and one at another commit than the
superproject pins is listed with both commits (a wrong oneDNN snapshot otherwise fails silently
at step ~22 with "'avx10_2_512' is not a member of 'dnnl::cpu_isa'").
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, TypedDict

from . import gitops
from .errors import UsageError
from .once import JsonRecord

#: The fork's submodule paths, for a tree without .gitmodules (a source archive may lack it).
KNOWN_SUBMODULES = ("3rdparty/dmlc-core", "3rdparty/ps-lite", "3rdparty/dlpack", "3rdparty/googletest",
                    "3rdparty/tvm", "3rdparty/onnx-tensorrt", "3rdparty/nvidia_cub", "3rdparty/libzip",
                    "3rdparty/intgemm", "3rdparty/onednn")


@dataclass(frozen=True)
class SubmoduleNeed:
    """One submodule the build reads, and what happens when it is not there."""
    path: str
    #: the part the build reads, relative to ``path`` ("" = any content)
    reads: str
    #: the CMake toggle that brings it in; None = every build, whatever the toggles
    when: str | None
    #: what CMake or the compiler says without it (measured on the fork at 3f1389053)
    consequence: str
    #: files the build names in it (its CMakeLists.txt for add_subdirectory, a header the
    #: sources include): a submodule without them is as good as empty, whatever else it holds
    files: tuple[str, ...] = ()


#: The fork's needs, read from its CMakeLists.txt and include/ links (selftests check them against
#: the real tree). onednn is needed even with USE_ONEDNN=OFF: include/onednn/*.h link into it and
#: the mxnet target globs include/*.h, so CMake lists the dangling links as sources.
SUBMODULE_NEEDS = (
    SubmoduleNeed("3rdparty/dmlc-core", "", None,
                  "configure passes (CMakeLists.txt skips add_subdirectory without 3rdparty/dmlc-core/cmake) "
                  "and the compile stops at its first step: 'dmlc/base.h: No such file or directory'",
                  files=("include/dmlc/base.h",)),
    SubmoduleNeed("3rdparty/dlpack", "", None,
                  "configure passes and the compile stops: 'dlpack/dlpack.h: No such file or directory'",
                  files=("include/dlpack/dlpack.h",)),
    SubmoduleNeed("3rdparty/googletest", "", None,
                  "CMake stops at add_subdirectory(3rdparty/googletest): 'The source directory ... does "
                  "not contain a CMakeLists.txt file'", files=("CMakeLists.txt",)),
    SubmoduleNeed("3rdparty/tvm", "nnvm", None,
                  "the nnvm sources come from 3rdparty/tvm/nnvm; CMake stops with only "
                  "'No SOURCES given to target: nnvm'"),
    SubmoduleNeed("3rdparty/onednn", "", None,
                  "include/onednn/*.h link into it, so even with USE_ONEDNN=OFF CMake stops at "
                  "add_library(mxnet ...) with 'Cannot find source file: include/onednn/dnnl.h'",
                  files=("CMakeLists.txt",)),
    SubmoduleNeed("3rdparty/intgemm", "", "USE_INTGEMM",
                  "CMake stops at add_subdirectory(3rdparty/intgemm): 'The source directory ... does "
                  "not contain a CMakeLists.txt file'", files=("CMakeLists.txt",)),
    SubmoduleNeed("3rdparty/ps-lite", "", "USE_DIST_KVSTORE",
                  "CMake stops at add_subdirectory(3rdparty/ps-lite)", files=("CMakeLists.txt",)),
    SubmoduleNeed("3rdparty/onnx-tensorrt", "", "USE_TENSORRT",
                  "the TensorRT build reads its headers and prebuilt libraries"),
)
#: The fork's CMake defaults of the toggles above (cmake_dependent_option/option in CMakeLists.txt).
TOGGLE_DEFAULTS = {"USE_INTGEMM": platform.machine() in ("x86_64", "AMD64"),
                   "USE_DIST_KVSTORE": False, "USE_TENSORRT": False}


@dataclass(frozen=True)
class UnpublishedPin:
    """A pinned commit that ``git submodule update`` cannot fetch, and the snapshot that builds instead."""
    pinned: str
    url: str
    substitute: str
    why: str


#: The fork pins dmlc-core at a commit of smolix/dmlc-core that was never pushed; upstream
#: dmlc-core 5295de94 compiles with the fork (the fixture tree builds with it).
UNPUBLISHED_PINS = {
    "3rdparty/dmlc-core": UnpublishedPin(
        pinned="c46a5c7c", url="https://github.com/dmlc/dmlc-core", substitute="5295de94",
        why="the fork pins c46a5c7c, which is not published on its remote"),
}

FIX = "git submodule update --init --recursive"


@dataclass(frozen=True)
class SubmoduleState:
    path: str
    #: "repo" (its own git metadata), "vendored" (content, no git metadata), "empty"
    kind: str
    #: the commit the superproject records (its gitlink), None when the tree has no git record
    pinned: str | None
    #: the commit checked out in the submodule, None when it has no git metadata
    actual: str | None

    @property
    def mismatch(self) -> bool:
        return bool(self.pinned and self.actual and self.pinned != self.actual)


class SubmoduleMismatch(TypedDict):
    """A submodule at another commit than the one the tree pins (SourceInfo's JSON carries it)."""
    path: str
    pinned: str | None
    actual: str | None


@dataclass(frozen=True)
class SourceInfo(JsonRecord):
    root: Path
    commit: str | None
    branch: str | None
    dirty_paths: list[str] = field(default_factory=list)
    submodule_warnings: list[str] = field(default_factory=list)
    #: submodules at another commit than the pinned one: {"path", "pinned", "actual"}
    submodule_mismatches: list[SubmoduleMismatch] = field(default_factory=list)


def is_mxnet_tree(path: Path) -> bool:
    path = Path(path)
    return (path / "CMakeLists.txt").is_file() and (path / "python" / "setup.py").is_file()


def resolve_source(option_value: Path | None, cwd: Path | None = None) -> Path:
    """``--mxnet-src`` when given, else the current directory if it is an MXNet tree."""
    if option_value is not None:
        path = Path(option_value).resolve()
        if not is_mxnet_tree(path):
            raise UsageError(f"--mxnet-src {path}: not an MXNet source tree (needs CMakeLists.txt "
                             "and python/setup.py); pass the root of an MXNet checkout")
        return path
    cwd = Path(cwd or Path.cwd()).resolve()
    if is_mxnet_tree(cwd):
        return cwd
    raise UsageError(
        f"no --mxnet-src given and the current directory {cwd} is not an MXNet source tree (no "
        "CMakeLists.txt + python/setup.py): pass --mxnet-src=PATH (e.g. --mxnet-src=$HOME/mxnet), or "
        "--wheel=PATH to audit an existing wheel without building")


def _empty(path: Path) -> bool:
    """No content the build could read: `rm -rf dir/*` leaves the dotfiles (.git, .gitignore,
    .github/), which do not count."""
    return not path.is_dir() or not any(not p.name.startswith(".") for p in path.iterdir())


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "?"


def submodule_paths(root: Path) -> list[str]:
    """The submodule paths .gitmodules declares (KNOWN_SUBMODULES when the tree has none)."""
    gm = Path(root) / ".gitmodules"
    if gm.is_file():
        out = gitops.run(root, "config", "-f", str(gm.resolve()), "--get-regexp", r"^submodule\..*\.path$")
        paths = [line.split(None, 1)[1].strip() for line in out.stdout.splitlines() if " " in line]
        if paths:
            return paths
    return list(KNOWN_SUBMODULES)


def include_links(root: Path, submodules: Iterable[str]) -> dict[str, list[str]]:
    """{submodule path: [links under include/ that point into it]}: the needs no toggle turns off."""
    root = Path(root)
    found: dict[str, list[str]] = {}
    inc = root / "include"
    if not inc.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(inc):
        for name in dirnames + filenames:
            link = Path(dirpath) / name
            if not link.is_symlink():
                continue
            target = os.path.normpath(os.path.join(dirpath, os.readlink(link)))
            rel = os.path.relpath(target, root)
            for sub in submodules:
                if rel == sub or rel.startswith(sub + "/"):
                    found.setdefault(sub, []).append(str(link.relative_to(root)))
    return found


def needed_submodules(root: Path, defines: Mapping[str, object] | None = None) -> dict[str, str]:
    """{submodule path: what the build does without it} for a configure with ``defines``.

    A toggle not in ``defines`` takes the fork's CMake default. Links under include/ into a
    submodule make it needed whatever the toggles (the fork's include/onednn).
    """
    defines = defines or {}
    needs: dict[str, str] = {}
    for need in SUBMODULE_NEEDS:
        if need.when is not None:
            value = defines.get(need.when, TOGGLE_DEFAULTS.get(need.when, False))
            if not _on(value):
                continue
        needs[need.path] = need.consequence
    paths = set(submodule_paths(root)) | {n.path for n in SUBMODULE_NEEDS}
    for sub, links in include_links(root, sorted(paths)).items():
        needs.setdefault(sub, f"{len(links)} link(s) under include/ point into it ({links[0]}, ...): "
                              "CMake or the compiler stops at the first one")
    return needs


def _on(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().upper() in ("ON", "1", "TRUE", "YES", "Y")


def submodule_state(root: Path, path: str) -> SubmoduleState:
    """What sits at ``path``: its own repo, a vendored copy, or nothing; pinned and actual commits."""
    root = Path(root)
    sub = root / path
    pinned = None
    tree = gitops.run(root, "ls-tree", "HEAD", "--", path)
    if tree.returncode == 0:
        parts = tree.stdout.split()
        if len(parts) >= 3 and parts[0] == "160000":
            pinned = parts[2]
    if _empty(sub):
        return SubmoduleState(path, "empty", pinned, None)
    if not (sub / ".git").exists():
        # No git metadata of its own (a source archive, a vendored copy): git -C would answer
        # with the superproject's HEAD, so the commit is unknown, not read.
        return SubmoduleState(path, "vendored", pinned, None)
    head = gitops.run(sub, "rev-parse", "HEAD")
    return SubmoduleState(path, "repo", pinned, head.stdout.strip() if head.returncode == 0 else None)


def _unpublished(path: str, pinned: str | None) -> UnpublishedPin | None:
    pin = UNPUBLISHED_PINS.get(path)
    if pin and (pinned is None or pinned.startswith(pin.pinned)):
        return pin
    return None


def _way_through(root: Path, path: str, pin: UnpublishedPin) -> str:
    return (f"{pin.why}, so `{FIX}` cannot fill it: fill it from {pin.url} instead, "
            f"`git clone {pin.url} {root / path} && git -C {root / path} checkout {pin.substitute}` "
            f"(it builds with this tree); the run then lists {path} as at another commit and goes on")


def check_source_tree(root: Path, defines: Mapping[str, object] | None = None) -> SourceInfo:
    """Layout and submodule check before anything is configured.

    A needed submodule that is empty (or lacks the part the build reads) is a UsageError naming
    what CMake would say and the fix; a vendored copy without git metadata is fine; a submodule
    at another commit than the pinned one is listed in the result's warnings (the build goes on).
    ``defines`` are the -D values the configure will use (toggles decide the optional needs).
    """
    root = Path(root)
    for rel in ("CMakeLists.txt", "python/setup.py"):
        if not (root / rel).is_file():
            raise UsageError(f"{root} is not an MXNet source tree: {rel} is missing")

    missing = missing_submodules(root, defines)
    if missing:
        raise UsageError(missing_text(root, missing))
    states = {p: submodule_state(root, p)
              for p in sorted(set(submodule_paths(root)) | set(needed_submodules(root, defines)))}

    warnings: list[str] = []
    mismatches: list[SubmoduleMismatch] = []
    for path, state in states.items():
        if not state.mismatch:
            continue
        mismatches.append({"path": path, "pinned": state.pinned, "actual": state.actual})
        warnings.append(_mismatch_text(root, state))
    commit = branch = None
    dirty = []
    head = gitops.run(root, "rev-parse", "HEAD")
    if head.returncode == 0:
        commit = head.stdout.strip()
        branch = gitops.run(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() or None
        dirty = dirty_tracked_paths(root)
    return SourceInfo(root=root, commit=commit, branch=branch, dirty_paths=dirty,
                      submodule_warnings=warnings, submodule_mismatches=mismatches)


def missing_submodules(root: Path, defines: Mapping[str, object] | None = None) -> dict[str, str]:
    """{path: why} of every submodule the build needs that is empty or lacks the part the
    build reads (empty: nothing to build from, whether or not git sees the emptying)."""
    root = Path(root)
    needs = {n.path: n for n in SUBMODULE_NEEDS}
    missing = {}
    for path, consequence in needed_submodules(root, defines).items():
        need = needs.get(path)
        part = need.reads if need else ""
        lacks = [f for f in (need.files if need else ()) if not (root / path / f).is_file()]
        if _empty(root / path):
            missing[path] = f"empty or missing: {consequence}"
        elif part and _empty(root / path / part):
            missing[path] = f"has no {part}/ directory: {consequence}"
        elif lacks:
            missing[path] = f"lacks {', '.join(lacks)}, which the build reads: {consequence}"
    return missing


def missing_text(root: Path, missing: Mapping[str, str]) -> str:
    """The refusal for ``missing`` (missing_submodules): each one, the fix, and the way through
    for a pin that ``git submodule update`` cannot fetch."""
    ways = []
    for path in missing:
        pin = _unpublished(path, submodule_state(root, path).pinned)
        if pin:
            ways.append(f"  {path}: {_way_through(root, path, pin)}")
    lines = [f"  {s}: {why}" for s, why in missing.items()]
    return (f"MXNet source tree {root} lacks submodules the build needs:\n" + "\n".join(lines)
            + f"\nrun `{FIX}` in {root} and try again" + ("\n" + "\n".join(ways) if ways else ""))


def _mismatch_text(root: Path, state: SubmoduleState) -> str:
    path = state.path
    text = (f"{path} is at {_short(state.actual)}, the superproject pins {_short(state.pinned)}: "
            "a wrong snapshot can fail deep in the compile")
    substitute = accepted_substitute(state)
    if substitute:
        return text + f" (accepted: {substitute.why}; {substitute.substitute} is the snapshot known to build)"
    if gitops.run(root / path, "cat-file", "-e", f"{state.pinned}^{{commit}}").returncode != 0:
        pin = _unpublished(path, state.pinned)
        return text + (f" (the pinned commit is not in {path}'s history"
                       + (f": {pin.why}; {pin.substitute} is the snapshot known to build" if pin else "")
                       + ")")
    return text + f" (`git -C {root / path} checkout {_short(state.pinned)}` or `{FIX}` restores it)"


def accepted_substitute(state: SubmoduleState) -> UnpublishedPin | None:
    """The allow-list entry when ``state`` is the known substitute for an unpublished pin."""
    pin = UNPUBLISHED_PINS.get(state.path)
    if pin and state.pinned and state.actual and state.pinned.startswith(pin.pinned) \
            and state.actual.startswith(pin.substitute):
        return pin
    return None


def mismatch_refusals(root: Path) -> list[str]:
    """For a release: every submodule at another commit than pinned, unless it is an accepted
    substitute (UNPUBLISHED_PINS); the release would not be the commit it is stamped with."""
    root = Path(root)
    refusals = []
    for path in submodule_paths(root):
        state = submodule_state(root, path)
        if state.mismatch and not accepted_substitute(state):
            refusals.append(_mismatch_text(root, state) + ". A release is built at the pinned commits: "
                            f"run `{FIX}` in {root}, or pass --allow-dirty for a development build "
                            "(the run then cannot publish)")
    return refusals


def dirty_tracked_paths(root: Path) -> list[str]:
    """Changed tracked paths, as ``XY path``; a submodule whose only change is its commit is not
    one of them (check_source_tree lists it with both commits, mismatch_refusals judges it)."""
    root = Path(root)
    out = gitops.run(root, "status", "--porcelain=v2", "--untracked-files=no", "--", ".").stdout
    dirty = []
    for line in out.splitlines():
        fields = line.split(" ")
        if line.startswith(("1 ", "2 ")) and len(fields) > 2:
            sub = fields[2]
            if sub.startswith("S") and sub[2] == "." and sub[1] == "C":
                continue
            # porcelain v1's "XY path" form: "1" entries have 8 fields before the path, "2" 9
            dirty.append(f"{fields[1]} {line.split(' ', 8 if line[0] == '1' else 9)[-1]}")
        elif line.strip():
            dirty.append(line)
    # git's status leaves submodules' insides to gitops (never recursing into their own config)
    said = {d.split(" ", 1)[1] for d in dirty}
    dirty += [f".M {p}" for p in gitops.dirty_submodules(root) if p not in said]
    return dirty


#: what the harness itself writes into a tree (the wheel's place, build_steps' BuildPaths.dist):
#: never a source, so never counted as the tree's untracked files
HARNESS_OUTPUTS = ("dist/",)


def untracked_paths(root: Path, prefix: str = "") -> list[str]:
    """Untracked files that git does not ignore, in the tree and (recursively) in each submodule
    with git metadata of its own, relative to the tree; the harness's own dist/ is left out.

    A release is built from its commit, but a CMake glob compiles whatever matches: an untracked
    .cc under the fork's src/ went into a release stamped with the clean commit (issue 42)."""
    root = Path(root)
    out = gitops.run(root, "ls-files", "--others", "--exclude-standard", "-z", "--", ".")
    if out.returncode != 0:
        return []
    found = [prefix + p for p in out.stdout.split("\0") if p]
    if not prefix:
        found = [p for p in found if not p.startswith(HARNESS_OUTPUTS)]
    for sub in submodule_paths(root) if (root / ".gitmodules").is_file() else ():
        if (root / sub / ".git").exists():
            found += untracked_paths(root / sub, f"{prefix}{sub}/")
    return found
