"""Issue 11, point 2: one set of bytes per run. The wheel is hashed when the run starts; the gates
judge those bytes, and a wheel replaced at its path mid-run is reported and fails the run."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from build_steps.errors import WheelError
from build_steps.pinning import WheelChanged, pin_wheel, source_changed, unlock, verify

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


def test_pin_is_a_private_read_only_copy(tmp_path, selftest_wheels):
    # Issue 19, item 2: not a hard link to the user's inode. A rewrite in place of the user's file
    # cannot reach the bytes the run reads; the end-of-run check still reports it.
    wheel = tmp_path / selftest_wheels["good_cpu"].rsplit("/", 1)[-1]
    shutil.copyfile(selftest_wheels["good_cpu"], wheel)
    first = _sha(wheel)
    pin = pin_wheel(wheel, tmp_path / "pin")
    pinned = tmp_path / "pin" / wheel.name
    assert Path(pin.path) == pinned and pin.sha256 == first and pin.size == wheel.stat().st_size
    assert os.stat(pinned).st_ino != os.stat(wheel).st_ino
    assert stat.S_IMODE(os.stat(pinned).st_mode) == 0o444 and stat.S_IMODE(os.stat(pinned.parent).st_mode) == 0o500
    with open(wheel, "r+b") as fh:  # same inode as the user's file
        fh.seek(100)
        fh.write(b"\0" * 16)
    assert verify(pin, "extraction") == pinned and _sha(pinned) == first
    assert "replaced during the run" in source_changed(pin)
    # The copy itself changed (someone made it writable and wrote into it): refused before use.
    os.chmod(pinned.parent, 0o700)
    os.chmod(pinned, 0o644)
    with open(pinned, "r+b") as fh:
        fh.seek(100)
        fh.write(b"\0" * 16)
    with pytest.raises(WheelChanged, match="before extraction"):
        verify(pin, "extraction")
    assert not issubclass(WheelChanged, WheelError)  # not blamed on the wheel's packaging
    os.chmod(pinned.parent, 0o500)
    unlock(pin)  # the run is over: removable again
    shutil.rmtree(tmp_path / "pin")


def test_unchanged_pin_is_not_read_again_and_a_masked_rewrite_is_still_caught(tmp_path, monkeypatch):
    # Issue 32: verify() and the end-of-run check trust a file whose stat signature (inode, size,
    # mtime, ctime) is the pinned one, instead of reading ~0.5 GB again. A rewrite that puts the
    # old mtime back (os.utime) still moves ctime, so it is hashed and caught.
    from build_steps import pinning
    wheel = tmp_path / "mxnet-2.0.0-py3-none-any.whl"
    wheel.write_bytes(b"PK" + os.urandom(1 << 16))
    pin = pin_wheel(wheel, tmp_path / "pin")
    assert pin.copy_stat is not None and pin.source_stat is not None
    reads = []
    real = pinning.sha256_of
    monkeypatch.setattr(pinning, "sha256_of", lambda p: reads.append(str(p)) or real(p))
    assert verify(pin, "extraction") == Path(pin.path) and source_changed(pin) is None
    assert reads == []
    before = os.stat(wheel)
    with open(wheel, "r+b") as fh:
        fh.seek(100)
        fh.write(b"\0" * 16)
    os.utime(wheel, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(wheel).st_size == before.st_size and os.stat(wheel).st_mtime_ns == before.st_mtime_ns
    assert "replaced during the run" in source_changed(pin)
    assert reads == [str(wheel)]
    unlock(pin)


#: The writer of the issue, loaded into the child run with -p: while the harness installs the
#: wheel (after its hash check), the user's file is rewritten in place (same inode) with another
#: wheel, and restored once the install returns. The install itself is the real one.
WRITER_DURING_INSTALL = """
import shutil

from build_steps import venv as venv_step

_install = venv_step.install


def _copy_into(src, dst):
    with open(src, "rb") as fin, open(dst, "r+b") as fout:
        shutil.copyfileobj(fin, fout)
        fout.truncate()


def install(venv, wheel, **kwargs):
    _copy_into({other!r}, {wheel!r})
    try:
        return _install(venv, wheel, **kwargs)
    finally:
        _copy_into({saved!r}, {wheel!r})


venv_step.install = install
"""


@pytest.mark.slow
def test_wheel_rewritten_in_place_during_install_cannot_affect_the_run(pytester, tmp_path, mxnet191_wheelhouse):
    from selftest.conftest import HARNESS_ROOT, run_gates
    from selftest.fixtures_runtime import MXNET_191_WHEEL, runtime_args
    wheel = tmp_path / "user" / MXNET_191_WHEEL
    wheel.parent.mkdir()
    shutil.copyfile(mxnet191_wheelhouse / MXNET_191_WHEEL, wheel)
    saved = shutil.copyfile(wheel, tmp_path / "saved.whl")
    other = tmp_path / "other.whl"  # the same wheel plus a module of someone else's
    shutil.copyfile(wheel, other)
    with zipfile.ZipFile(other, "a") as zf:
        zf.writestr("mxnet/someone_elses_code.py", "RAN = True\n")
    first = _sha(wheel)
    pytester.makepyfile(writer_during_install=WRITER_DURING_INSTALL.format(
        other=str(other), wheel=str(wheel), saved=str(saved)))
    venv = tmp_path / "venv"
    result = run_gates(pytester, HARNESS_ROOT / "tests" / "test_install.py", "-p", "writer_during_install",
                       *runtime_args(wheel, mxnet191_wheelhouse, "--flavor", "cpu", f"--venv-dir={venv}",
                                     "--keep-venv", "-p", "no:randomly"), timeout=900)
    out = result.stdout.str()
    assert _sha(wheel) == first  # the writer put it back, as in the issue
    # The install read the run's private copy: the other wheel's module is not in the venv, and the
    # run, whose gates judged exactly the installed bytes, is green.
    assert not list(venv.glob("lib/python*/site-packages/mxnet/someone_elses_code.py"))
    assert list(venv.glob("lib/python*/site-packages/mxnet/__init__.py"))
    assert result.ret == pytest.ExitCode.OK, out[-3000:]
    assert f"wheel verified by this run: {wheel} (sha256 {first}" in out
