"""One harness run per directory: a lock held for the whole run, with its holder named.

Two runs on one build dir re-configure under each other's compile, build the same objects into
one interleaved log, and the second one's interrupt kills the first one's compilers; two runs on
one ``--venv-dir`` reinstall and delete the venv under each other. So the run that reports
(the xdist controller, or the only process) takes a lock beside the directory before anything
starts and keeps it until the session ends, and a second run is refused at once, naming the
holder's pid and start time.

The lock is a ``flock`` (filelock's UnixFileLock): the kernel drops it when its holder dies,
however it dies, so a lock is never stale. What can be stale is the holder's note beside it
(``.owner``, written after the lock is taken): a note of a pid that is gone means the last run
was killed (SIGKILL, a lost machine) before it could clean up, and the takeover is said.
The lock sits *beside* the directory, not inside it: ``--fresh`` deletes the build dir, and a
lock file deleted while held would let a third run lock a new file of the same name.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import UsageError


@dataclass
class HeldLock:
    lock: FileLock
    owner: Path
    #: what the run should say: a takeover of a dead run's lock, else ""
    note: str = ""

    def release(self) -> None:
        try:
            self.owner.unlink(missing_ok=True)
        finally:
            self.lock.release()


def lock_path(directory: Path) -> Path:
    directory = Path(directory)
    return directory.parent / f".{directory.name}.harness-lock"


def _holder(owner: Path) -> dict:
    try:
        return json.loads(owner.read_text())
    except (OSError, ValueError):
        return {}


def _describe(holder: dict) -> str:
    if not holder.get("pid"):
        return "another harness run (its pid is not recorded yet)"
    return (f"pid {holder['pid']}, started {holder.get('started', '?')}"
            + (f": {holder['command']}" if holder.get("command") else ""))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def take(directory: Path, what: str, fix: str) -> HeldLock:
    """Lock ``directory`` for this process's run, or raise UsageError naming the holder.

    ``what`` names the directory in the message (``build dir``, ``--venv-dir``), ``fix`` says
    what to do instead. The caller must ``release()`` the result when the run ends."""
    path = lock_path(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = path.with_suffix(".owner")
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise UsageError(f"{what} {directory} is in use by another harness run ({_describe(_holder(owner))}). "
                         + fix) from None
    stale = _holder(owner)
    note = ""
    if stale.get("pid") and stale["pid"] != os.getpid():
        gone = "no longer running" if not _alive(stale["pid"]) else "no longer holding it"
        note = (f"{what} {directory}: took over the lock of an earlier run ({_describe(stale)}), "
                f"which is {gone}: it was stopped without cleaning up")
    owner.write_text(json.dumps({"pid": os.getpid(),
                                 "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                 "command": " ".join(sys.argv)[:300]}))
    return HeldLock(lock, owner, note)
