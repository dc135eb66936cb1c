"""Fixtures of the harness's own tests.

The selftests run the real gates (``tests/``) through pytester against wheels, trees and venvs
made here from real parts. Each area keeps its fixtures in its own module, imported below.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from build_steps.cuda_root import default_cache_dir

HARNESS_ROOT = Path(__file__).resolve().parent.parent
#: The sample tree's tests/python are acceptance shards the selftests run in a venv, not selftests.
collect_ignore = ["sample_mxnet"]
#: Read before pytester points HOME at each test's tmp dir: child runs share the user's cache, so
#: the ~3 GB of CUDA wheels behind --cuda-from-wheels are installed once per machine, not per test.
HARNESS_CACHE = default_cache_dir()

from selftest.fixtures_readers import *  # noqa: E402,F401,F403
from selftest.fixtures_wheels import *  # noqa: E402,F401,F403
from selftest.fixtures_build import *  # noqa: E402,F401,F403
from selftest.fixtures_runtime import *  # noqa: E402,F401,F403
from selftest.fixtures_publish import *  # noqa: E402,F401,F403
from selftest.fixtures_macos import *  # noqa: E402,F401,F403
from selftest.fixtures_realtree import *  # noqa: E402,F401,F403


def run_gates(pytester, *args, timeout: float = 1800):
    """Run the release gates of this harness in a child pytest, as a user would.

    The child uses the harness's own pytest.ini and root conftest, so options, markers and the
    strict-release rules are exactly those of a real run.
    """
    return pytester.runpytest_subprocess(
        "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
        "-p", "no:cacheprovider", *map(str, args), timeout=timeout)


_CALL_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


@pytest.fixture
def pytester(pytester, request):
    """pytester, whose directory goes once the test passed.

    pytester makes its directory with tmp_path_factory, which tmp_path_retention_policy does not
    cover; a child release run leaves a ~260 MB extracted wheel there, dozens per selftest run.
    """
    yield pytester
    if request.node.stash.get(_CALL_PASSED, False):
        shutil.rmtree(pytester.path, ignore_errors=True)


@pytest.fixture(autouse=True)
def _shared_harness_cache(monkeypatch):
    monkeypatch.setenv("MXNET_HARNESS_CACHE", str(HARNESS_CACHE))


@pytest.fixture
def gates(pytester):
    """``gates(*args)`` runs the harness's gates in a subprocess and returns the RunResult."""
    def _run(*args, timeout: float = 1800):
        return run_gates(pytester, str(HARNESS_ROOT / "tests"), *args, timeout=timeout)
    return _run
