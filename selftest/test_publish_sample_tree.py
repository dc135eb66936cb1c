"""Issue 5's end-to-end case: a green release run that BUILDS the sample tree, then a dry-run
publish that prints the exact tag/push/release commands and changes nothing.

The throwaway-venv install gate is left out (-k) because the CUDA wheel's declared runtime
dependencies are ~1.3 GB of nvidia-* wheels; the install step has its own selftests.
"""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from selftest.conftest import HARNESS_ROOT, run_gates
from selftest.fixtures_build import copy_sample_tree
from selftest.fixtures_publish import make_release_repo


@pytest.mark.slow
def test_dry_run_publish_after_building_the_sample_tree(pytester, tmp_path, gh_standin):
    sample = copy_sample_tree(tmp_path / "sample")
    repo = make_release_repo(tmp_path / "e2e", source=sample)
    result = run_gates(pytester, HARNESS_ROOT / "tests",
                       "-m", "(release and (build or provenance)) or publish", "-k", "not install",
                       f"--mxnet-src={repo.repo}", "--cuda-from-wheels", "--publish", "--dry-run",
                       timeout=1500)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out[-6000:]

    version = f"2.0.0+cu13.bw.{datetime.now(timezone.utc):%Y%m%d}.1"  # first build of the day
    tag = f"v{version}"
    head = repo.head
    result.stdout.fnmatch_lines([
        "*publish: dry run (nothing was changed); a real run executes*",
        f"cd {repo.repo} && git tag -a {tag} -m 'MXNet {version} (cuda): CUDA, CUDNN, NCCL, ONEDNN, "
        f"OPENCV, OPENMP, ONNX; SASS sm_80 sm_86 sm_89 sm_90 sm_100 sm_120; PTX compute_120; commit {head}' {head}",
        f"cd {repo.repo} && git push origin refs/tags/{tag}",
        f"cd {repo.repo} && gh release create {tag} *mxnet-{version}-cp*-linux_x86_64.whl --verify-tag "
        f"--title {tag} --notes 'MXNet {version} (cuda wheel).",
    ])
    assert "PASSED   tests/test_publish.py" in out
    # Nothing was created: no tag anywhere, gh never called.
    assert repo.local_tags() == [] and repo.remote_tags() == [] and gh_standin.calls() == []
