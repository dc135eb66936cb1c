"""The build chain as session fixtures: source -> configure -> compile -> stage -> package.

Each fixture runs its step once for all xdist workers (build_steps.once.run_once: a file lock
and a JSON record under the run's shared dir) and returns the step's product. pytest-timeout
never limits them (timeout_func_only in pytest.ini): only gate bodies are timed.
"""
from __future__ import annotations

import errno
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from build_steps import bundle, configure, filesystem, package, preflight, source
from build_steps import compile as compile_step
from build_steps import launcher as compiler_cache
from build_steps import cuda_root as cuda_root_step
from build_steps.errors import BuildInterrupted, HarnessError, StepError, UsageError
from build_steps.overrides import broken_promises, development_option_promises
from build_steps.once import run_once
from build_steps.pinning import verify
from build_steps.readers import ninja_log

from .common import (BUILD_RECORD, FIRST_STEPS, LIVE, STEPS, chain_records, harness_options,
                     is_release_run, is_worker, report_at_session_end, say, shared_root)
from .ledger import ledger_of
from .wheel_pin import load_pin

#: "configure failed" / "compile INTERRUPTED": the step that stopped this run's chain, if one did.
CHAIN_STOP_KEY = pytest.StashKey[str]()


def chain_stop(config) -> str | None:
    """What stopped the build chain in this run (``"configure failed"``), None if nothing did."""
    return config.stash.get(CHAIN_STOP_KEY, None)


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
        refused = preflight.refusals(root, options.profile, options.cuda_arch, options.cmake_defines,
                                     release=is_release_run(config), allow_dirty=options.allow_dirty,
                                     build_dir=BuildPaths(options, root).build_dir)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if refused:
        raise pytest.UsageError("refusing to build (nothing was configured or compiled):\n  - "
                                + "\n  - ".join(refused))
    try:
        compiler_cache.choose(options.compiler_launcher)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def guarded(step: str, produce, where: Path):
    """``produce`` as the chain's step ``step``: an interrupt anywhere in it is that step's
    INTERRUPTED (exit 2, no traceback), and a full or read-only disk under ``where`` is one
    sentence naming the filesystem, not an OSError traceback."""
    def run():
        start = time.monotonic()
        try:
            return produce()
        except BuildInterrupted:
            raise
        except KeyboardInterrupt as exc:
            why = f" by {exc}" if str(exc).startswith("signal ") else ""
            raise BuildInterrupted(step, f"interrupted{why} after {time.monotonic() - start:.0f}s; its "
                                   "processes were stopped. Re-run the same command to resume") from None
        except OSError as exc:
            path = Path(exc.filename) if exc.filename else where
            if filesystem.is_no_space(exc):
                raise StepError(step, filesystem.no_space(path)) from None
            if exc.errno == errno.EROFS:
                raise StepError(step, f"cannot write {path}: read-only file system "
                                f"{filesystem.filesystem_name(path)}; pass --build-dir=DIR on a "
                                "writable filesystem") from None
            raise
    return run


class BuildPaths:
    """Where one build of one tree lives: the CMake tree, its logs, the wheel staging dir."""

    def __init__(self, options, src: Path):
        self.src = src
        bd = options.build_dir or Path(options.profile.build_dir)
        self.build_dir = (bd if bd.is_absolute() else src / bd).resolve()
        self.logs = self.build_dir / "harness-logs"
        self.staging = self.build_dir / "harness-wheel"
        self.dist = src / "dist"


@pytest.fixture(scope="session")
def mxnet_source(options, shared_dir, request) -> source.SourceInfo:
    """The MXNet tree to build (--mxnet-src, or the cwd when it is one), checked for submodules."""
    if options.wheel is not None:
        pytest.skip("--wheel given: the build chain does not run (nothing is configured or built)")

    def produce():
        root = source.resolve_source(options.mxnet_src, Path(request.config.invocation_params.dir))
        info = source.check_source_tree(root, {**options.profile.configure_flags, **options.cmake_defines})
        say(f"==> MXNet source tree: {root} (commit {info.commit or 'not a git checkout'}, "
            f"flavor {options.profile.name})")
        for warning in info.submodule_warnings:
            say(f"WARNING: {warning}")
        return info.to_json()
    where = options.mxnet_src or Path(request.config.invocation_params.dir)
    return source.SourceInfo.from_json(run_once(shared_dir, "source", guarded("source", produce, where)))


@pytest.fixture(scope="session")
def build_paths(options, mxnet_source) -> BuildPaths:
    return BuildPaths(options, mxnet_source.root)


@pytest.fixture(scope="session")
def cuda_root(options, shared_dir):
    """--cuda-from-wheels: the assembled CUDA root (None otherwise, or for the CPU flavor)."""
    if not (options.cuda_from_wheels and options.profile.is_cuda):
        return None

    def produce():
        say("==> assembling a CUDA root from nvcc + pip's nvidia-* wheels (cached)")
        root = cuda_root_step.assemble_cuda_root(python=sys.executable, find_links=options.find_links,
                                                 index_url=options.index_url, progress=LIVE)
        return root.to_json()
    return cuda_root_step.CudaRoot.from_json(run_once(shared_dir, "cuda_root", guarded(
        "cuda-root", produce, cuda_root_step.default_cache_dir())))


@pytest.fixture(scope="session")
def compiler_launcher(options) -> compiler_cache.Launcher:
    """--compiler-launcher resolved to a tool on this host (sccache, ccache or none)."""
    return compiler_cache.choose(options.compiler_launcher)


@pytest.fixture(scope="session")
def configured_tree(options, profile, shared_dir, build_paths, cuda_root,
                    compiler_launcher) -> configure.ConfigureResult:
    def produce():
        if options.fresh and build_paths.build_dir.exists():
            say(f"==> --fresh: deleting {build_paths.build_dir}")
            shutil.rmtree(build_paths.build_dir)
        say(f"==> configure {build_paths.build_dir} (compiler launcher: {compiler_launcher.path or 'none'})")
        for opt in options.development_options:
            say(f"[configure] development option {opt}")
        for key, value in options.build_defines.items():
            say(f"[configure] override -D{key}={value}")
        res = configure.configure(build_paths.src, build_paths.build_dir, profile, options.cuda_arch,
                                  build_paths.logs, extra_defs={**(cuda_root.cmake_args if cuda_root else {}),
                                                                **compiler_cache.cmake_defines(compiler_launcher)},
                                  env=cuda_root.env if cuda_root else None, overrides=options.build_defines)
        say(f"[configure] {'first-time' if res.first_time else 'refresh'} in {res.seconds:.1f}s; "
            f"gencode: {' '.join(res.gencode) or 'none (CPU)'}")
        for note in res.notes:
            say(f"[configure] note: {note}")
        return res.to_json()
    return configure.ConfigureResult.from_json(run_once(shared_dir, "configure", guarded(
        "configure", produce, build_paths.build_dir)))


@pytest.fixture(scope="session")
def libmxnet(options, shared_dir, build_paths, configured_tree, cuda_root,
             compiler_launcher) -> compile_step.CompileResult:
    def produce():
        say(f"==> compile target mxnet in {build_paths.build_dir} with {options.jobs} jobs "
            f"(log: {build_paths.logs / 'compile.log'})")
        return compile_step.compile_mxnet(build_paths.build_dir, options.jobs, build_paths.logs,
                                          env=cuda_root.env if cuda_root else None, progress=LIVE,
                                          launcher=compiler_launcher).to_json()
    return compile_step.CompileResult.from_json(run_once(shared_dir, "compile", guarded(
        "compile", produce, build_paths.build_dir)))


@pytest.fixture(scope="session")
def staged_package(options, profile, shared_dir, build_paths, libmxnet) -> bundle.StagedRecord:
    """libmxnet.so + headers staged into python/mxnet, OpenCV closure bundled, RUNPATHs set."""
    def produce():
        start = time.monotonic()
        built_with = configure.expected_features(profile, options.cmake_defines)
        staged = bundle.stage_package(libmxnet.library, build_paths.src, profile,
                                      wants_opencv=bool(built_with.get("USE_OPENCV")))
        say(f"[stage] {len(staged.bundle)} libraries bundled into {staged.package_dir / 'lib'}; "
            f"libmxnet RUNPATH {':'.join(staged.runpath)}")
        for w in staged.warnings:
            say(f"[stage] warning: {w}")
        return staged.record(time.monotonic() - start).to_json()
    return bundle.StagedRecord.from_json(run_once(shared_dir, "stage", guarded("stage", produce, build_paths.build_dir)))


@pytest.fixture(scope="session")
def built_wheel(options, profile, shared_dir, build_paths, staged_package) -> Path:
    """The wheel, in a staging dir: dist/ gets it only after the gates passed (DistDecision)."""
    def produce():
        version = options.wheel_version or profile.default_version()
        say(f"==> python -m build --wheel (version {version}) in {build_paths.src / 'python'}")
        res = package.build_wheel(build_paths.src, version, profile, build_paths.staging,
                                  build_paths.logs, options.build_python or sys.executable)
        say(f"[package] {res.wheel.name} in {res.seconds:.1f}s (staged; dist/ after the gates)")
        return {**res.to_json(), "version": version, "dist": str(build_paths.dist)}
    return Path(run_once(shared_dir, BUILD_RECORD, guarded("package", produce, build_paths.build_dir))["wheel"])


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

    # tryfirst: the run-once records live under the basetemp pytest removes after a green run.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        config = session.config
        shared = None if is_worker(config) else shared_root(config)
        if shared is None:
            return
        records = chain_records(shared)
        if not records:
            return
        lines = _chain_lines(records)
        for key, label in (*FIRST_STEPS, *STEPS):
            rec = records.get(key) or {}
            if rec.get("failed"):
                config.stash[CHAIN_STOP_KEY] = f"{label} {'INTERRUPTED' if rec.get('interrupted') else 'failed'}"
                break
        lines += _override_lines(harness_options(config))
        rec = records.get(BUILD_RECORD)
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


def _chain_lines(records: dict) -> list:
    """Which tree was built, and each step's time (or FAILED)."""
    lines = []
    src = records.get("source", {}).get("result", {})
    if src:
        lines.append(f"build chain: MXNet tree {src.get('root')} (commit {src.get('commit') or 'n/a'})")
        lines += [f"WARNING: {w}" for w in src.get("submodule_warnings", [])]
    times = []
    for key, label in (*FIRST_STEPS, *STEPS):
        rec = records.get(key)
        if rec is None or (key in dict(FIRST_STEPS) and not rec.get("failed")):
            continue
        if rec.get("interrupted"):
            times.append(f"{label} INTERRUPTED ({rec.get('error', '').split('] ', 1)[-1].split(';')[0]}; "
                         "re-run to resume)")
            continue
        if rec.get("failed"):
            times.append(f"{label} FAILED")
            continue
        r = rec["result"]
        extra = ""
        if key == "compile":
            extra = " (no work to do)" if r.get("no_work") else f" ({r.get('steps_run')} steps)"
        times.append(f"{label} {r.get('seconds', 0):.1f}s{extra}")
    if times:
        lines.append("build chain steps: " + ", ".join(times))
    compiled = (records.get("compile") or {}).get("result") or {}
    stats = compiler_cache.LauncherStats.from_json(compiled.get("launcher"))
    if stats:
        lines.append(stats.summary())
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
    lines.append("cmake overrides: " + (" ".join(f"-D{k}={v}" for k, v in options.build_defines.items()) or "none"))
    lines += [f"  breaks: {b}" for b in broken]
    if options.allow_dirty:
        lines.append("  --allow-dirty: a dirty tree may be built")
    if broken or options.allow_dirty:
        lines.append("  this run is a development build: it cannot publish")
    return lines
