"""gpu/real_fork_run.sh runs the harness from a copy of the checkout (issue 40, found on the H100 host).

A device call lays the working tree anew. On 2026-12-06 the call made while the real fork compiled
removed build_steps/deterministic_compile.py for an instant, and the compile step running through it
as its launcher failed ("can't open file .../deterministic_compile.py") at step 999 of 1318. `start`
and `gpu-lane` now run from $W/harness, a copy made before the run, so nothing the next call does to
the checkout reaches a running build. Shown here with the script itself: the checkout's launcher
removed (as that call did) while the copy's stays, byte for byte the checkout's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from selftest.conftest import HARNESS_ROOT

SCRIPT = "gpu/real_fork_run.sh"
LAUNCHER = Path("build_steps/deterministic_compile.py")


def _checkout(tmp_path: Path) -> Path:
    """A copy of this checkout's tracked files, as a device call lays it (plus the ignored carry)."""
    root = tmp_path / "checkout"
    files = subprocess.run(["git", "-C", str(HARNESS_ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    for rel in files:
        src = HARNESS_ROOT / rel
        if src.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / rel)
    (root / ".whl").mkdir()
    (root / ".whl" / "big.whl").write_bytes(b"x" * 1024)
    return root


def _copy(root: Path, work: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", SCRIPT, "harness-copy"], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "REAL_FORK_WORK": str(work)}, timeout=120)


def test_the_run_goes_on_from_a_copy_when_the_checkout_is_laid_anew(tmp_path):
    root, work = _checkout(tmp_path), tmp_path / "realfork"
    proc = _copy(root, work)
    assert proc.returncode == 0, proc.stderr
    copy = Path(proc.stdout.strip().splitlines()[-1])
    assert copy == work / "harness"
    assert (copy / LAUNCHER).read_bytes() == (root / LAUNCHER).read_bytes()
    assert (copy / "conftest.py").is_file() and (copy / "pytest.ini").is_file()
    assert not (copy / ".whl").exists(), "the carried wheels stay in the checkout"
    # the next device call re-lays the checkout: for an instant its launcher is not there
    (root / LAUNCHER).unlink()
    assert (copy / LAUNCHER).is_file()
    # a later start (no run going on) makes the copy anew from the checkout as it is then
    (root / LAUNCHER).write_text("# changed\n")
    assert _copy(root, work).returncode == 0
    assert (copy / LAUNCHER).read_text() == "# changed\n"
