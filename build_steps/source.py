"""The MXNet source tree: which tree to build, and is it complete enough to build.

An MXNet checkout with uninitialised submodules fails deep inside CMake with messages that do
not name the cause (an empty 3rdparty/tvm gives only "No SOURCES given to target: nnvm"), so
the tree is checked first and every missing submodule is named with the fix.
"""
from __future__ import annotations

import platform
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import UsageError

SUBMODULES = ("3rdparty/dmlc-core", "3rdparty/dlpack", "3rdparty/onednn", "3rdparty/googletest",
              "3rdparty/intgemm", "3rdparty/tvm")
#: intgemm is only built on x86_64.
X86_ONLY = ("3rdparty/intgemm",)
#: what each submodule is for, so the message says why it matters
_WHY = {"3rdparty/tvm": "the nnvm sources come from 3rdparty/tvm/nnvm; without them CMake stops "
                        "with only 'No SOURCES given to target: nnvm'"}
FIX = "git submodule update --init --recursive"


@dataclass(frozen=True)
class SourceInfo:
    root: Path
    commit: str | None
    branch: str | None
    dirty_paths: list = field(default_factory=list)
    submodule_warnings: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        d["root"] = str(self.root)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "SourceInfo":
        return cls(**{**d, "root": Path(d["root"])})


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


def _git(root: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def _empty(path: Path) -> bool:
    return not path.is_dir() or not any(p.name != ".git" for p in path.iterdir())


def check_source_tree(root: Path) -> SourceInfo:
    """Layout and submodule check; raises UsageError naming every missing submodule and the fix."""
    root = Path(root)
    for rel in ("CMakeLists.txt", "python/setup.py"):
        if not (root / rel).is_file():
            raise UsageError(f"{root} is not an MXNet source tree: {rel} is missing")

    wanted = [s for s in SUBMODULES if s not in X86_ONLY or platform.machine() in ("x86_64", "AMD64")]
    missing = {s: "missing or empty" for s in wanted if _empty(root / s)}
    if "3rdparty/tvm" not in missing and _empty(root / "3rdparty/tvm/nnvm"):
        missing["3rdparty/tvm"] = "has no nnvm/ directory"

    warnings = []
    status = _git(root, "submodule", "status")
    if status.returncode == 0:
        for line in status.stdout.splitlines():
            if not line.strip():
                continue
            flag, rest = line[0], line[1:].split()
            path = rest[1] if len(rest) > 1 else ""
            if path in wanted and flag == "-":
                missing.setdefault(path, "not initialised (git submodule status: '-')")
            elif path in wanted and flag == "+":
                warnings.append(f"{path} is checked out at a different commit than the superproject records")

    if missing:
        lines = [f"  {s}: {why}" + (f" ({_WHY[s]})" if s in _WHY else "") for s, why in missing.items()]
        raise UsageError(
            f"MXNet source tree {root} has uninitialised submodules the build needs:\n"
            + "\n".join(lines) + f"\nrun `{FIX}` in {root} and try again")

    commit = branch = None
    dirty = []
    head = _git(root, "rev-parse", "HEAD")
    if head.returncode == 0:
        commit = head.stdout.strip()
        branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() or None
        dirty = [l for l in _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".")
                 .stdout.splitlines() if l.strip()]
    return SourceInfo(root=root, commit=commit, branch=branch, dirty_paths=dirty,
                      submodule_warnings=warnings)
