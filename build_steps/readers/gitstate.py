"""Git state of the MXNet source tree and the commit stamps a build recorded.

The stamp check compares git HEAD with the MXNET_COMMIT_HASH the binary was compiled with. The
binary is the primary witness (the fork only read build files, docs/background.md G2); ``build.ninja`` and
``compile_commands.json`` are a fallback that the report names as such.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .. import gitops
from ..errors import GitError, UsageError

#: MXNET_COMMIT_HASH as CMake writes it into compile commands, with any level of quote escaping.
STAMP_IN_BUILD_FILES = re.compile(r"MXNET_COMMIT_HASH\s*=\s*(?:\\*[\"'])?([0-9a-f]{40}|Unavailable)")
#: How the stamp sits in the binary: a 40-hex string literal in .rodata (matched as a whole string).
STAMP_IN_BINARY = rb"[0-9a-f]{40}"
#: Generated files a build writes into the tree; they do not make it "dirty" (they are untracked).
SHA_RE = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class GitState:
    root: str
    commit: str | None
    branch: str | None = None
    tracked_changes: list[str] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def dirty(self) -> bool:
        return bool(self.tracked_changes)


def _git(root: Path, *args: str) -> str:
    proc = gitops.run(root, *args, timeout=120)
    if proc.returncode != 0:
        raise UsageError(f"--mxnet-src {root}: `git {' '.join(args)}` failed: "
                         f"{(proc.stderr.strip().splitlines() or ['?'])[-1]} (is it a git checkout?)")
    return proc.stdout


def read_git_state(root: Path) -> GitState:
    """HEAD, branch, tracked changes and untracked paths of ``root`` (never raises; errors are recorded)."""
    root = Path(root)
    try:
        commit = _git(root, "rev-parse", "HEAD").strip()
        branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
        # submodules' insides too, each asked on its own (gitops never lets git recurse into them)
        tracked = gitops.tracked_changes(root)
        full = _git(root, "status", "--porcelain", "--untracked-files=normal").splitlines()
    except (UsageError, GitError, OSError, subprocess.TimeoutExpired) as exc:
        return GitState(root=str(root), commit=None, error=str(exc))
    untracked = [ln[3:] for ln in full if ln.startswith("?? ")]
    return GitState(root=str(root), commit=commit, branch=branch, tracked_changes=tracked, untracked=untracked)


@dataclass
class BuildStamps:
    """MXNET_COMMIT_HASH values found in a build tree's files (the fallback witness)."""
    build_dir: str
    sources: dict[str, list[str]] = field(default_factory=dict)   # file -> list of hashes ([] when present without one)

    @property
    def hashes(self) -> list[str]:
        return sorted({h for hs in self.sources.values() for h in hs})


def read_build_stamps(build_dir: Path) -> BuildStamps:
    """Scan ``build.ninja`` and ``compile_commands.json`` of ``build_dir`` for the commit define."""
    build_dir = Path(build_dir)
    stamps = BuildStamps(build_dir=str(build_dir))
    for name in ("build.ninja", "compile_commands.json"):
        path = build_dir / name
        if not path.is_file():
            continue
        found: set[str] = set()
        # Streamed: build.ninja of MXNet is tens of MB.
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if "MXNET_COMMIT_HASH" in line:
                    found.update(STAMP_IN_BUILD_FILES.findall(line))
        stamps.sources[str(path)] = sorted(found)
    return stamps
