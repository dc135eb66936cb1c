"""The harness's writes into directories the build can write (issue 41, 3).

The build dir, its ``harness-logs`` and the package staging dir are writable inside the sandboxes
of configure, compile and ``setup.py``: their code can replace a log the harness appends to with a
symbolic link (``compile.log`` -> the harness's own ``.venv/.../x.pth``, which then runs at every
start) or a hard link to a file of the harness's. So a log there is opened here only: the
directory that holds it is opened without following a link (``O_NOFOLLOW|O_DIRECTORY``, relative
to its parent, which the harness named), the file relative to that directory (``dir_fd``, so no
path component is looked up twice), ``O_NOFOLLOW``, and it must be a plain file with one link.
A planted link is refused in one line and nothing is written.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, Any

from .errors import PlantedLink, describe_link


def _refuse(path: Path, what: str) -> PlantedLink:
    return PlantedLink(f"refusing to write {path}: it is {what}, which only the build's own code could have "
                       "planted there; nothing was written (delete it, or re-run with --fresh)")


def open_log(path: Path, mode: str = "a", **text: Any) -> IO[Any]:
    """Open ``path`` (a log under a build-writable dir) for ``mode`` ``"a"`` or ``"w"`` (``"ab"``,
    ``"wb"``: binary), never through a link; its directory is made when missing."""
    path = Path(path)
    if mode.rstrip("b") not in ("a", "w"):
        raise ValueError(f"open_log: mode {mode!r}")
    parent = os.open(path.parent.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            os.mkdir(path.parent.name, 0o755, dir_fd=parent)
        except FileExistsError:
            pass
        try:
            dfd = os.open(path.parent.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _refuse(path.parent, describe_link(path.parent)) from None
            raise
    finally:
        os.close(parent)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_APPEND if mode[0] == "a" else 0)
        try:
            fd = os.open(path.name, flags, 0o644, dir_fd=dfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):  # a link; a directory; a FIFO/socket
                raise _refuse(path, describe_link(path)) from None
            raise
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise _refuse(path, "not a plain file" if not stat.S_ISREG(st.st_mode)
                      else f"a hard link to a file with {st.st_nlink} names")
    if mode[0] == "w":
        os.ftruncate(fd, 0)  # only now: truncating before the checks would empty the link's target
    return os.fdopen(fd, mode, **text)

