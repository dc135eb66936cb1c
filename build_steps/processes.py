"""Stopping what a step started: the whole process tree, not only the child the step ran.

A signal to pytest alone never reaches a step's grandchildren: ninja starts each compile in a
process group of its own, CMake's try-compiles and ``python -m build``'s pip run below the one
child ``subprocess`` knows, and ``subprocess.run`` kills only that child on an interrupt. So the
tree below the child is read from /proc and stopped: SIGTERM first (compilers remove their
partial outputs), then SIGKILL for what is left.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Sequence

from .run_as import run_uids

#: Seconds a tree gets to exit on SIGTERM before it is killed. Short: a CI runner or the person
#: at the terminal may follow SIGINT with SIGKILL within seconds.
STOP_GRACE = 0.5


ProcTable = dict[int, tuple[int, str, Path]]


def proc_table() -> ProcTable:
    """pid -> (ppid, executable name, cwd) of this user's processes, from /proc."""
    table: ProcTable = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid not in run_uids():  # as root, its sandboxed steps' too
                continue
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            name = Path(os.readlink(entry / "exe")).name
            cwd = Path(os.readlink(entry / "cwd"))
        except (OSError, ValueError):
            continue
        table[int(entry.name)] = (ppid, name, cwd)
    return table


def descendants(roots: Iterable[int], table: ProcTable) -> list[int]:
    """Every process below ``roots`` in ``table`` (roots excluded)."""
    found: list[int] = []
    frontier = set(roots)
    while frontier:
        children = {pid for pid, (ppid, _n, _c) in table.items() if ppid in frontier}
        children -= set(found) | set(roots)
        found.extend(children)
        frontier = children
    return found


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop_tree(proc: subprocess.Popen[Any] | None, extra_roots: Iterable[int] = (), extra: Iterable[int] = (),
              grace: float = STOP_GRACE) -> None:
    """Stop ``proc`` and everything below it, the processes below ``extra_roots`` (not the
    roots: a compiler cache's server is stopped by its own command) and the pids ``extra``."""
    table = proc_table()
    roots = {proc.pid} if proc is not None else set()
    first = [*roots, *descendants(roots | set(extra_roots), table), *extra]
    signal_all(first, signal.SIGTERM)
    if proc is not None:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    table = proc_table()
    left = [p for p in (*first, *descendants(set(first) | set(extra_roots), table)) if p in table]
    signal_all(left, signal.SIGKILL)
    if proc is not None:
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass


def with_env(key: str, value: str, name: str | None = None) -> list[int]:
    """This user's live processes whose environment has ``key=value`` (a build's private marker:
    whatever inherited it belongs to that build, whoever its parent is now); with ``name``, only
    those running that executable."""
    needle = f"{key}={value}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry.stat().st_uid in run_uids()
                    and needle in (entry / "environ").read_bytes().split(b"\0")
                    and (name is None or Path(os.readlink(entry / "exe")).name == name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def sweep(find: Callable[[], Collection[int]], limit: float = 5.0, quiet_for: float = 0.6) -> None:
    """SIGKILL what ``find()`` returns until it has returned nothing for ``quiet_for`` seconds:
    a compile request already on its way to a server starts its compiler after the first pass."""
    deadline = time.monotonic() + limit
    quiet_since = None
    while time.monotonic() < deadline:
        pids = find()
        if pids:
            signal_all(pids, signal.SIGKILL)
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_for:
            return
        time.sleep(0.1)


def run(cmd: Sequence[str | os.PathLike[str]], **popen_kwargs: Any) -> int:
    """``subprocess.run`` for a step's command (output to a file given in ``popen_kwargs``):
    its exit code; on an interrupt (or any error) its whole tree is stopped before re-raising."""
    proc = subprocess.Popen(cmd, **popen_kwargs)
    try:
        return proc.wait()
    except BaseException:
        stop_tree(proc)
        raise
