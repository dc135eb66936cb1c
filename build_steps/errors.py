"""The harness's error types.

Each message names the cause and the fix. ``UsageError`` is bad input from the person running the
harness (a wrong path, a non-wheel); ``StepError`` is a build step that failed, carrying its log.
"""
from __future__ import annotations

from pathlib import Path


class HarnessError(Exception):
    """Base class: a failure the harness explains in words, never as a traceback."""


class UsageError(HarnessError):
    """Bad input: a path that does not exist, a file that is not a wheel, an invalid option."""


class WheelError(HarnessError):
    """The wheel itself is unusable: truncated zip, unsafe member names, bad RECORD."""


class StepError(HarnessError):
    """A build step failed. ``log`` is the full log file, ``tail`` its last lines."""

    def __init__(self, step: str, message: str, log: Path | None = None, tail: str = ""):
        self.step = step
        self.log = log
        self.tail = tail
        text = f"[{step}] {message}"
        if tail:
            text += "\n--- last lines of the log ---\n" + tail.rstrip()
        if log is not None:
            text += f"\n(full log: {log})"
        super().__init__(text)


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, or '' when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])
