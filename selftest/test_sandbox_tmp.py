"""A sandbox's private /tmp is removed with the run wherever it lies: inside the run's temporary
dir when TMPDIR is on that disk, else in TMPDIR itself, recorded in the run's temporary dir so the
run's end and its watchdog (when the run was killed) remove it too. Real processes, a real second
filesystem (/dev/shm), a real SIGKILL."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from build_steps import supervise
from selftest.conftest import HARNESS_ROOT

RUN = '''
import sys, time
from build_steps import sandbox, supervise
supervise.start()
print(sandbox.private_tmp(sys.argv[2]), flush=True)
if sys.argv[1] == "wait":
    time.sleep(120)
supervise.finish()
'''


@pytest.fixture
def other_disk(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == Path(tempfile.gettempdir()).stat().st_dev:
        pytest.skip("no second filesystem beside the temp dir's (/dev/shm) on this host")
    d = Path(tempfile.mkdtemp(prefix="selftest-other-disk-", dir=shm))
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


def _run(mode: str, tmpdir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", RUN, mode, str(tmpdir)], cwd=HARNESS_ROOT,
                            stdout=subprocess.PIPE, text=True)


def test_removed_at_the_run_end(other_disk):
    proc = _run("end", other_disk)
    made = Path(proc.stdout.readline().strip())
    assert proc.wait(timeout=60) == 0
    assert made.parent == other_disk and made.name.startswith(supervise.ELSEWHERE_PREFIX)
    assert not made.exists(), f"{made} outlived the run"


def test_removed_by_the_watchdog_when_the_run_is_killed(other_disk):
    proc = _run("wait", other_disk)
    made = Path(proc.stdout.readline().strip())
    assert made.is_dir()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while made.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not made.exists(), f"{made} outlived a SIGKILLed run"


def test_the_list_removes_only_the_runs_own_sandbox_dirs(tmp_path):
    """The list lies where a build's processes could write: a line naming another dir, or a
    sandbox-named symlink to one, removes nothing but the run's own dir."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    link = tmp_path / f"{supervise.ELSEWHERE_PREFIX}link"
    link.symlink_to(victim)
    own = tmp_path / f"{supervise.ELSEWHERE_PREFIX}own"
    own.mkdir()
    run_tmp = tmp_path / "run-tmp"
    run_tmp.mkdir()
    (run_tmp / supervise.ELSEWHERE).write_text(f"{victim}\n{link}\nrelative/{supervise.ELSEWHERE_PREFIX}x\n{own}\n")
    supervise.remove_run_dirs(run_tmp)
    assert (victim / "keep").exists() and link.is_symlink()
    assert not own.exists() and not run_tmp.exists()
