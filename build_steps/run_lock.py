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
was killed (SIGKILL, a lost machine) before it could clean up. The note records the run's id
(build_steps.supervise: every process the run started carries it), its process group and its
sccache server, so the takeover stops whatever that run left still compiling, names it, and only
then builds.

A build dir's lock lives *inside* the build dir (``.harness-lock``): a run never writes beside it,
which with the default build dir would be the source tree's root. ``--fresh`` therefore empties
the build dir but for its lock (``clear_dir``), since a lock file deleted while held would let a
third run lock a new file of the same name. Other directories (``--venv-dir``, which the venv
step deletes and recreates whole) keep their lock beside them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock, Timeout

from . import filesystem, supervise
from .errors import UsageError

#: The lock of a directory it lives in (a build dir), and its holder's note.
INSIDE = ".harness-lock"


@dataclass
class HeldLock:
    lock: FileLock
    owner: Path
    #: what the run should say: a takeover of a dead run's lock, else ""
    note: str = ""
    #: the directory this run made to hold its lock: removed again if the run put nothing else there
    made: Path | None = None

    def release(self) -> None:
        try:
            self.owner.unlink(missing_ok=True)
        finally:
            self.lock.release()
        if self.made is not None:
            # a run refused before configure leaves no empty build dir behind (in the tree, by default)
            try:
                if {e.name for e in self.made.iterdir()} <= {INSIDE}:
                    (self.made / INSIDE).unlink(missing_ok=True)
                    self.made.rmdir()
            except OSError:
                pass


def lock_path(directory: Path, inside: bool = False) -> Path:
    directory = Path(directory)
    return directory / INSIDE if inside else directory.parent / f".{directory.name}.harness-lock"


def clear_dir(directory: Path) -> None:
    """Delete everything in ``directory`` but its lock (``--fresh`` while the lock is held)."""
    for entry in Path(directory).iterdir():
        if entry.name in (INSIDE, INSIDE + ".owner"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def typed_command() -> str:
    """The command as the user typed it: ``python -m pytest -m release``, not
    ``.../site-packages/pytest/__main__.py -m release`` (what ``sys.argv`` holds under ``-m``)."""
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    if argv and Path(argv[0]).name.startswith("python"):
        argv[0] = Path(argv[0]).name
    elif argv and argv[0].endswith("__main__.py"):
        argv[0] = Path(argv[0]).parent.name
    return " ".join(argv)[:300]


def _holder(owner: Path) -> dict[str, Any]:
    try:
        note: dict[str, Any] = json.loads(owner.read_text())  # the note _write_note wrote
        return note
    except (OSError, ValueError):
        return {}


def _describe(holder: dict[str, Any]) -> str:
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


def take(directory: Path, what: str, fix: str, inside: bool = False) -> HeldLock:
    """Lock ``directory`` for this process's run, or raise UsageError naming the holder.

    ``what`` names the directory in the message (``build dir``, ``--venv-dir``), ``fix`` says
    what to do instead; ``inside``: the lock lives in the directory (made if missing). The
    caller must ``release()`` the result when the run ends. A disk too full or read-only for the
    lock's few bytes is a UsageError naming the filesystem, and leaves no empty note."""
    path = lock_path(directory, inside)
    owner = path.with_name(path.name + ".owner") if inside else path.with_suffix(".owner")
    made = Path(directory) if inside and not Path(directory).exists() else None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path))
        lock.acquire(timeout=0)
    except Timeout:
        raise UsageError(f"{what} {directory} is in use by another harness run ({_describe(_holder(owner))}). "
                         + fix) from None
    except OSError as exc:
        raise UsageError(_cannot_lock(directory, what, exc)) from None
    try:
        note = _take_over(_holder(owner), directory, what)
        _write_note(owner, _record())
    except OSError as exc:
        lock.release()
        raise UsageError(_cannot_lock(directory, what, exc)) from None
    return HeldLock(lock, owner, note, made)


def _write_note(owner: Path, record: dict[str, Any]) -> None:
    """The holder's note, whole or not at all (a full disk leaves no empty note to misread)."""
    tmp = owner.with_name(f"{owner.name}.{os.getpid()}.partial")
    try:
        tmp.write_text(json.dumps(record))
        os.replace(tmp, owner)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _record() -> dict[str, Any]:
    """The holder's note: who, and what a takeover must stop if it dies uncleanly: every process
    carrying its run id, its process group, and its notes (the sccache server) in its tmp dir."""
    sup = supervise.current()
    return {"pid": os.getpid(), "pgid": os.getpgrp(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": typed_command(), "run_id": sup.run_id if sup else None,
            "run_tmp": str(sup.tmp) if sup else None}


def _cannot_lock(directory: Path, what: str, exc: OSError) -> str:
    where = Path(exc.filename) if exc.filename else Path(directory)
    if filesystem.is_no_space(exc):
        return f"cannot lock the {what} {directory}: " + filesystem.no_space(where, kept=False)
    return (f"cannot lock the {what} {directory}: {exc.strerror or exc} "
            f"({filesystem.filesystem_name(where)}). " + filesystem.advice_for(where))


def _take_over(stale: dict[str, Any], directory: Path, what: str) -> str:
    """The note for a takeover of a dead run's lock, after stopping what that run left running."""
    if not stale.get("pid") or stale["pid"] == os.getpid():
        return ""
    gone = "no longer running" if not _alive(stale["pid"]) else "no longer holding it"
    # by the run's id, not its process group: ninja gives each command a group of its own, and a
    # group number of a dead run may be a live stranger's by now
    run_id = stale.get("run_id")
    left = supervise.stop_members(run_id) if isinstance(run_id, str) and re.fullmatch("[0-9a-f]{32}", run_id) else {}
    run_tmp = supervise.run_tmp_of(stale.get("run_tmp"))
    server = supervise.notes_of(run_tmp).get("sccache_server") or {} if run_tmp else {}
    if run_tmp:
        shutil.rmtree(run_tmp, ignore_errors=True)  # its sccache server's nvcc temporaries
    stopped = (f"; stopped what it left running: {supervise.describe(left)}" if left
               else "; nothing of it was still running")
    if server.get("port") and any(name == "sccache" for name in left.values()):
        stopped += f" (its sccache server on port {server['port']} among them)"
    return (f"{what} {directory}: took over the lock of an earlier run ({_describe(stale)}), "
            f"which is {gone}: it was stopped without cleaning up{stopped}")


def register_places(build_dir: Path | None, venv_dir: Path | None) -> None:
    """Where this run writes, each with what moves it: a full or read-only disk's advice."""
    from .cuda_root import default_cache_dir
    filesystem.forget_places()
    filesystem.place(default_cache_dir(), "MXNET_HARNESS_CACHE")
    if build_dir is not None:
        filesystem.place(build_dir, "--build-dir=DIR")
    if venv_dir is not None:
        filesystem.place(venv_dir, "--venv-dir=DIR")


def take_run_locks(build_dir: Path | None, tree: Path | None, venv_dir: Path | None,
                   say: Callable[[str], None]) -> list[HeldLock]:
    """The run's locks on its build dir and its --venv-dir, all or none (UsageError naming the run
    that holds one); ``say`` gets each lock's note as it is taken. A build dir the lock cannot be made in (one that cannot be written, or in the
    source tree) gets none: preflight refuses it, in its words."""
    from .preflight import build_dir_in_tree
    wanted: list[tuple[Path, str, str, bool]] = []
    if build_dir is not None and tree is not None and filesystem.writable(build_dir) is None \
            and not build_dir_in_tree(tree, build_dir):
        wanted.append((build_dir, "build dir",
                       "Two runs on one build dir configure and compile over each other. Wait for it to "
                       "finish (or stop it), or give this run its own --build-dir=DIR", True))
    if venv_dir is not None:
        wanted.append((venv_dir, "--venv-dir",
                       "Two runs sharing a venv would reinstall and delete it under each other. Give this "
                       "run its own --venv-dir (or leave it out for a temporary one), or wait for the "
                       "other run to finish", False))
    held: list[HeldLock] = []
    for directory, what, fix, inside in wanted:
        try:
            held.append(take(directory, what, fix, inside=inside))
        except UsageError:
            release_all(held)
            raise
        if held[-1].note:
            say(f"==> {held[-1].note}")
    return held


def release_all(held: list[HeldLock]) -> None:
    while held:
        held.pop().release()
