"""The build chain as session fixtures (one per row of harness.steps.CHAIN), the checks made
before a build starts, and the end of the chain: the wheel to dist/ or set aside, the summary.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from build_steps import launcher, package, preflight, source
from build_steps.cuda_root import default_cache_dir
from build_steps.errors import HarnessError, UsageError
from build_steps.overrides import broken_promises, development_option_promises
from build_steps.pinning import verify
from build_steps.readers import ninja_log

from .common import LIVE, harness_options, is_release_run, is_worker, report_at_session_end, shared_root
from .steps import CHAIN, WHEEL_STEP, BuildPaths, after_chain_records, chain_records, step_times
from .ledger import ledger_of
from .wheel_pin import load_pin

def pytest_configure(config):
    LIVE.config = config
    config.pluginmanager.register(DistDecision(), "mxnet-dist-decision")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    # before the terminal reporter writes the result letter (build output ended its line)
    LIVE.resume_progress_line(report.nodeid)


def pytest_collection_modifyitems(config, items):
    # A run that will build is checked here, once, before anything starts: the tree exists, the
    # selection is one that builds, and nothing known now would fail the release hours later.
    options = harness_options(config)
    if options.wheel is not None or not any("mxnet_source" in getattr(i, "fixturenames", ()) for i in items):
        return
    markexpr = config.option.markexpr or ""
    if markexpr and not (is_release_run(config) or re.search(r"(?<!not )\bbuild\b", markexpr)):
        raise pytest.UsageError(
            f"-m {markexpr!r} selects gates that audit an existing wheel and never builds one: pass "
            "--wheel=PATH (or select -m release to build and verify a wheel from --mxnet-src)")
    try:
        root = source.resolve_source(options.mxnet_src, Path(config.invocation_params.dir))
        uses_cache = options.cuda_from_wheels or launcher.choose(options.compiler_launcher).name == "sccache"
        refused = preflight.refusals(root, options.profile, options.cuda_arch, options.cmake_defines,
                                     release=is_release_run(config), allow_dirty=options.allow_dirty,
                                     build_dir=BuildPaths(options, root).build_dir,
                                     cache=default_cache_dir() if uses_cache else None)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if refused:
        raise pytest.UsageError("refusing to build (nothing was configured or compiled):\n  - "
                                + "\n  - ".join(refused))
    try:
        launcher.choose(options.compiler_launcher)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture(scope="session")
def build_paths(options, mxnet_source) -> BuildPaths:
    return BuildPaths(options, mxnet_source.root)


@pytest.fixture(scope="session")
def compiler_launcher(options) -> launcher.Launcher:
    """--compiler-launcher resolved to a tool on this host (sccache, ccache or none)."""
    return launcher.choose(options.compiler_launcher)


# The steps' session fixtures (mxnet_source, cuda_root, configured_tree, libmxnet, staged_package,
# built_wheel), one per row of the chain's table.
for _step in CHAIN:
    globals()[_step.fixture] = _step.fixture_function()
del _step


class DistDecision:
    """Moves the built wheel to dist/ when every build and provenance gate passed, else keeps it
    aside as FAILED-GATES; reports the chain's steps and times. Gate outcomes are read from the
    verdict ledger (harness.ledger), which on an xdist controller holds every worker's."""

    def __init__(self):
        self.failed: list = []
        self.passed_provenance = 0

    def _read_ledger(self, config) -> None:
        """The release gates of the build and provenance kinds: which failed (a skip during the
        test counts: the gate did not vouch for the wheel), how many provenance gates passed."""
        gates = {n: e for n, e in ledger_of(config).entries.items()
                 if "release" in e.markers and ("provenance" in e.markers or "build" in e.markers)}
        self.failed = [n for n, e in gates.items() if e.verdict == "failed"
                       or (e.verdict in ("skipped", "xfailed") and e.when == "call")]
        self.passed_provenance = sum(e.verdict == "passed" and "provenance" in e.markers
                                     for e in gates.values())

    # tryfirst: dist/ reads the pinned copy before harness.wheel_pin makes its dir removable again.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        config = session.config
        shared = None if is_worker(config) else shared_root(config)
        if shared is None:
            return
        records = chain_records(shared)
        if not records:
            return
        lines = _chain_lines(records, after_chain_records(shared))
        lines += _override_lines(harness_options(config))
        rec = records.get(WHEEL_STEP.record)
        if rec and not rec.get("failed"):
            self._read_ledger(config)
            try:
                lines.append(self._place_wheel(config, Path(rec["result"]["wheel"]), Path(rec["result"]["dist"])))
            except HarnessError as exc:  # a full disk, a swapped wheel, a released version: one block
                lines.append(f"wheel NOT placed in dist/: {exc}")
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        report_at_session_end(config, lines)

    def _place_wheel(self, config, wheel: Path, dist: Path) -> str:
        if self.failed:
            kept = package.reject_wheel(wheel, dist)
            ledger_of(config).wheel = str(kept)
            return (f"wheel NOT copied to dist/: {len(self.failed)} build/provenance gate(s) failed; "
                    f"kept aside as {kept}")
        if not self.passed_provenance:
            return f"wheel NOT copied to dist/: no provenance gate ran; it stays in {wheel.parent}"
        pin = load_pin(shared_root(config))
        # dist/ gets the run's private copy, checked again first (build_steps.pinning).
        source = verify(pin, "dist/") if pin is not None else wheel
        dest = package.publish_to_dist(source, dist, sha256=pin.sha256 if pin else None, src=dist.parent)
        ledger_of(config).wheel = str(dest)
        return f"wheel passed {self.passed_provenance} provenance gate(s): {dest}"


def _chain_lines(records: dict, after: dict | None = None) -> list:
    """Which tree was built, and each step's time (or FAILED, or INTERRUPTED, the install's too)."""
    lines = []
    src = records.get("source", {}).get("result", {})
    if src:
        lines.append(f"build chain: MXNet tree {src.get('root')} (commit {src.get('commit') or 'n/a'})")
        lines += [f"WARNING: {w}" for w in src.get("submodule_warnings", [])]
    times = step_times(records, after)
    if times:
        lines.append("build chain steps: " + ", ".join(times))
    compiled = (records.get("compile") or {}).get("result") or {}
    stats = launcher.LauncherStats.from_json(compiled.get("launcher"))
    if stats:
        lines.append(stats.summary())
    if compiled.get("reproducible"):
        lines.append(compiled["reproducible"])
    lines += ninja_log.describe(compiled.get("build_time"), compiled.get("seconds"))
    return lines


def _override_lines(options) -> list:
    """The development switches of this run, each with the promise it breaks (if any)."""
    if not options.cmake_defines and not options.allow_dirty and not options.development_options:
        return []
    broken = development_option_promises(options) + broken_promises(options)
    lines = []
    if options.development_options:
        lines.append("development options: " + " ".join(options.development_options))
    lines += [f"host workaround (allowed): {w}" for w in options.host_workarounds]
    lines.append("cmake overrides: " + (" ".join(f"-D{k}={v}" for k, v in options.build_defines.items()) or "none"))
    lines += [f"  breaks: {b}" for b in broken]
    if options.allow_dirty:
        lines.append("  --allow-dirty: a dirty tree may be built")
    if broken or options.allow_dirty:
        lines.append("  this run is a development build: it cannot publish")
    return lines
