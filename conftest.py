"""Options, session fixtures and the release report of the MXNet CUDA 13 wheel harness.

The fixtures are thin: each calls one function of ``build_steps`` and returns its product.
The chain is  mxnet source -> configured tree -> libmxnet.so -> staged package -> wheel -> venv;
with ``--wheel PATH`` it starts at the wheel and nothing is built.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from build_steps.errors import HarnessError, UsageError
from build_steps.options import RunOptions, make_options

HARNESS_ROOT = Path(__file__).resolve().parent
_OPTIONS_KEY = pytest.StashKey[RunOptions]()
_RESULTS_KEY = pytest.StashKey[dict]()


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------
def pytest_addoption(parser):
    g = parser.getgroup("mxnet-release", "MXNet CUDA 13 release harness")
    g.addoption("--wheel", metavar="PATH", help="audit/install this existing wheel instead of building one")
    g.addoption("--flavor", choices=("cuda", "cpu"), default="cuda", help="release profile (default: cuda)")
    g.addoption("--package-version", metavar="V", help="expected wheel version (default: --wheel-version when building)")
    g.addoption("--cmake-cache", metavar="PATH", help="CMakeCache.txt of the build the wheel came from")
    g.addoption("--mxnet-src", metavar="PATH", help="MXNet source tree (git state, commit stamp, build source)")
    g.addoption("--cuda-arch", metavar="LIST", help="MXNET_CUDA_ARCH list (default: the profile's, 8.0;8.6;8.9;9.0;10.0;12.0+PTX)")
    g.addoption("--provenance-json", metavar="PATH", help="write the provenance report as JSON here")
    g.addoption("--build-dir", metavar="DIR", help="CMake build tree (default: build, or build-cpu for --flavor cpu, inside --mxnet-src)")
    g.addoption("--jobs", type=int, metavar="N", help="parallel compile jobs (default: all cores)")
    g.addoption("--wheel-version", metavar="V", help="version to build (default 2.0.0+cu13.bw.<UTC date> / 2.0.0+cpu.linux.<date>)")
    g.addoption("--build-python", metavar="PY", help="interpreter for python -m build and the venv (default: this one)")
    g.addoption("--venv-dir", metavar="DIR", help="where to create the throwaway venv (default: a temp dir)")
    g.addoption("--keep-venv", action="store_true", help="keep the throwaway venv after the run")
    g.addoption("--find-links", action="append", metavar="DIR|URL", help="pip --find-links for the venv install (repeatable)")
    g.addoption("--index-url", metavar="URL", help="pip --index-url for the venv install")
    g.addoption("--extra-requirement", dest="extra_requirements", action="append", metavar="REQ",
                help="extra requirement installed into the venv beside the wheel (repeatable), e.g. 'numpy<1.24'")
    g.addoption("--no-deps", action="store_true", help="install the wheel without its declared dependencies")
    g.addoption("--cuda-from-wheels", action="store_true", help="assemble the CUDA root from nvcc plus pip's nvidia-* wheels")
    g.addoption("--publish", action="store_true", help="tag and publish a GitHub release after every gate passed")
    g.addoption("--dry-run", action="store_true", help="with --publish: print what would be run, change nothing")
    g.addoption("--yes", action="store_true", help="with --publish: confirm the real publish")
    g.addoption("--remote", default="origin", help="git remote for tags (default: origin)")


def pytest_configure(config):
    raw = {name: config.getoption(name) for name in (
        "wheel", "flavor", "package_version", "cmake_cache", "mxnet_src", "cuda_arch",
        "provenance_json", "build_dir", "jobs", "wheel_version", "build_python", "venv_dir",
        "keep_venv", "find_links", "index_url", "extra_requirements", "no_deps",
        "cuda_from_wheels", "publish", "dry_run", "yes", "remote")}
    try:
        config.stash[_OPTIONS_KEY] = make_options(raw)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_RESULTS_KEY] = {}


def harness_options(config) -> RunOptions:
    return config.stash[_OPTIONS_KEY]


def is_release_run(config) -> bool:
    """A run selected with ``-m release`` (alone or in an expression): skips count as failures."""
    return bool(re.search(r"\brelease\b", config.option.markexpr or "")) and not re.search(
        r"\bnot\s+release\b", config.option.markexpr or "")


@pytest.fixture(scope="session")
def options(request) -> RunOptions:
    return harness_options(request.config)


@pytest.fixture(scope="session")
def profile(options):
    return options.profile


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory, worker_id) -> Path:
    """A directory common to all xdist workers of this run (where run-once records live)."""
    base = tmp_path_factory.getbasetemp()
    root = base if worker_id == "master" else base.parent
    path = root / "harness-shared"
    path.mkdir(exist_ok=True)
    return path


# --------------------------------------------------------------------------------------------
# Strict release runs and the gate report
# --------------------------------------------------------------------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("release") is None:
        return
    results = item.config.stash[_RESULTS_KEY]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        verdict, why = report.outcome, ""
        if report.skipped:
            why = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
            if is_release_run(item.config):
                # A release run cannot pass with a gate that did not run.
                report.outcome = "failed"
                report.longrepr = f"release run: gate skipped, which counts as a failure ({why})"
                verdict = "failed"
        elif report.failed:
            why = _first_line(report)
        results[item.nodeid] = (verdict, why)


def _first_line(report) -> str:
    text = getattr(report, "longreprtext", "") or ""
    for line in text.splitlines():
        if line.startswith("E "):
            return line[2:].strip()
    return (text.strip().splitlines() or [""])[-1][:200]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    results = config.stash.get(_RESULTS_KEY, {})
    if not results:
        return
    tr = terminalreporter
    tr.section("MXNet release gates")
    for nodeid, (verdict, why) in sorted(results.items()):
        tr.write_line(f"{verdict.upper():8} {nodeid}" + (f"  -- {why}" if why and verdict != "passed" else ""))
    for line in config.stash.get(_REPORT_LINES_KEY, []):
        tr.write_line(line)


_REPORT_LINES_KEY = pytest.StashKey[list]()


def add_report_lines(config, lines):
    """Extra lines for the end of the terminal summary (provenance report, publish verdict)."""
    config.stash.setdefault(_REPORT_LINES_KEY, []).extend(lines)


def pytest_exception_interact(node, call, report):
    # HarnessError messages are complete explanations; the traceback adds only noise.
    if call.excinfo is not None and isinstance(call.excinfo.value, HarnessError):
        report.longrepr = str(call.excinfo.value)


# --------------------------------------------------------------------------------------------
# Audit: the wheel, extracted once, and the facts every static gate reads
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def wheel_path(options, request) -> Path:
    """The wheel under test: ``--wheel PATH`` when given, else the one the build chain made."""
    if options.wheel is not None:
        return options.wheel
    return request.getfixturevalue("built_wheel")


# --------------------------------------------------------------------------------------------
# Build chain: source -> configure -> compile -> bundle -> package
# --------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# Throwaway venv and runtime probes
# --------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# Publish
# --------------------------------------------------------------------------------------------
