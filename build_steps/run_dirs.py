"""The directory of one run (its xdist workers' meeting place and pytest's basetemp), made by the
controller at configure time and removed or kept at the end (harness.state, harness.plugins.run_dir)."""
from __future__ import annotations

import fcntl
import getpass
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import IO

from .errors import UsageError


class RunDir:
    """The directory of one run, common to all its xdist workers: ``harness-shared`` (run-once
    records, the pinned wheel, the extracted wheel, the venv) and pytest's own basetemp (``tmp``).

    Made by the controller: the user's ``--basetemp DIR`` (emptied now, kept after the run, as pytest
    does with it), else a fresh ``run-*`` dir under ``<tmp>/mxnet-harness-of-<user>/`` that is
    removed after a green run (``tmp_path_retention_policy = failed``) and of which only the
    newest ``tmp_path_retention_count`` outlive later runs, as pytest's numbered basetemps. Each
    run holds a lock on its dir, so a concurrent run's is never pruned. Workers receive the
    controller's dir through ``workerinput`` (pytest-xdist's pytest_configure_node).
    """

    #: the workerinput key an xdist worker finds its controller's run dir under
    WORKER_INPUT = "mxnet_harness_run_dir"

    def __init__(self, root: Path, given: bool, lock: IO[str] | None = None) -> None:
        self.root = root
        self.given = given
        self._lock = lock

    @property
    def shared(self) -> Path:
        return self.root / "harness-shared"

    @classmethod
    def make(cls, given: str | None, keep: int) -> RunDir:
        """The controller's run dir; ``keep``: how many older run dirs outlive this one."""
        if given:
            root = Path(os.path.abspath(given))
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True, mode=0o700)
        else:
            parent = Path(tempfile.gettempdir()) / f"mxnet-harness-of-{getpass.getuser()}"
            parent.mkdir(mode=0o700, exist_ok=True)
            _check_private(parent)
            root = Path(tempfile.mkdtemp(prefix="run-", dir=parent))
        lock = open(root / ".lock", "w")  # noqa: SIM115 - held for the whole run
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not given:
            _prune_runs(root.parent, keep=keep, current=root)
        return cls(root, bool(given), lock)

    def finish(self, green: bool) -> None:
        """End of the run: drop the lock; a run dir of the harness's own is removed when ``green``
        (the run passed under retention policy ``failed``, or was refused before its session)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if not self.given and green:
            shutil.rmtree(self.root, ignore_errors=True)


def _check_private(parent: Path) -> None:
    """The runs' parent dir in the shared temp dir must be this user's own, writable by nobody else:
    one made beforehand by another user (or left world-writable) lets them swap a run's files,
    the pinned wheel and the verdicts among them (issue 29)."""
    st = parent.lstat()
    problems = []
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        problems.append("is not a directory (a symlink?)")
    if st.st_uid != os.getuid():
        problems.append(f"is owned by uid {st.st_uid}, not by this user ({os.getuid()})")
    if st.st_mode & 0o022:
        problems.append(f"is writable by others (mode {oct(st.st_mode & 0o777)})")
    if problems:
        raise UsageError(
            f"the harness's run dir parent {parent} {' and '.join(problems)}: another user could change a "
            f"run's files. Remove it (or pass --basetemp=DIR of your own) and run again")


def _prune_runs(parent: Path, keep: int, current: Path) -> None:
    """Remove older run dirs beyond the newest ``keep``, skipping any whose run still holds its lock."""
    def mtime(d: Path) -> float:
        try:
            return d.stat().st_mtime
        except OSError:
            return 0.0
    older = sorted((d for d in parent.glob("run-*") if d != current), key=mtime, reverse=True)
    for d in older[max(keep, 0):]:
        try:
            with open(d / ".lock", "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                for p in d.rglob("*"):  # a pinned wheel is read-only
                    if p.is_dir() and not p.is_symlink():
                        p.chmod(0o700)
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            continue
