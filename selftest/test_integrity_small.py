"""Issue 11, point 7: two runs sharing --venv-dir, --co, requirement markers."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from build_steps.readers.audit import parse_requirements
from selftest.conftest import HARNESS_ROOT

#: Holds the first run open until the second one has been tried.
WAITER = '''
import pathlib, time


def test_waits_for_the_second_run():
    go = pathlib.Path({go!r})
    pathlib.Path({started!r}).touch()
    for _ in range(600):
        if go.exists():
            return
        time.sleep(0.1)
'''


def _child(wheel, waiter, *args):
    # The harness's gate directory on the command line (so its conftest and options load), only
    # the waiter selected.
    return [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir",
            str(HARNESS_ROOT), "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests"), str(waiter),
            "-k", "waits_for_the_second_run", f"--wheel={wheel}", *map(str, args)]


def test_second_run_on_the_same_venv_dir_is_refused(pytester, tmp_path, selftest_wheels):
    venv_dir = tmp_path / "venv"
    wheel = selftest_wheels["good_cpu"]
    go, started = tmp_path / "go", tmp_path / "started"
    waiter = pytester.makepyfile(test_waiter=WAITER.format(go=str(go), started=str(started)))
    first = subprocess.Popen(_child(wheel, waiter, f"--venv-dir={venv_dir}"), cwd=pytester.path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(600):
            if started.exists() or first.poll() is not None:
                break
            time.sleep(0.1)
        assert started.exists(), first.communicate()[0]
        second = subprocess.run(_child(wheel, waiter, f"--venv-dir={venv_dir}"), cwd=pytester.path,
                                capture_output=True, text=True, timeout=120)
    finally:
        go.touch()
        out_first = first.communicate(timeout=120)[0]
    assert second.returncode == pytest.ExitCode.USAGE_ERROR, second.stdout + second.stderr
    assert f"--venv-dir {venv_dir} is in use by another harness run (pid {first.pid}, started " in second.stderr
    assert first.returncode == 0, out_first
    # Once the first run is over the directory is free again.
    go.touch()
    third = subprocess.run(_child(wheel, waiter, f"--venv-dir={venv_dir}"), cwd=pytester.path,
                           capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stdout + third.stderr


def test_collect_only_prints_no_release_verdict(gates, selftest_wheels):
    result = gates("-m", "release", "--co", f"--wheel={selftest_wheels['good_cuda']}")
    assert result.ret == pytest.ExitCode.OK
    assert "tests/test_publish.py" not in result.stdout.str()
    assert not [ln for ln in result.outlines if ln.startswith("RELEASE ")], result.stdout.str()


def test_requirement_markers_are_evaluated_before_listing():
    reqs = parse_requirements(['contextvars; python_version < "3.7"', "numpy<2,>=1.17",
                               'typing-extensions; python_version >= "3.0"', 'onnx; extra == "onnx"'])
    assert "contextvars" not in reqs.hard and "contextvars" in reqs.conditional
    assert reqs.hard == {"numpy": "<2,>=1.17", "typing-extensions": ""}
    assert "onnx" in reqs.extras
