"""Reproducible wheels: the same commit gives the same wheel bytes.

``wheel``'s writer (used by setuptools' bdist_wheel) stamps every zip member with
``SOURCE_DATE_EPOCH`` when it is set and writes members in sorted order; without it the stamps
are the files' mtimes, which differ on every build. The harness sets it to the commit time of
the tree (a user's own SOURCE_DATE_EPOCH wins), then checks the wheel: a backend that ignored it
gets its members restamped here, in the order they were written (RECORD stays last).
"""
from __future__ import annotations

import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Callable

from . import deterministic_compile, gitops

#: the earliest time a zip member can carry (1980-01-01)
_ZIP_EPOCH = 315532800


def source_date_epoch(src: Path) -> int | None:
    """The user's SOURCE_DATE_EPOCH, else the commit time of ``src``'s HEAD; None outside git."""
    given = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if given.isdigit():
        return int(given)
    proc = gitops.run(src, "log", "-1", "--format=%ct", "HEAD")
    out = proc.stdout.strip()
    return int(out) if proc.returncode == 0 and out.isdigit() else None


def zip_stamp(epoch: int) -> tuple[int, int, int, int, int, int]:
    """``epoch`` as a zip member reads it back: UTC, seconds in steps of two (the DOS format)."""
    t = time.gmtime(max(epoch, _ZIP_EPOCH))
    return (t[0], t[1], t[2], t[3], t[4], t[5] - t[5] % 2)


def stray_stamps(wheel: Path, epoch: int) -> list[str]:
    """Members whose timestamp is not ``epoch`` (empty when the wheel is stamped throughout)."""
    want = zip_stamp(epoch)
    with zipfile.ZipFile(wheel) as zf:
        return [i.filename for i in zf.infolist() if tuple(i.date_time) != want]


def restamp(wheel: Path, epoch: int) -> None:
    """Rewrite ``wheel`` with every member stamped ``epoch``; contents, order, modes and
    compression unchanged (so RECORD's hashes still hold). Atomic: a temporary file is renamed."""
    wheel = Path(wheel)
    tmp = wheel.with_name(f".{wheel.name}.restamp")
    want = zip_stamp(epoch)
    try:
        with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w") as dst:
            for info in src.infolist():
                out = zipfile.ZipInfo(info.filename, date_time=want)
                out.compress_type = info.compress_type
                out.external_attr = info.external_attr
                out.create_system = 3  # Unix, whatever the building host was
                with src.open(info) as data, dst.open(out, "w", force_zip64=info.file_size > (1 << 31)) as fh:
                    while block := data.read(1 << 20):
                        fh.write(block)
        os.replace(tmp, wheel)
    finally:
        tmp.unlink(missing_ok=True)


def make_reproducible(wheel: Path, epoch: int | None) -> str:
    """Check (and if needed restamp) the built wheel; returns a note for the build log."""
    if epoch is None:
        return ("not a git checkout and no SOURCE_DATE_EPOCH given: the wheel's zip timestamps are "
                "the build's, so rebuilding gives other bytes")
    stray = stray_stamps(wheel, epoch)
    if not stray:
        return f"zip timestamps from SOURCE_DATE_EPOCH={epoch}"
    restamp(wheel, epoch)
    return (f"the build backend ignored SOURCE_DATE_EPOCH for {len(stray)} member(s); restamped "
            f"to {epoch}")


# ---- the compile ------------------------------------------------------------------------------

def launcher_prefix(src: Path, build_dir: Path, python: str | None = None,
                    development: bool = False) -> Callable[[str], list[str]]:
    """``lang -> [commands]`` that start each compile's launcher chain: the flag adder of
    build_steps.deterministic_compile, told the tree and build dir so it can make paths relative.
    ``development``: .cu objects may stay cached by sccache (fast, not reproducible)."""
    script = Path(deterministic_compile.__file__).resolve()
    src, build_dir = Path(src).resolve(), Path(build_dir).resolve()

    def prefix(lang: str) -> list[str]:
        return [python or sys.executable, "-I", "-S", str(script), f"--lang={lang}",
                f"--src={src}", f"--build={build_dir}", *(["--dev"] if development else [])]
    return prefix


#: -D entries for deterministic archives (``ar D``: zero uid/gid/mtime, mode 644) and build-tree
#: RUNPATHs relative to $ORIGIN rather than the build dir's absolute path.
ARCHIVE_DEFINES = {
    **{f"CMAKE_{lang}_ARCHIVE_CREATE": "<CMAKE_AR> qcD <TARGET> <LINK_FLAGS> <OBJECTS>"
       for lang in ("C", "CXX", "CUDA")},
    **{f"CMAKE_{lang}_ARCHIVE_APPEND": "<CMAKE_AR> qD <TARGET> <LINK_FLAGS> <OBJECTS>"
       for lang in ("C", "CXX", "CUDA")},
    **{f"CMAKE_{lang}_ARCHIVE_FINISH": "<CMAKE_RANLIB> -D <TARGET>" for lang in ("C", "CXX", "CUDA")},
    "CMAKE_BUILD_RPATH_USE_ORIGIN": "ON",
}


def compile_env(src: Path) -> dict[str, str]:
    """SOURCE_DATE_EPOCH for the compilers (``__DATE__``/``__TIME__``), {} outside git."""
    epoch = source_date_epoch(src)
    return {"SOURCE_DATE_EPOCH": str(epoch)} if epoch is not None else {}


def compile_summary(src: Path, development: bool = False, launcher: str = "none") -> str:
    """The build's reproducibility, for the summary (a build says which it is)."""
    epoch = source_date_epoch(src)
    if development and launcher == "sccache":
        return ("reproducible compile: NO (development build: .cu objects through sccache, which cannot "
                "take nvcc's --objdir-as-tempdir; a release build compiles them reproducibly)")
    if epoch is None:
        return ("reproducible compile: NO (not a git checkout and no SOURCE_DATE_EPOCH: __DATE__ and "
                "the wheel's timestamps are this build's)")
    return (f"reproducible compile: yes (per-object seeds, prefix maps, ar D, "
            f"SOURCE_DATE_EPOCH={epoch})")
