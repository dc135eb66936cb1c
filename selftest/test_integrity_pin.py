"""Issue 11, point 2: one set of bytes per run. The wheel is hashed when the run starts; the gates
judge those bytes, and a wheel replaced at its path mid-run is reported and fails the run."""
from __future__ import annotations

import hashlib
import json
import shutil
import zipfile

import pytest

from build_steps.errors import WheelError
from build_steps.pinning import WheelChanged, pin_wheel, source_changed, verify

#: Runs first (named first on the command line): replaces the wheel as `mv new.whl old.whl` would.
SWAPPER = '''
import os


def test_someone_replaces_the_wheel():
    os.replace({new!r}, {old!r})
'''


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lookalike(good, dest):
    """The same wheel with other bytes (a zip comment): every static gate passes on it too."""
    shutil.copyfile(good, dest)
    with zipfile.ZipFile(dest, "a") as zf:
        zf.comment = b"rebuilt by someone else"
    return dest


@pytest.mark.slow
def test_wheel_swapped_mid_run_is_detected(gates, pytester, selftest_wheels, tmp_path):
    good = selftest_wheels["good_cuda"]
    wheel = tmp_path / "dist" / good.rsplit("/", 1)[-1]
    wheel.parent.mkdir()
    shutil.copyfile(good, wheel)
    first = _sha(wheel)
    other = _lookalike(good, tmp_path / "other.whl")
    swapper = pytester.makepyfile(test_aaa_swap=SWAPPER.format(new=str(other), old=str(wheel)))
    report = tmp_path / "report.json"
    result = gates(swapper, "-m", "provenance or not release", f"--wheel={wheel}",
                   f"--provenance-json={report}", "-p", "no:randomly")
    out = result.stdout.str()
    assert _sha(wheel) != first  # the swap happened
    # Every gate judged the first bytes (they pass), and still the run is not green: the file the
    # user named is not what was verified.
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-3000:]
    assert "WHEEL CHANGED DURING THE RUN" in out and f"judged the bytes pinned at the start (sha256 {first})" in out
    doc = json.loads(report.read_text())
    assert doc["wheel"]["sha256"] == first
    assert all(g["verdict"] in ("passed", "skipped") for g in doc["gates"].values())


def test_rewritten_in_place_is_refused_before_use(tmp_path, selftest_wheels):
    wheel = tmp_path / selftest_wheels["good_cpu"].rsplit("/", 1)[-1]
    shutil.copyfile(selftest_wheels["good_cpu"], wheel)
    pin = pin_wheel(wheel, tmp_path / "pin")
    assert verify(pin, "extraction") == tmp_path / "pin" / wheel.name and source_changed(pin) is None
    with open(wheel, "r+b") as fh:  # same inode: the hard-linked pin sees the change
        fh.seek(100)
        fh.write(b"\0" * 16)
    with pytest.raises(WheelChanged, match="before extraction"):
        verify(pin, "extraction")
    assert "replaced during the run" in source_changed(pin)
    assert not issubclass(WheelChanged, WheelError)  # not blamed on the wheel's packaging
