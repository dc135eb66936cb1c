"""Files the run writes for the user (dist/, the JSON report), all or nothing.

Each is written to a temporary name in its own directory and renamed into place, so a reader
never sees half a file and a failure leaves nothing behind. A full or size-limited filesystem is
one message naming the filesystem, what it has free and what the file needs, never a traceback.
The final file gets the permissions the user's umask gives a new file (``mkstemp`` would leave
0600).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any, Callable

from .errors import DigestMismatch, OutputError

#: errors that mean "this filesystem cannot take the file", answered with the space block
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_BLOCK = 1 << 20


def _human(size: int | None) -> str:
    if size is None:
        return "unknown"
    n = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def filesystem_of(path: Path) -> tuple[str, str, int | None]:
    """(mount point, filesystem type, free bytes for this user) of the filesystem holding ``path``."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    mount = path.resolve()
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    fstype = "?"
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[1].replace("\\040", " ") == str(mount):
                fstype = fields[2]  # the last mount on a point is the visible one
    except OSError:
        pass
    try:
        st = os.statvfs(path)
        free = st.f_bavail * st.f_frsize
    except OSError:
        free = None
    return str(mount), fstype, free


def space_message(dest: Path, needed: int | None, cause: str) -> str:
    mount, fstype, free = filesystem_of(Path(dest).parent)
    room = f"at least {_human(needed)}" if needed is not None else "space"
    return (f"cannot write {dest}: {cause}.\n"
            f"  filesystem: {mount} ({fstype}), {_human(free)} free, {_human(needed)} needed\n"
            f"  nothing was left behind; free {room} on {mount} (or write the output elsewhere, or "
            "raise the file-size limit) and run again")


def _umask_mode(base: int = 0o666) -> int:
    mask = os.umask(0)
    os.umask(mask)
    return base & ~mask


def write_atomic(dest: Path, write: Callable[[IO[Any]], object], *, needed: int | None = None, binary: bool = True) -> Path:
    """``write(fh)`` into a temporary file beside ``dest``, then rename it to ``dest``.

    ``needed`` (bytes) is checked against the free space first, so a file that cannot fit is
    refused before a byte is written. Any failure removes the temporary file.
    """
    dest = Path(dest)
    if needed is not None:
        _, _, free = filesystem_of(dest.parent)
        if free is not None and free < needed:
            raise OutputError(space_message(dest, needed, "not enough free space"))
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent)
    except OSError as exc:
        raise _explain(dest, needed, exc) from None
    try:
        with os.fdopen(fd, "wb" if binary else "w") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, dest)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _explain(dest, needed, exc) from None
        raise
    return dest


def _explain(dest: Path, needed: int | None, exc: OSError) -> OutputError:
    if exc.errno in _NO_ROOM:
        return OutputError(space_message(dest, needed, exc.strerror or str(exc)))
    return OutputError(f"cannot write {dest}: {exc.strerror or exc}; nothing was left behind")


def write_json(dest: Path, data: Any) -> Path:
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    return write_atomic(dest, lambda fh: fh.write(text.encode()), needed=len(text.encode()))


def copy_verified(src: Path, dest: Path, sha256: str | None = None) -> Path:
    """Copy ``src`` to ``dest`` atomically; with ``sha256``, the copied bytes must hash to it
    (hashed while copying: the file in ``dest`` is exactly the bytes that were checked)."""
    src = Path(src)
    size = src.stat().st_size

    def write(fh: IO[bytes]) -> None:
        h = hashlib.sha256()
        with open(src, "rb") as inp:
            for block in iter(lambda: inp.read(_BLOCK), b""):
                h.update(block)
                fh.write(block)
        if sha256 is not None and h.hexdigest() != sha256:
            raise DigestMismatch(
                f"{src} changed during the run: its bytes hash to sha256 {h.hexdigest()}, but the run "
                f"verified sha256 {sha256}; {dest} was not written. Run again on a wheel nobody "
                "replaces while the gates run")
    return write_atomic(dest, write, needed=size)


def copy_file(src: Path, dest: Path) -> Path:
    """An atomic copy without a digest (what shutil.copy2 did, all or nothing)."""
    def write(fh: IO[bytes]) -> None:
        # closed here, not by the garbage collector: -W error turned the leak into a crash at exit
        with open(src, "rb") as inp:
            shutil.copyfileobj(inp, fh, _BLOCK)
    return write_atomic(dest, write, needed=Path(src).stat().st_size)
