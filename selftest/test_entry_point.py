"""``mxnet-release`` (harness/cli.py): the harness's options work from inside the real fork tree.

The fork has its own pytest.ini and conftest.py; plain pytest run there reads them and rejects
the harness's options. The console script installed by pyproject.toml must not.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness import cli
from selftest.conftest import HARNESS_ROOT

SCRIPT = Path(sys.executable).parent / "mxnet-release"


def _run(cmd, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_plain_pytest_inside_the_fork_rejects_the_harness_options(fork_tree):
    # the problem the entry point exists for, shown on the real tree: pytest's own parser would say
    # only "unrecognized arguments: --mxnet-src"; harness.plugins.usage_hint names the fix in one line
    proc = _run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider",
                 "--mxnet-src=.", "-m", "release and build"], fork_tree)
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert "--mxnet-src is an option of the MXNet release harness" in proc.stderr, proc.stderr[-2000:]
    assert "run `mxnet-release " in proc.stderr, proc.stderr[-2000:]


def test_entry_point_inside_the_fork_uses_the_harness_configuration(fork_tree):
    assert SCRIPT.is_file(), f"{SCRIPT} missing: pip install -e . installs the mxnet-release console script"
    proc = _run([SCRIPT, "--co", "-q", "-p", "no:cacheprovider", "-m", "release and build",
                 "--flavor=cpu", "--jobs=2"], fork_tree)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "tests/test_build_chain.py::test_source_tree_has_every_submodule" in out, out[-3000:]
    assert "tests/test_build_chain.py::test_cmake_cache_toggles_match_profile" in out, out[-3000:]


def test_entry_point_validates_harness_options_from_inside_the_fork(fork_tree, tmp_path):
    # -m provenance with a bad --wheel: the harness's own option check answers (usage error, exit 4)
    proc = _run([SCRIPT, "-p", "no:cacheprovider", "-m", "provenance", f"--wheel={tmp_path / 'no.whl'}"],
                fork_tree)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-3000:]
    assert f"--wheel {tmp_path / 'no.whl'}: no such file" in out, out[-3000:]


def test_entry_point_arguments(fork_tree, tmp_path):
    ini = ["-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT)]
    tests = str(HARNESS_ROOT / "tests")
    # inside an MXNet tree, no --mxnet-src and no --wheel: that tree is the one built
    assert cli.pytest_args(["-m", "release"], fork_tree, HARNESS_ROOT) == [
        *ini, "-m", "release", f"--mxnet-src={fork_tree}", tests]
    # an explicit choice is kept; a wheel audit never gets a source tree added
    assert cli.pytest_args(["--mxnet-src=/x"], fork_tree, HARNESS_ROOT) == [*ini, "--mxnet-src=/x", tests]
    assert cli.pytest_args(["--wheel=w.whl"], fork_tree, HARNESS_ROOT) == [*ini, "--wheel=w.whl", tests]
    # outside an MXNet tree nothing is guessed (the harness's own message asks for --mxnet-src)
    assert cli.pytest_args(["-m", "release"], tmp_path, HARNESS_ROOT) == [*ini, "-m", "release", tests]
    # test paths name the harness's gates, not the fork's tests/
    assert cli.pytest_args(["tests/test_build_chain.py::test_x"], tmp_path, HARNESS_ROOT) == [
        *ini, str(HARNESS_ROOT / "tests/test_build_chain.py::test_x")]
