"""A run that BUILDS the sample tree and passes its build and provenance gates, then a dry-run
publish: refused (issue 11), because the run was narrowed to the build and provenance gates.

The throwaway-venv install gate is left out (-k) because the CUDA wheel's declared runtime
dependencies are ~1.3 GB of nvidia-* wheels; the install step has its own selftests.
"""
from __future__ import annotations

import pytest

from selftest.conftest import HARNESS_ROOT, run_gates
from selftest.fixtures_build import copy_sample_tree
from selftest.fixtures_publish import make_release_repo


@pytest.mark.slow
def test_narrowed_publish_after_building_the_sample_tree_is_refused(pytester, tmp_path, gh_standin):
    sample = copy_sample_tree(tmp_path / "sample")
    repo = make_release_repo(tmp_path / "e2e", source=sample)
    result = run_gates(pytester, HARNESS_ROOT / "tests",
                       "-m", "(release and (build or provenance)) or publish", "-k", "not install",
                       f"--mxnet-src={repo.repo}", "--cuda-from-wheels", "--publish", "--dry-run",
                       timeout=1500)
    out = result.stdout.str()
    # The build and provenance gates of the sample tree pass; the run is still no release: the
    # runtime, GPU and install gates did not run, and the publish gate names them.
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-6000:]
    assert "PASSED   tests/test_build_chain.py::test_compile_produced_an_elf_libmxnet" in out
    result.stdout.fnmatch_lines([
        "*publish refused: * gates of the cuda release set did not pass in this run*",
        "*NOT RUN*tests/test_cublas.py::test_cublas_preflight",
    ])
    assert "NOT RUN       tests/test_install.py::test_mxnet_resolves_inside_venv" in out
    # Nothing was created: no tag anywhere, gh never called.
    assert repo.local_tags() == [] and repo.remote_tags() == [] and gh_standin.calls() == []
