"""A run's processes die with the run, however the run ends (even SIGKILL of pytest).

Measured on this host (docs/faults_issue33.md): nothing the kernel offers covers the whole tree.
``PR_SET_PDEATHSIG`` is per process and cleared on fork, so it reaches cmake but not ninja's
compiles; ninja puts every command in a process group of its own, so a group kill misses them;
sccache's server double-forks away from every parent and group; and a subreaper
(``PR_SET_CHILD_SUBREAPER``) adopts orphans only while it lives, which a SIGKILLed pytest does not.
What does reach every one of them is the environment: each process the run starts, the
daemonized server and the compilers it runs included, inherits ``MXNET_HARNESS_RUN=<id>``. A
small watchdog, in a session of its own (so neither the terminal's Ctrl-C nor its hang-up reaches
it), holds the read end of a pipe whose write end only the run holds; when the run is gone, by
any death, the pipe reads EOF and the watchdog stops every process carrying the run's id
(SIGTERM, then SIGKILL until nothing new appears) and removes the run's temporary dir (where its
sccache server's nvcc temporaries live). The run's lock records the id (build_steps.run_lock), so
a later run can do the same for a run whose watchdog was killed too.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, MutableMapping

from . import processes
from .run_as import run_uids

#: The variable every process of a run inherits (MXNET_HARNESS_* passes build_steps.venv's
#: allow-list, so the wheel's own children carry it too).
RUN_MARK = "MXNET_HARNESS_RUN"
#: The run's temporary dir: the private sccache server's TMPDIR (its /tmp/sccache_nvcc* dirs).
RUN_TMP = "MXNET_HARNESS_RUN_TMP"
_TMP_PREFIX = "mxnet-harness-run-"
#: In the run's temporary dir: the dirs the run made elsewhere (a sandbox's /tmp on the disk of
#: another TMPDIR), one path a line, removed with the run's temporary dir.
ELSEWHERE = "elsewhere.txt"
#: The only dirs removed from that list: a line naming anything else is ignored.
ELSEWHERE_PREFIX = "sandbox-tmp-"


@dataclass
class Supervision:
    run_id: str
    tmp: Path
    watchdog: subprocess.Popen[bytes] | None = None

    def members(self) -> list[int]:
        return processes.with_env(RUN_MARK, self.run_id)

    def end(self) -> None:
        """The run ended as it should: the watchdog finds nothing left and exits."""
        if self.watchdog is not None:
            try:
                assert self.watchdog.stdin is not None  # start() opens it with stdin=PIPE
                self.watchdog.stdin.close()
                self.watchdog.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self.watchdog.kill()
        remove_run_dirs(self.tmp)


_current: Supervision | None = None


def current() -> Supervision | None:
    return _current


def start(environ: MutableMapping[str, str] = os.environ) -> Supervision:
    """Mark everything this process starts from now on as this run's, and start its watchdog."""
    global _current
    run_id = uuid.uuid4().hex
    tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX))
    environ[RUN_MARK] = run_id
    environ[RUN_TMP] = str(tmp)
    sup = Supervision(run_id, tmp)
    env = {k: v for k, v in os.environ.items() if k != RUN_MARK}  # the watchdog is not a member
    sup.watchdog = subprocess.Popen(
        [sys.executable, "-m", "build_steps.supervise", run_id, str(os.getpid()), str(tmp)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env=env, cwd=str(Path(__file__).resolve().parent.parent))
    _current = sup
    return sup


def finish(environ: MutableMapping[str, str] = os.environ) -> None:
    global _current
    if _current is None:
        return
    _current.end()
    for key in (RUN_MARK, RUN_TMP):
        environ.pop(key, None)
    _current = None


def keep_elsewhere(path: Path) -> None:
    """Record ``path``, a dir this run made outside its temporary dir, so that the run's end (or
    its watchdog, when the run died) removes it too."""
    tmp = os.environ.get(RUN_TMP)
    if not tmp or not Path(tmp).is_dir():
        return
    with open(Path(tmp) / ELSEWHERE, "a") as f:  # O_APPEND: one short line per write, from any process
        f.write(f"{path}\n")


def remove_run_dirs(tmp: Path) -> None:
    """The run's temporary dir and the dirs it recorded elsewhere (only ``sandbox-tmp-*`` dirs owned
    by this user: the list is in a dir a build's processes could reach)."""
    try:
        listed = (tmp / ELSEWHERE).read_text().splitlines()
    except OSError:
        listed = []
    for line in listed:
        path = Path(line)
        try:
            ours = path.is_absolute() and path.name.startswith(ELSEWHERE_PREFIX) and not path.is_symlink() \
                and path.is_dir() and path.stat().st_uid in run_uids()
        except OSError:
            ours = False
        if ours:
            shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)


def note(key: str, value: object) -> None:
    """Record ``key`` in the run's notes (``<run tmp>/notes.json``), from any process of the run
    (an xdist worker starts the sccache server): the run's lock points there, so a takeover of
    a dead run's lock can name what it stops."""
    tmp = os.environ.get(RUN_TMP)
    if not tmp:
        return
    path = Path(tmp) / "notes.json"
    part = path.with_name(f"notes.{os.getpid()}.partial")
    try:
        part.write_text(json.dumps({**notes_of(tmp), key: value}))
        os.replace(part, path)
    except OSError:
        part.unlink(missing_ok=True)  # only names what a later takeover stops


def run_tmp_of(recorded: object) -> Path | None:
    """A run's temp dir as a lock's note records it, or None unless it is one that ``start`` makes
    (the note is a file in the build dir, by default inside an untrusted tree: it never names
    what a takeover deletes)."""
    if not isinstance(recorded, str):
        return None
    path = Path(recorded)
    if (path.name.startswith(_TMP_PREFIX) and path.parent == Path(tempfile.gettempdir())
            and path.is_dir() and not path.is_symlink()):
        return path
    return None


def notes_of(tmp: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        notes: dict[str, Any] = json.loads((Path(tmp) / "notes.json").read_text())  # what note() wrote
        return notes
    except (OSError, ValueError, TypeError):
        return {}


def stop_members(run_id: str, *, spare: Iterable[int] = (), grace: float = processes.STOP_GRACE) -> dict[int, str]:
    """Stop every live process of run ``run_id`` but ``spare``: pid -> executable name of those
    found (SIGTERM, then SIGKILL until none is left or appears)."""
    spare = {os.getpid(), *spare}

    def find() -> list[int]:
        return [p for p in processes.with_env(RUN_MARK, run_id) if p not in spare]
    found = {pid: _name(pid) for pid in find()}
    if not found:
        return {}
    processes.signal_all(found, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and find():
        time.sleep(0.05)
    processes.sweep(lambda: [p for p in find() if _not_zombie(p)])
    return found


def left_running() -> dict[int, str]:
    """This run's build processes still alive (pid -> name), its python processes (pytest, xdist
    workers) aside: what an interrupted step must not claim is stopped."""
    run_id = os.environ.get(RUN_MARK)
    if not run_id:
        return {}
    found = {p: _name(p) for p in processes.with_env(RUN_MARK, run_id) if _not_zombie(p)}
    return {p: n for p, n in found.items() if not n.startswith("python")}


def describe(found: dict[int, str]) -> str:
    """``3 processes (ninja, sccache, cc1plus)``."""
    names = ", ".join(dict.fromkeys(found.values()))
    return f"{len(found)} process{'es' if len(found) != 1 else ''} ({names})"


def _name(pid: int) -> str:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return "?"


def _not_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def watch(run_id: str, run_pid: int, tmp: Path) -> None:
    """The watchdog: wait for the run to end (EOF on stdin), then stop what it left."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    stop_members(run_id, spare={run_pid})
    remove_run_dirs(tmp)


if __name__ == "__main__":
    watch(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]))
