"""Fixtures of the harness's own tests.

The selftests run the real gates (``tests/``) through pytester against wheels, trees and venvs
made here from real parts. Each area keeps its fixtures in its own module, imported below.
"""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from build_steps.cuda_root import default_cache_dir

HARNESS_ROOT = Path(__file__).resolve().parent.parent
#: The sample tree's tests/python are acceptance shards the selftests run in a venv, not selftests.
collect_ignore = ["sample_mxnet"]
#: ... and its build dirs beside it (the README's main job builds there: <tree>-build, <tree>-build-cpu)
collect_ignore_glob = ["sample_mxnet-build*"]
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


def host_opencv(args) -> tuple[str, ...]:
    """``args`` with ``--opencv=system`` added unless they state an OpenCV (an ``--opencv`` or
    ``--opencv-prefix`` argument).

    The profiles' release default is the harness's own minimal OpenCV (``built``, issue 46), but
    the selftests' wheels are linked against this host's libopencv-dev (its libraries, its closure
    with the GL and TLS libraries some selftests look for): an audit of one is judged against the
    system budget (tests/test_opencv_bundle.py), and a selftest's build of the sample tree takes the
    host's OpenCV, as before, so it never waits on the one-time OpenCV build (about 10 minutes on a
    fresh 2-core machine, which .ci/run starts in the background; several build selftests give the
    build only 240 s to reach its compile). The built OpenCV's selftests say ``--opencv=built``
    (selftest/test_opencv_build.py; the README's main job builds with the default)."""
    args = tuple(map(str, args))
    return args if any(a.startswith("--opencv") for a in args) else (*args, "--opencv=system")


def run_gates(pytester, *args, timeout: float = 1800):
    """Run the release gates of this harness in a child pytest, as a user would.

    The child uses the harness's own pytest.ini and root conftest, so options, markers and the
    strict-release rules are exactly those of a real run; against this host's OpenCV unless the
    caller states one (host_opencv).
    """
    return pytester.runpytest_subprocess(
        "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
        "-p", "no:cacheprovider", *host_opencv(args), timeout=timeout)


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


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch):
    # A child release run refuses credential-shaped variables (harness.plugins.plugin_guard): a developer's
    # SSH_AUTH_SOCK or GH_TOKEN would fail every selftest that runs one. The selftests that show
    # the refusal set their own.
    from build_steps.credentials import unexplained_credentials
    for name in unexplained_credentials(os.environ, {}):
        monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def _selftest_compiler_caches(tmp_path_factory):
    """The child builds' compiler caches, private to this selftest session (one per xdist worker).

    An sccache server outlives the build that started it (10 minutes idle) and serves every client
    on its port: left to the default port it would be started with one pytester test's HOME as its
    cache and then serve the user's own builds and later tests from that deleted directory."""
    from build_steps import launcher as compiler_cache
    root = tmp_path_factory.mktemp("compiler-caches")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"SCCACHE_DIR": str(root / "sccache"), "SCCACHE_SERVER_PORT": str(port),
           "CCACHE_DIR": str(root / "ccache")}
    yield env
    try:
        compiler_cache.stop_server(compiler_cache.choose("sccache"), env)
    except Exception:  # no sccache on this host: nothing was started
        pass


@pytest.fixture(autouse=True)
def _private_compiler_caches(monkeypatch, _selftest_compiler_caches):
    for key, value in _selftest_compiler_caches.items():
        monkeypatch.setenv(key, value)


#: The session fixtures of the longest chains (minutes each, one after the other): the real fork's
#: wheel (staged, packaged, installed with its runtime gates) and the one built from the harness's
#: own OpenCV (minimal_opencv, the one-time OpenCV build, then the same chain with it).
_FORK_WHEEL_CHAIN = frozenset({"fork_staged", "fork_wheel", "fork_gates"})
_BUILT_OPENCV_CHAIN = "minimal_opencv"
#: Where in the collection the built-OpenCV chain goes: this far through it (a fraction).
BUILT_OPENCV_AT = 0.75


def order_chains(items: list) -> list:
    """The fork wheel's chain first, the built-OpenCV chain three quarters of the way through, the
    rest in their own order around them.

    pytest-xdist's load scheduling hands each worker contiguous runs of the collection in its
    order. The fork wheel's chain first: one worker takes it from the start (its session fixtures
    built once, by that worker) while the other takes the rest. The built-OpenCV chain needs the
    one-time OpenCV build (~16 core-minutes on a fresh machine, started by .ci/run in the
    background, niced): first in the collection, one worker waited ~8 minutes on its lock in a
    fresh CI run, doing nothing. Late, the build has run in the gaps the selftests leave (most of
    them wait on venv installs and child runs more than they compute); not last, so the other
    worker still has selftests to run while this chain's own minutes (the fork's wheel staged,
    packaged and installed with the built OpenCV, a sample build with --opencv=built) go by. Its
    session fixtures are made once per run for both workers (selftest/test_opencv_build.py), so
    the chain may straddle the two workers at no cost but a wait."""
    fork, built, rest = [], [], []
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        (fork if names & _FORK_WHEEL_CHAIN else built if _BUILT_OPENCV_CHAIN in names else rest).append(item)
    at = int(len(rest) * BUILT_OPENCV_AT)
    return fork + rest[:at] + built + rest[at:]


def pytest_collection_modifyitems(config, items):
    """The long chains where they overlap best (order_chains). Every xdist worker orders the same
    collection the same way, as xdist requires."""
    items[:] = order_chains(items)


@pytest.fixture
def gates(pytester):
    """``gates(*args)`` runs the harness's gates in a subprocess and returns the RunResult."""
    def _run(*args, timeout: float = 1800):
        return run_gates(pytester, str(HARNESS_ROOT / "tests"), *args, timeout=timeout)
    return _run


def pytest_terminal_summary(terminalreporter):
    """A missing fork fixture is one line in the summary, not N silent skips (issue 36)."""
    from selftest.fixtures_realtree import FIXTURES_DIR, FORK_TREE_ENV
    skipped = [r for r in terminalreporter.stats.get("skipped", ())
               if "no real fork tree" in str(getattr(r, "longrepr", "") or "")]
    if skipped:
        terminalreporter.write_line(
            f"NOTE: {len(skipped)} selftests of the real fork tree skipped: no {FIXTURES_DIR}/mxnet-fork-*.tar.xz "
            f"beside this checkout; set {FORK_TREE_ENV}=<an unpacked fork tree or its .tar.xz> to run them",
            yellow=True, bold=True)
    from selftest.fixtures_realtree import LIBMXNET_ENV, NO_LIBRARY
    no_lib = [r for r in terminalreporter.stats.get("skipped", ())
              if NO_LIBRARY in str(getattr(r, "longrepr", "") or "")]
    if no_lib:
        terminalreporter.write_line(
            f"NOTE: {len(no_lib)} selftests of the real fork's wheel skipped: no {FIXTURES_DIR}/mxnet-fork-*-cpu-*/"
            f"libmxnet.so.xz beside this checkout; set {LIBMXNET_ENV}=<a libmxnet.so of the fork, cpu flavor, or "
            "its .xz> to run them", yellow=True, bold=True)
