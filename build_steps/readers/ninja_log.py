"""Where a build's time went, from Ninja's own record of it (``<build>/.ninja_log``).

Ninja appends one line per output of each finished command: start and end in milliseconds from
that ninja process's start, the output's mtime, the output path and the command's hash (log
format v5 to v7, tab-separated). A command with several outputs writes one line each with the same
times and hash, so lines are grouped into commands by (start, end, hash).

Ninja may rewrite ("recompact") the whole log when it starts a build; the compile step therefore
notes where the log ended before the build (:func:`log_position`) and reads what came after. When
the file was replaced in between, the whole log is read and the result says so.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: How many commands the summary names.
SLOWEST = 10


@dataclass(frozen=True)
class NinjaCommand:
    #: the first output ninja logged for the command (an object file, the library)
    target: str
    seconds: float


def log_position(build_dir: Path) -> tuple[int, int] | None:
    """(inode, size) of the build's ``.ninja_log`` now, or None when there is none yet."""
    try:
        st = os.stat(Path(build_dir) / ".ninja_log")
    except OSError:
        return None
    return st.st_ino, st.st_size


def read_commands(build_dir: Path, since: tuple[int, int] | None = None) -> tuple[list[NinjaCommand], bool]:
    """The commands ninja logged after ``since`` (a :func:`log_position`; None: there was no log),
    and whether they are this build's alone (False: ninja replaced the log in between, so it is read
    whole and earlier builds' commands are in it)."""
    path = Path(build_dir) / ".ninja_log"
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            # no log before the build: all of it is this build's
            incremental = since is None or (since[0] == st.st_ino and since[1] <= st.st_size)
            if since is not None and incremental:
                fh.seek(since[1])
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return [], False
    seen: dict[tuple[int, int, str], NinjaCommand] = {}
    for line in data.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) < 5:
            continue
        try:
            start, end = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        key = (start, end, parts[4])
        if key not in seen:  # the first output names a multi-output command
            seen[key] = NinjaCommand(target=parts[3], seconds=max(0, end - start) / 1000.0)
    return list(seen.values()), incremental


def build_time(commands: list[NinjaCommand], cpu_seconds: float | None = None,
               whole_log: bool = False) -> dict[str, Any]:
    """The compile step's time record: the slowest commands, their sum, and the CPU time."""
    slowest = sorted(commands, key=lambda c: c.seconds, reverse=True)[:SLOWEST]
    return {
        "commands": len(commands),
        "command_seconds": round(sum(c.seconds for c in commands), 3),
        "cpu_seconds": round(cpu_seconds, 1) if cpu_seconds is not None else None,
        "slowest_steps": [{"target": c.target, "seconds": c.seconds} for c in slowest],
        "whole_log": whole_log,
    }


def describe(record: Mapping[str, Any] | None, wall_seconds: float | None = None) -> list[str]:
    """The summary's lines for a compile's time record (empty when there is none)."""
    if not record or not record.get("commands"):
        return []
    head = f"compile time: {record['commands']} commands took {record['command_seconds']:.0f}s in sum"
    if record.get("cpu_seconds") is not None:
        head += f", {record['cpu_seconds']:.0f}s of CPU"
        if wall_seconds:
            head += f" ({record['cpu_seconds'] / wall_seconds:.1f} cores busy on average over {wall_seconds:.0f}s)"
    if record.get("whole_log"):
        head += " (ninja rewrote its log: earlier runs' commands are counted too)"
    lines = [head + "; slowest:"]
    lines += [f"  {s['seconds']:8.1f}s  {s['target']}" for s in record.get("slowest_steps", [])]
    return lines
