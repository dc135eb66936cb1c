"""Issue 11, point 1: a release is published only from the flavor's complete gate set.

A run narrowed with -m or -k, however green, verified less than the release promises: the publish
gate refuses it and names the gates that did not run; nothing is tagged, gh is never called.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from selftest.conftest import HARNESS_ROOT, run_gates
from selftest.fixtures_publish import make_release_repo


def _narrowed(pytester, tmp_path, selftest_wheels, *selection):
    repo = make_release_repo(tmp_path / "e2e", source=Path(selftest_wheels["src"]))
    result = run_gates(pytester, HARNESS_ROOT / "tests", *selection,
                       "--wheel", selftest_wheels["good_cuda"], "--cmake-cache", selftest_wheels["cache_cuda"],
                       "--mxnet-src", repo.repo, "--publish", "--dry-run", "-p", "no:randomly", timeout=600)
    return repo, result


@pytest.mark.slow
def test_publish_narrowed_by_marker_is_refused_naming_the_gates_that_did_not_run(
        pytester, tmp_path, selftest_wheels, gh_standin):
    repo, result = _narrowed(pytester, tmp_path, selftest_wheels, "-m", "provenance or publish")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-4000:]
    # Every provenance gate passed; the publish gate still refuses, naming the GPU, runtime and
    # build gates of the cuda release set that never ran.
    result.stdout.fnmatch_lines([
        "*publish refused: * gates of the cuda release set did not pass in this run*",
        "*NOT RUN*tests/test_gpu_smoke.py::test_gpu_visible",
    ])
    for gate in ("tests/test_cublas.py::test_cublas_preflight", "tests/test_install.py::test_mxnet_resolves_inside_venv",
                 "tests/test_opencv_roundtrip.py::test_png_rgb_roundtrip"):
        assert f"NOT RUN       {gate}" in out, gate
    assert "NOT RUN       tests/test_wheel_integrity.py::test_record_hashes" not in out  # it ran
    final = [ln for ln in result.outlines if ln.startswith("RELEASE ")][-1]
    assert "NOT published: publish refused" in final and "git tag" not in out
    assert repo.local_tags() == [] and repo.remote_tags() == [] and gh_standin.calls() == []


@pytest.mark.slow
def test_publish_narrowed_by_k_is_refused(pytester, tmp_path, selftest_wheels, gh_standin):
    repo, result = _narrowed(pytester, tmp_path, selftest_wheels, "-k", "record_hashes or publish")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-4000:]
    result.stdout.fnmatch_lines(["*publish refused: * gates of the cuda release set did not pass*"])
    assert "NOT RUN       tests/test_metadata.py::test_hard_requirements_pinned" in out
    assert repo.local_tags() == [] and gh_standin.calls() == []


def test_publish_without_the_harness_gate_modules_is_refused(pytester, release_repo):
    # Only the publish gate and one passing gate on the command line: the harness's own gate
    # modules were never collected, and the refusal names every gate of the manifest in them.
    from selftest.fixtures_publish import other_gates_source
    other = pytester.makepyfile(test_other_gates=other_gates_source("passes"))
    result = run_gates(pytester, HARNESS_ROOT / "tests" / "test_publish.py", other,
                       "--mxnet-src", release_repo.repo, "--publish", "--dry-run", timeout=300)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*publish refused:*", "*NOT RUN*tests/test_gpu_smoke.py::test_gpu_visible"])
