"""The filesystem under the build: can it be written, how much is free, and a full disk in words.

A full or read-only disk reaches the harness as ``OSError`` from its own records, as
"No space left on device" in a compiler's output, or (worst) as a consequence that names
something else: a CMake try-compile that could not write its object says "The Fortran compiler
is not able to compile a simple test program". Each is said here one way: "no space left on
<filesystem>", with the free space and the path.
"""
from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

GIB = 1 << 30
MIB = 1 << 20
#: Below this much free space a failed configure or compile is taken to be the disk's doing
#: (a try-compile's object, a log line or an archive member did not fit): compilers say so only
#: in logs the harness does not show (CMakeConfigureLog.yaml) or not at all.
NEARLY_FULL = 64 * MIB
#: What compilers, CMake and ninja print on ENOSPC (strerror(ENOSPC) and glibc's spelling).
NO_SPACE_TEXT = ("No space left on device", os.strerror(errno.ENOSPC))


def existing(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (a build dir is made by configure)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def mount_of(path: Path) -> tuple[str, str]:
    """(mount point, filesystem type) of ``path``, from /proc/self/mounts (longest prefix)."""
    target = os.path.realpath(existing(path))
    best = ("/", "")
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return best
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        if (target == point or target.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[0]):
            best = (point, parts[2])
    return best


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(existing(path)).free


def human(size: float) -> str:
    return f"{size / GIB:.1f} GiB" if size >= GIB else f"{size / MIB:.1f} MiB"


def filesystem_name(path: Path) -> str:
    point, fstype = mount_of(path)
    return f"{point} ({fstype})" if fstype else point


#: (directory, what moves it) of the places a run writes, registered by the harness (the build
#: dir, the cache, the venv dir); TMPDIR is always known. The advice for a full or read-only
#: disk names the one a path is under.
_PLACES: dict[Path, str] = {}


def place(directory: Path, moved_by: str) -> None:
    """Register ``directory`` as a place the run writes, moved elsewhere by ``moved_by``."""
    _PLACES[Path(directory).absolute()] = moved_by


def forget_places() -> None:
    _PLACES.clear()


def tmpdir(env: Mapping[str, str] | None = None) -> Path:
    """The TMPDIR the sandbox and the compilers use: ``TMPDIR`` as set (in ``env``, else this
    process's environment), else tempfile's. Not ``tempfile.gettempdir()`` alone: it silently skips
    a TMPDIR it cannot write and answers /tmp, so a full or missing TMPDIR was measured as /tmp
    and a full one blamed on the build dir (issue 42)."""
    given = (env if env is not None and "TMPDIR" in env else os.environ).get("TMPDIR")
    return Path(given) if given else Path(tempfile.gettempdir())


def tmpdir_refusal() -> str:
    """One line when TMPDIR is missing or cannot be written ("" when it can)."""
    path = tmpdir()
    if not path.is_dir():
        return (f"TMPDIR={path} does not exist (or is not a directory): the compilers and the sandbox "
                "write their temporaries there. Create it, or set TMPDIR to a writable directory (unset: /tmp)")
    why = writable(path)
    if why:
        return (f"TMPDIR={path} cannot be written ({why}): the compilers and the sandbox write their "
                "temporaries there. Set TMPDIR to a writable directory with free space (unset: /tmp)")
    return ""


#: the variables that move the user's cache directory (~/.cache: the harness cache, sccache's, pip's)
CACHE_MOVERS = "MXNET_HARNESS_CACHE=DIR (or XDG_CACHE_HOME=DIR for every cache under ~/.cache)"


def user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def moved_by(path: Path) -> str:
    """The option or variable that moves ``path`` (the innermost registered place it is under)."""
    path = Path(path).absolute()
    places = {user_cache().absolute(): "XDG_CACHE_HOME", **_PLACES, tmpdir().absolute(): "TMPDIR"}
    under = [p for p in places if path == p or p in path.parents]
    return places[max(under, key=lambda p: len(p.parts))] if under else "--build-dir=DIR"


def advice_for(path: Path) -> str:
    """What to do about a full or read-only filesystem under ``path``, naming what moves it."""
    how = moved_by(path)
    if how.startswith("--"):
        return f"Free space there, or pass {how} on a larger writable filesystem"
    if how == "MXNET_HARNESS_CACHE":
        return f"Free space there, or set {CACHE_MOVERS} on a larger writable filesystem"
    return f"Free space there, or set {how}=DIR on a larger writable filesystem"


def no_space(path: Path, kept: bool = True) -> str:
    """The one sentence for a full disk under ``path`` (``kept``: a step failed, the finished
    ones are kept for the re-run)."""
    return (f"no space left on {filesystem_name(path)}: {human(free_bytes(path))} free at {path}. "
            f"{advice_for(path)}; then re-run" + (" (the finished steps are kept)" if kept else ""))


def full_one(paths: Iterable[str | os.PathLike[str] | None], *texts: str) -> Path | None:
    """Which of ``paths`` (build dir, TMPDIR, cache, in that order) a failed step ran out of
    space on: the first that is (nearly) full now; else, when the output says "No space left on
    device", the first the failing line names (gcc's ``error writing to /tmp/ccX.s``), else the
    first; None when nothing says the disk was full."""
    candidates = [Path(p) for p in paths if p is not None]
    for p in candidates:
        try:
            if free_bytes(p) < NEARLY_FULL:
                return p
        except OSError:
            continue
    lines = [line for text in texts for line in text.splitlines() if says_no_space(line)]
    if not lines:
        return None
    for p in candidates:
        for line in lines:
            written = line.split(": No space left")[0].split()[-1:]  # the path the tool failed to write
            if written and (written[0].startswith(str(p) + "/") or written[0].startswith(str(p.resolve()) + "/")):
                return p
    return candidates[0] if candidates else None


def is_no_space(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def says_no_space(text: str) -> bool:
    return any(t in text for t in NO_SPACE_TEXT)


def disk_was_full(path: Path, *texts: str) -> bool:
    """Whether a failed step under ``path`` failed for lack of space: its output says so, or the
    filesystem is (nearly) full now."""
    try:
        nearly_full = free_bytes(path) < NEARLY_FULL
    except OSError:
        nearly_full = False
    return nearly_full or any(says_no_space(t) for t in texts)


def writable(directory: Path) -> str | None:
    """None when a file can be made in ``directory`` (or where it would be made), else why not.

    Tried, not inferred from permission bits: for root ``access(W_OK)`` ignores the mode, and
    the mode says nothing of a read-only mount."""
    where = existing(directory)
    try:
        fd, name = tempfile.mkstemp(prefix=".harness-write-test-", dir=where)
    except OSError as exc:
        return f"{exc.strerror.lower() if exc.strerror else exc} ({filesystem_name(where)})"
    os.close(fd)
    os.unlink(name)
    return None


def tree_size(path: Path) -> int:
    """Bytes in the files under ``path`` (what an existing build dir already holds)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total
