"""Options and the run's common fixtures of the MXNet CUDA 13 wheel harness.

The chain is  mxnet source -> configured tree -> libmxnet.so -> staged package -> wheel -> venv;
with ``--wheel PATH`` it starts at the wheel and nothing is built. Each concern is a plugin in
``harness/`` (listed below); the work itself is done by ``build_steps``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

# Every harness module is rewritten for assertions wherever it is first imported (a plugin module may
# import another's helpers), so the order of the list below is no condition of anything.
pytest.register_assert_rewrite("harness")

from build_steps.errors import UsageError  # noqa: E402
from build_steps.options import RunOptions, make_options  # noqa: E402
from build_steps.profiles import PROFILES  # noqa: E402
from harness.common import (disabled_harness_plugins, disabled_plugins_message, harness_options,  # noqa: E402
                            shared_root, start_run, start_sandbox)
from harness.run_dir import run_dir_of  # noqa: E402

#: One module per concern; each finds what it needs from the others through its imports and the
#: run's state, not through its place in this list.
pytest_plugins = [
    "harness.run_dir",   # the run's dir: pytest's basetemp and where xdist workers meet
    "harness.ledger",    # every gate's verdict, filed once by the reporting process (also under xdist)
    "harness.release_set",  # the flavor's whole release set, read before -m/-k deselect
    "harness.wheel_pin",  # the wheel's bytes hashed once; every later step checks them
    "harness.dir_locks",  # one run per build dir and per --venv-dir
    "harness.gpu_policy",  # selected GPU gates that skipped make the run non-green
    "harness.gates",     # strict release runs, the gate table
    "harness.report_sections",  # JSON report: wheel sha256, GPU gates with their GPU, compiler cache
    "harness.review",    # the release review page (one HTML file per run with a wheel)
    "harness.wheel_facts",     # the wheel extracted once, the static gates' facts, the provenance report
    "harness.chain",     # source -> configure -> compile -> stage -> package, then dist/ or rejected/
    "harness.runtime",   # the throwaway venv and its probes
    "harness.publish_plugin",   # --publish: preflight, the publish gate's verdicts, the final line
    "harness.macos",     # the macOS flavor: Mach-O gates in, ELF gates out, its facts
    "harness.acceptance_shards",  # the fork's acceptance shards: selection, the per-shard table
]


#: The dest names of the options above: make_options receives exactly these.
_OPTION_DESTS: list = []


def pytest_addoption(parser):
    g = parser.getgroup("mxnet-release", "MXNet CUDA 13 release harness")
    g.addoption("--wheel", metavar="PATH", help="audit/install this existing wheel instead of building one")
    g.addoption("--flavor", choices=tuple(PROFILES), default=None,
                help="release profile (default: macos for a macosx_* --wheel, else cuda)")
    g.addoption("--package-version", metavar="V", help="expected wheel version (default: --wheel-version when building)")
    g.addoption("--cmake-cache", metavar="PATH", help="CMakeCache.txt of the build the wheel came from")
    g.addoption("--mxnet-src", metavar="PATH", help="MXNet source tree (git state, commit stamp, build source)")
    g.addoption("--cuda-arch", metavar="LIST", help="MXNET_CUDA_ARCH list (default: the profile's, 8.0;8.6;8.9;9.0;10.0;12.0+PTX); "
                "'native': SASS for this host's GPUs only (nvidia-smi or the CUDA driver), a development build "
                "that cannot publish; a usage error on a host without a GPU")
    g.addoption("--provenance-json", metavar="PATH", help="write the provenance report as JSON here")
    g.addoption("--build-dir", metavar="DIR", help="CMake build tree (default: build, or build-cpu for --flavor cpu, inside --mxnet-src)")
    g.addoption("--jobs", type=int, metavar="N", help="parallel compile jobs (default: all cores)")
    g.addoption("--wheel-version", metavar="V", help="version to build (default 2.0.0+cu13.bw.<UTC date> / 2.0.0+cpu.linux.<date>)")
    g.addoption("--build-python", metavar="PY", help="interpreter for python -m build and the venv (default: this one)")
    g.addoption("--venv-dir", metavar="DIR", help="where to create the throwaway venv (default: a temp dir)")
    g.addoption("--keep-venv", action="store_true", help="keep the throwaway venv after the run")
    g.addoption("--find-links", action="append", metavar="DIR|URL", help="pip --find-links for the venv install (repeatable)")
    g.addoption("--index-url", metavar="URL", help="pip --index-url for the venv install")
    g.addoption("--no-index", action="store_true",
                help="pip --no-index for the venv installs: only --find-links (an offline host's wheelhouse)")
    g.addoption("--extra-requirement", dest="extra_requirements", action="append", metavar="REQ",
                help="extra requirement installed into the venv beside the wheel (repeatable), e.g. 'numpy<1.24'")
    g.addoption("--no-deps", action="store_true", help="install the wheel without its declared dependencies")
    g.addoption("--cuda-from-wheels", action="store_true", help="assemble the CUDA root from nvcc plus pip's nvidia-* wheels")
    g.addoption("--publish", action="store_true", help="tag and publish a GitHub release after every gate passed")
    g.addoption("--dry-run", action="store_true", help="with --publish: print what would be run, change nothing")
    g.addoption("--yes", action="store_true", help="with --publish: confirm the real publish")
    g.addoption("--remote", default="origin", help="git remote for tags (default: origin)")
    g.addoption("--cmake-define", dest="cmake_defines", action="append", metavar="KEY=VALUE",
                help="extra CMake definition for configure (repeatable); one that contradicts the release "
                     "profile is allowed for development and makes the run unpublishable")
    g.addoption("--fast-compile", action="store_true",
                help="compile host code at -O0 instead of the release's -O3 (about half the compile time of "
                     "a one-arch build; CPU operators run slower): a development build that cannot publish")
    g.addoption("--allow-dirty", action="store_true",
                help="build a tree with uncommitted tracked changes (development only: the run cannot publish)")
    g.addoption("--fresh", action="store_true",
                help="delete the build dir and configure anew (e.g. after changing the CUDA compiler or toolkit)")
    g.addoption("--compiler-launcher", choices=("auto", "sccache", "ccache", "none"), default="auto",
                help="compile through this compiler cache (auto: sccache, else ccache, else none); its "
                     "location, size and remote storage come from SCCACHE_*/CCACHE_* (default: auto)")
    g.addoption("--glibc-floor", metavar="VERSIONS",
                help="oldest host the wheel must load on, replacing the profile's (Ubuntu 24.04: glibc 2.39, "
                "GLIBCXX_3.4.33, CXXABI_1.3.15): a glibc version (2.28) or GLIBC_2.28,GLIBCXX_3.4.25,CXXABI_1.3.11")
    g.addoption("--allow-gpu-skips", action="store_true",
                help="a GPU gate that skips (no GPU on this host) does not fail the run")
    g.addoption("--pass-env", dest="pass_env", action="append", metavar="NAME",
                help="pass this environment variable to the wheel's code (probes, acceptance shards, pip) "
                     "beside the allow-list (repeatable); names that look like secrets are refused")
    g.addoption("--no-sandbox", action="store_true",
                help="run the tree's build and the wheel's code without the bubblewrap sandbox (a host "
                     "without user namespaces): a development run that cannot publish")
    _OPTION_DESTS[:] = [opt.dest for opt in g.options]


def pytest_configure(config):
    # Fail closed: -p no:<a harness plugin> (on the command line, in PYTEST_ADDOPTS or in an ini's
    # addopts) would quietly drop a check, e.g. the GPU policy or the release set.
    disabled = disabled_harness_plugins(config)
    if disabled:
        raise pytest.UsageError(disabled_plugins_message(disabled))
    raw = {dest: config.getoption(dest) for dest in _OPTION_DESTS}
    try:
        options = make_options(raw)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    start_run(config, options, tuple(pytest_plugins), run_dir_of(config))
    start_sandbox(config, options, run_dir_of(config).root)


@pytest.fixture(scope="session")
def options(request) -> RunOptions:
    return harness_options(request.config)


@pytest.fixture(scope="session")
def profile(options):
    return options.profile


@pytest.fixture(scope="session")
def shared_dir(request) -> Path:
    """Where xdist workers of this run meet: run-once records, the extracted wheel, the venv."""
    path = shared_root(request.config)
    path.mkdir(exist_ok=True)
    return path
