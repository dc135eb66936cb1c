"""The harness's error types, every one of them, and the exit status each one means.

Each message names the cause and the fix. ``UsageError`` is bad input from the person running the
harness (a wrong path, a non-wheel); ``StepError`` is a build step that failed, carrying its log.

One module, as cibuildwheel's ``errors.py``: each class carries its ``exit_code``, one of the four
below (the README's "Exit codes"), and two places turn them into an exit: ``exit_status`` for the
harness's own commands (``mxnet-release publish``, ``rebuild-check``), and ``harness.exits.refuse``
for a pytest run refused before its build (pytest's usage error: one ERROR line, exit 4). The gates'
verdicts reach pytest's exit status through the ledger and the end of the run (harness.plugins.finish).
selftest/test_errors_module.py holds that no exception class is defined anywhere else.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import zipfile
from pathlib import Path
from typing import ClassVar

# --------------------------------------------------------------------------------------------
# The exit statuses (pytest's own numbers where they mean the same: pytest.ExitCode)
# --------------------------------------------------------------------------------------------
#: 1, FAIL: a gate judged the wheel bad, or a step failed (pytest.ExitCode.TESTS_FAILED)
FAIL = 1
#: 2: SIGINT/SIGTERM; the work done stays, a re-run resumes (pytest.ExitCode.INTERRUPTED)
INTERRUPTED = 2
#: 3, ERROR (not judged): the host, not the wheel, failed and no gate judged it bad. pytest never
#: ends a session normally with 3 (its INTERNAL_ERROR), so the number is free to mean this.
NOT_JUDGED_EXIT = 3
#: 4: refused before the build: bad input, said in one line (pytest.ExitCode.USAGE_ERROR)
REFUSED = 4


class HarnessError(Exception):
    """Base class: a failure the harness explains in words, never as a traceback."""

    #: the exit status this failure ends a command with (one of the four above)
    exit_code: ClassVar[int] = FAIL


class UsageError(HarnessError):
    """Bad input: a path that does not exist, a file that is not a wheel, an invalid option."""

    exit_code = REFUSED


class WheelError(HarnessError):
    """The wheel itself is unusable: truncated zip, unsafe member names, bad RECORD."""


class WheelUnusable(WheelError):
    """The wheel under test could not be extracted: every gate would report the same fault, so
    the run says it once and stops (harness.plugins.gates)."""

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
    verdict about the wheel: the gate is filed "not judged" (harness.plugins.ledger), the run ends ERROR
    with exit 3 (NOT_JUDGED_EXIT) unless a gate judged the wheel FAIL, and a
    built wheel stays where the build put it (neither dist/ nor rejected/). A gate says it with
    ``harness.verdicts.not_judged(reason)``."""

    exit_code = NOT_JUDGED_EXIT

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class EnvironmentFault(StepError, NotJudged):
    """A step (the venv install, the CUDA root) failed for its environment: its message names
    the environment's fault and the fix; it stops the run as a failed build step does, said once.
    Its exit_code is NotJudged's (3): StepError sets none of its own."""

    def __init__(self, step: str, message: str, log: Path | None = None, tail: str = ""):
        StepError.__init__(self, step, message, log, tail)
        self.reason = str(self).splitlines()[0]


class BuildInterrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM during a long step: its processes were stopped, the work done stays.

    A KeyboardInterrupt, so pytest ends the session (exit 2) as for any Ctrl-C, and no later
    test tries the step again; the message says where it stopped and how to resume."""

    exit_code: ClassVar[int] = INTERRUPTED

    def __init__(self, step: str, message: str):
        self.step = step
        super().__init__(f"[{step}] {message}")


class PlantedLink(HarnessError):
    """A path the harness writes or reads in a build-writable dir is a link (or not a plain file):
    the build planted it (build_steps.own_files)."""


def exit_status(exc: BaseException) -> int:
    """The exit status a command of the harness ends with for ``exc``: its class's ``exit_code``;
    FAIL for anything the harness did not name (a bug is never mistaken for a refusal)."""
    code = getattr(type(exc), "exit_code", FAIL)
    return code if isinstance(code, int) else FAIL


# --------------------------------------------------------------------------------------------
# The steps' and the readers' own failures (each raised by the module named)
# --------------------------------------------------------------------------------------------
class StepFailedElsewhere(HarnessError):
    """The step failed in the worker that ran it; the full report is in that worker's output
    (build_steps.once)."""


class ProductFailed(HarnessError):
    """A shared product could not be made (in this process or another); the message is the
    original error's (build_steps.once)."""


class NotJudgedElsewhere(StepFailedElsewhere, NotJudged):
    """The step could not judge the wheel in the process that ran it (an environment fault):
    every process that wanted its product files its gates "not judged" too (build_steps.once)."""

    def __init__(self, reason: str):
        StepFailedElsewhere.__init__(self, reason)
        self.reason = reason


class ProductNotJudged(ProductFailed, NotJudged):
    """A shared product an environment fault kept from being made (see NotJudgedElsewhere)."""

    def __init__(self, reason: str):
        ProductFailed.__init__(self, reason)
        self.reason = reason


class OpenCVBuildError(StepError):
    """The minimal OpenCV build failed (build_steps.opencv_build)."""

    def __init__(self, message: str, log: Path | None = None, tail: str = "") -> None:
        super().__init__("opencv", message, log=log, tail=tail)


class NotReady(NotJudged):
    """An offline host cannot make the OpenCV build: neither this host's entry nor the pinned source
    is cached (build_steps.opencv_build --ready: exit 3, the host's fault, not the wheel's)."""


class OutputError(HarnessError):
    """A file for the user could not be written; nothing partial was left (build_steps.atomic)."""


class DigestMismatch(HarnessError):
    """The bytes copied are not the bytes the run pinned (build_steps.atomic)."""


class WheelChanged(HarnessError):
    """The wheel's bytes are no longer those the run pinned (build_steps.pinning)."""


class ReleasedWheel(HarnessError):
    """dist/ holds a wheel of a version that is already tagged: a release is never rewritten
    (build_steps.package)."""


class GitError(HarnessError):
    """A git command failed; the message carries the command and git's stderr (build_steps.gitops)."""


class SettingsDataError(HarnessError):
    """development_settings.toml breaks its schema (build_steps.development_settings)."""


class ProfileDataError(HarnessError):
    """The profiles data file breaks its schema or names something it does not define
    (build_steps.profile_data)."""


class SandboxUnavailable(UsageError):
    """bubblewrap cannot make a sandbox on this host and --no-sandbox was not given
    (build_steps.sandbox)."""


class PublishRefused(UsageError):
    """The release cannot be published from this state (checked before anything is built;
    build_steps.publish)."""


class PublishFailed(HarnessError):
    """A publish command failed; the message says what exists now and how to undo it
    (build_steps.publish)."""


class ReportRefused(UsageError):
    """The report cannot be published from (forged, edited, partial, or another harness's;
    build_steps.release_report)."""


#: What a bad wheel's message tells its maker to do (build_steps.readers.wheel).
REBUILD_WHEEL = "rebuild the wheel (or download it again)"


class NotElfError(WheelError):
    """The file is not a (complete) ELF object (build_steps.readers.elf)."""


class NotMachOError(WheelError):
    """The file is not a Mach-O image, or macholib cannot parse it (build_steps.readers.macho)."""


class FatbinError(WheelError):
    """The ``.nv_fatbin`` section does not have the layout every CUDA toolkit writes
    (build_steps.readers.fatbin)."""


class HeaderMismatch(WheelError):
    """A member whose local file header and central-directory entry disagree: two readers of the
    one archive see two different wheels (build_steps.readers.wheel)."""

    def __init__(self, wheel: Path, info: zipfile.ZipInfo, why: str) -> None:
        super().__init__(
            f"{Path(wheel).name}: member {info.filename!r}: its local file header and the central "
            f"directory disagree ({why}). pip (zipfile) refuses such a wheel; a streaming reader "
            "(jar x, proxies, scanners) reads the local header and sees another file. Nothing was "
            f"extracted; {REBUILD_WHEEL} with one tool that writes both headers")


class WheelNameError(WheelError):
    """A file name that is not ``<name>-<version>[-<build>]-<python>-<abi>-<platform>.whl``
    (build_steps.readers.wheel_name).

    ``reason`` is the parser's own words; ``str()`` adds what to do about it.
    """

    def __init__(self, filename: str, reason: str):
        self.filename, self.reason = filename, reason
        super().__init__(
            f"{filename} is not a valid wheel file name ({reason}); a wheel is named "
            "<name>-<version>[-<build>]-<python>-<abi>-<platform>.whl: rename or rebuild it")

    def __reduce__(self) -> tuple[type[WheelNameError], tuple[str, str]]:  # crosses process boundaries (xdist, the run-once store) intact
        return type(self), (self.filename, self.reason)


def describe_link(path: Path) -> str:
    try:
        return f"a symbolic link to {os.readlink(path)}" if path.is_symlink() else "not a plain directory"
    except OSError:
        return "a symbolic link"


def read_log(path: Path, since: int = 0, limit: int | None = None) -> bytes:
    """The bytes of a log in a build-writable dir (from ``since``, or the last ``limit`` bytes),
    never through a link: a log the build turned into a link to the operator's secrets never
    reaches an error message (issue 41). OSError when unreadable; PlantedLink for a link or
    something not a plain file."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PlantedLink(f"{path} is {describe_link(path)}, which only the build's own code could "
                              "have planted there: not read") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PlantedLink(f"{path} is not a plain file: not read")
        if limit is not None:
            fh.seek(max(0, fh.seek(0, 2) - limit))
        else:
            fh.seek(since)
        return fh.read()


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, or '' when it cannot be read."""
    try:
        data = read_log(path, limit=64 * 1024).decode("utf-8", "replace")
    except PlantedLink as exc:
        return f"(not shown: {exc})"
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
        lines = read_log(path, since=since).decode("utf-8", "replace").splitlines()
    except PlantedLink as exc:
        return f"(not shown: {exc})"
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
