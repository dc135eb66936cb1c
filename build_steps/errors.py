"""The harness's error types.

Each message names the cause and the fix. ``UsageError`` is bad input from the person running the
harness (a wrong path, a non-wheel); ``StepError`` is a build step that failed, carrying its log.
"""
from __future__ import annotations

import re
from pathlib import Path


class HarnessError(Exception):
    """Base class: a failure the harness explains in words, never as a traceback."""


class UsageError(HarnessError):
    """Bad input: a path that does not exist, a file that is not a wheel, an invalid option."""


class WheelError(HarnessError):
    """The wheel itself is unusable: truncated zip, unsafe member names, bad RECORD."""


class WheelUnusable(WheelError):
    """The wheel under test could not be extracted: every gate would report the same fault, so
    the run says it once and stops (harness.gates)."""

    step = "wheel"


class StepError(HarnessError):
    """A build step failed. ``log`` is the full log file, ``tail`` what of it to show (usually
    :func:`log_excerpt`: the first error lines with their context, then the last lines)."""

    def __init__(self, step: str, message: str, log: Path | None = None, tail: str = ""):
        self.step = step
        self.log = log
        self.tail = tail
        text = f"[{step}] {message}"
        if tail:
            text += "\n" + (tail.rstrip() if tail.startswith("--- ") else
                            "--- last lines of the log ---\n" + tail.rstrip())
        if log is not None:
            text += f"\n(full log: {log})"
        super().__init__(text)


#: The verdict a gate the host kept from judging is filed under (the ledger, the gate table, the page).
NOT_JUDGED = "not judged"


class NotJudged(HarnessError):
    """The harness could not judge the wheel: the host, not the wheel, failed (an unreachable
    package index, a full disk, a missing tool, a driver below what a gate needs). Never a
    verdict about the wheel: the gate is filed "not judged" (harness.ledger), the run ends ERROR
    with exit 3 (harness.verdicts.NOT_JUDGED_EXIT) unless a gate judged the wheel FAIL, and a
    built wheel stays where the build put it (neither dist/ nor rejected/). A gate says it with
    ``harness.verdicts.not_judged(reason)``."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class EnvironmentFault(StepError, NotJudged):
    """A step (the venv install, the CUDA root) failed for its environment: its message names
    the environment's fault and the fix; it stops the run as a failed build step does, said once."""

    def __init__(self, step: str, message: str, log: Path | None = None, tail: str = ""):
        StepError.__init__(self, step, message, log, tail)
        self.reason = str(self).splitlines()[0]


class BuildInterrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM during a long step: its processes were stopped, the work done stays.

    A KeyboardInterrupt, so pytest ends the session (exit 2) as for any Ctrl-C, and no later
    test tries the step again; the message says where it stopped and how to resume."""

    def __init__(self, step: str, message: str):
        self.step = step
        super().__init__(f"[{step}] {message}")


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


#: Lines that say why a CMake/Ninja/compiler run failed. The cause is usually the *first* of
#: them (a missing compiler at configure line 61 of 151, the first ``error:`` of a compile);
#: what follows is often consequence.
_CAUSE = re.compile(r"CMake Error|^FAILED: |\berror:|\bError \d+\b|fatal error|No such file or directory"
                    r"|undefined reference")


#: Where a failed ninja command's output ends: the next step, another failure, ninja's verdict.
_NEXT_STEP = re.compile(r"^(\[\d+/\d+\] |FAILED: |ninja: |==== )")
#: The most lines of one failed command shown (a template error can run to thousands).
WHOLE_ERROR = 200


def log_excerpt(path: Path, first: int = 3, before: int = 2, after: int = 8, tail: int = 12,
                since: int = 0) -> str:
    """What a person needs from a failed step's log: the first ``first`` error lines with
    ``before``/``after`` lines of context, then the last ``tail`` lines. Falls back to the tail
    alone when no line looks like an error. ``since``: byte offset where this run's part of an
    appended log starts."""
    try:
        with open(path, "rb") as fh:
            fh.seek(since)
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    hits = [i for i, line in enumerate(lines) if _CAUSE.search(line)]
    shown: set[int] = set()
    blocks: list[tuple[int, int]] = []
    end = -1
    for i in hits:
        if len(blocks) >= first:
            break
        if i <= end:
            continue
        lo, hi = max(0, i - before, end + 1), min(len(lines), i + after + 1)
        if lines[i].startswith("FAILED: "):
            # a failed command's output is one error, shown whole (up to WHOLE_ERROR lines): cut
            # after `after` lines, its rest came back as a second, overlapping piece
            stop = next((j for j in range(i + 1, min(len(lines), i + WHOLE_ERROR))
                         if _NEXT_STEP.match(lines[j])), None)
            hi = stop if stop is not None else min(len(lines), max(hi, i + WHOLE_ERROR))
        blocks.append((lo, hi))
        shown.update(range(lo, hi))
        end = hi - 1
    out = []
    for lo, hi in blocks:
        out.append(f"--- {Path(path).name}, {'this run, ' if since else ''}line {lo + 1}: ---")
        out.extend(lines[lo:hi])
    last = [i for i in range(max(0, len(lines) - tail), len(lines)) if i not in shown]
    if last:
        out.append("--- last lines of the log ---")
        out.extend(lines[i] for i in last)
    return "\n".join(out)
