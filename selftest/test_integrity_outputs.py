"""Issue 11, point 3: dist/, the JSON report and every file the run writes for the user are
written all or nothing. A full filesystem is one message naming it and the space needed, leaves
no partial file, and fails the run; the JSON report keeps the user's umask (point 7)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from build_steps import atomic, package

from selftest.conftest import HARNESS_ROOT, run_gates
from selftest.fixtures_build import copy_sample_tree


def _mount_tmpfs(path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs (a filesystem that really fills up); without mount rights the size limit is
    RLIMIT_FSIZE in a child process instead (see _limited)."""
    mnt = tmp_path / "small"
    mounted = _mount_tmpfs(mnt, "1m")
    yield mnt if mounted else None
    if mounted:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _write_big_file_under_fsize_limit(dest):
    """The same refusal where mounting is not allowed: a 1 MiB file-size limit in a child."""
    code = (
        "import resource, sys\n"
        "from build_steps import atomic\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))\n"
        "try:\n"
        f"    atomic.write_atomic({str(dest)!r}, lambda fh: fh.write(b'x' * (4 << 20)))\n"
        "except atomic.OutputError as exc:\n"
        "    print(exc); sys.exit(3)\n")
    return subprocess.run([sys.executable, "-c", code], cwd=HARNESS_ROOT, capture_output=True, text=True)


def test_copy_larger_than_the_filesystem_leaves_nothing(small_fs, tmp_path):
    wheel = tmp_path / "mxnet-2.0.0+cu13.bw.20260614.1-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(os.urandom(3 << 20))
    if small_fs is None:
        proc = _write_big_file_under_fsize_limit(tmp_path / "dist" / wheel.name)
        assert proc.returncode == 3, proc.stderr
        assert "cannot write" in proc.stdout and "needed" in proc.stdout
        assert not (tmp_path / "dist").exists() or list((tmp_path / "dist").iterdir()) == []
        return
    dist = small_fs / "dist"
    with pytest.raises(atomic.OutputError) as err:
        package.publish_to_dist(wheel, dist)
    text = str(err.value)
    assert f"cannot write {dist / wheel.name}: not enough free space" in text
    assert f"filesystem: {small_fs} (tmpfs)" in text and "3.0 MiB needed" in text
    assert not dist.exists() or list(dist.iterdir()) == []


def test_filesystem_filling_up_mid_write_leaves_nothing(small_fs, tmp_path):
    if small_fs is None:
        pytest.skip("mount not permitted here: covered by the RLIMIT_FSIZE case above")
    dest = small_fs / "report.json"
    # No size known up front (needed=None): the write itself hits ENOSPC.
    with pytest.raises(atomic.OutputError) as err:
        atomic.write_atomic(dest, lambda fh: fh.write(b"x" * (2 << 20)))
    assert "No space left on device" in str(err.value) and f"filesystem: {small_fs} (tmpfs)" in str(err.value)
    assert list(small_fs.iterdir()) == []


def test_json_report_keeps_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        atomic.write_json(tmp_path / "a.json", {"x": 1})
        os.umask(0o002)
        atomic.write_json(tmp_path / "b.json", {"x": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o664
    assert json.loads((tmp_path / "b.json").read_text()) == {"x": 1}


def test_json_report_on_a_full_filesystem_is_one_message(gates, small_fs, selftest_wheels):
    if small_fs is None:
        pytest.skip("mount not permitted here")
    (small_fs / "filler").write_bytes(b"\0" * ((1 << 20) - 8192))
    report = small_fs / "report.json"
    result = gates("-m", "provenance", f"--wheel={selftest_wheels['good_cuda']}",
                   f"--provenance-json={report}")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-3000:]
    assert "provenance JSON NOT written: cannot write" in out and f"filesystem: {small_fs} (tmpfs)" in out
    assert "Traceback" not in out + result.stderr.str()
    assert sorted(p.name for p in small_fs.iterdir()) == ["filler"]


@pytest.mark.slow
def test_full_dist_after_a_green_build_leaves_nothing_partial(pytester, tmp_path):
    tree = copy_sample_tree(tmp_path / "sample")
    if not _mount_tmpfs(tree / "dist", "1m"):
        pytest.skip("mount not permitted here: the unit cases cover the refusal")
    try:
        # the CPU flavor: where the wheel goes is the same code for every flavor, and a CPU build skips
        # nvcc's six-arch fatbin and the CUDA configure (half this test's time)
        result = run_gates(pytester, HARNESS_ROOT / "tests", "-m", "release and (build or provenance)",
                           "-k", "not install", f"--mxnet-src={tree}", "--flavor=cpu", timeout=1500)
        out = result.stdout.str()
        assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-5000:]
        assert "wheel NOT placed in dist/: cannot write" in out and f"filesystem: {tree / 'dist'} (tmpfs)" in out
        assert "Traceback" not in out
        assert list((tree / "dist").iterdir()) == []
        final = [ln for ln in result.outlines if ln.startswith("RELEASE ")]
        assert final, out[-3000:]
    finally:
        subprocess.run(["umount", "-l", str(tree / "dist")], check=False)
