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


def shared_root(config) -> Path | None:
    """The directory common to all xdist workers of this run (where run-once records live):
    the controller's basetemp, which is each worker's basetemp's parent. None before tmp paths exist."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return None
    base = factory.getbasetemp()
    return (base.parent if hasattr(config, "workerinput") else base) / "harness-shared"


@pytest.fixture(scope="session")
def shared_dir(request) -> Path:
    path = shared_root(request.config)
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


def pytest_collection_modifyitems(config, items):
    options = harness_options(config)
    # A run that will build needs an MXNet tree: say so once, before anything starts, instead of
    # erroring every gate that depends on the wheel.
    if options.wheel is None and any("mxnet_source" in getattr(i, "fixturenames", ()) for i in items):
        from build_steps.source import resolve_source
        try:
            resolve_source(options.mxnet_src, Path(config.invocation_params.dir))
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
    # The GPU and cuBLAS gates are promises of the CUDA profile only. A CPU wheel does not make
    # them, so they are left out of its run (rather than skipped, which -m release counts as failed).
    if options.profile.is_cuda:
        return
    keep, dropped = [], []
    for item in items:
        is_gate = item.get_closest_marker("release") is not None
        is_gpu = item.get_closest_marker("gpu") or item.get_closest_marker("cublas")
        (dropped if is_gate and is_gpu else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _first_line(report) -> str:
    text = getattr(report, "longreprtext", "") or ""
    for line in text.splitlines():
        if line.startswith("E "):
            return line[2:].strip()
    # pytest.fail(..., pytrace=False) gives the bare message: its first line names the regression.
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return (lines or [""])[0][:200]


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
#: Where the built wheel ended up after the gates (dist/ or dist/rejected/), for the final line.
FINAL_WHEEL_KEY = pytest.StashKey[str]()


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


@pytest.fixture(scope="session")
def extracted_wheel(wheel_path, shared_dir):
    """The wheel, extracted (RECORD verified while extracting) once for all xdist workers."""
    from build_steps.audit import shared_product
    from build_steps.wheel import extract_wheel
    return shared_product(shared_dir, "extracted-wheel",
                          lambda: extract_wheel(wheel_path, shared_dir / "wheel"))


@pytest.fixture(scope="session")
def audit(extracted_wheel, options, shared_dir):
    """Every fact the static gates judge (build_steps.audit.collect), computed once."""
    from build_steps.audit import collect, shared_product
    return shared_product(shared_dir, "audit", lambda: collect(extracted_wheel, options))


@pytest.fixture(scope="session")
def libmxnet_info(audit):
    """libmxnet.so's dynamic facts; a gate that needs them fails with the reason they are missing."""
    if audit.libmxnet_error or audit.libmxnet is None:
        pytest.fail(f"cannot check: {audit.libmxnet_error}", pytrace=False)
    return audit.libmxnet


_AUDIT_VERDICTS: dict = {}


def pytest_runtest_logreport(report):
    # Runs on the xdist controller too, so the JSON report sees every worker's verdicts.
    if "provenance" not in report.keywords or (report.when != "call" and report.passed):
        return
    why = ""
    if not report.passed:
        text = getattr(report, "longreprtext", "") or ""
        why = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("E ")),
                   (text.strip().splitlines() or [""])[0])[:300]
    if report.when == "call" or report.nodeid not in _AUDIT_VERDICTS or not report.passed:
        _AUDIT_VERDICTS[report.nodeid] = (report.outcome, why)


# tryfirst: pytest removes a green run's basetemp (tmp_path_retention_policy) in its own
# sessionfinish; the records under shared_root must be read before that.
@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput"):
        return  # the controller reports for everyone
    verdicts = dict(_AUDIT_VERDICTS)
    _AUDIT_VERDICTS.clear()
    options = config.stash[_OPTIONS_KEY] if _OPTIONS_KEY in config.stash else None
    if not verdicts or options is None:
        return
    from build_steps.audit import load_shared
    from build_steps.report import provenance_document, summary_lines, write_json_atomic
    shared = shared_root(config)
    audit_facts = load_shared(shared, "audit") if shared is not None else None
    add_report_lines(config, ["", "Provenance report:"] + ["  " + ln for ln in summary_lines(audit_facts, verdicts)])
    if options.provenance_json is not None:
        write_json_atomic(options.provenance_json, provenance_document(audit_facts, verdicts, options))
        add_report_lines(config, [f"  provenance JSON written to {options.provenance_json}"])


# --------------------------------------------------------------------------------------------
# Build chain: source -> configure -> compile -> bundle -> package
# --------------------------------------------------------------------------------------------
import json as _bc_json
import sys as _bc_sys

from build_steps import bundle as _bundle
from build_steps import compile as _compile
from build_steps import configure as _configure
from build_steps import cuda_root as _cuda_root
from build_steps import package as _package
from build_steps import source as _source
from build_steps.once import run_once as _run_once

_BUILD_RECORD = "built_wheel"


_BC_STATE: dict = {}


@pytest.hookimpl(specname="pytest_configure")
def pytest_build_chain_configure(config):
    _BC_STATE["config"] = config


class _LiveStream:
    """Writes straight to the terminal while pytest's capture is on (as live logging does)."""

    def write(self, text):
        config = _BC_STATE.get("config")
        capman = config.pluginmanager.getplugin("capturemanager") if config else None
        if capman is None:
            (_bc_sys.__stderr__ or _bc_sys.stderr).write(text)
            return
        with capman.global_and_fixture_disabled():
            _bc_sys.stderr.write(text)
            _bc_sys.stderr.flush()

    def flush(self):
        pass


_LIVE = _LiveStream()


def _say(line: str) -> None:
    """Progress for the person watching, past pytest's output capture."""
    print(line, file=_LIVE, flush=True)


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
def mxnet_source(options, shared_dir, request) -> _source.SourceInfo:
    """The MXNet tree to build (--mxnet-src, or the cwd when it is one), checked for submodules."""
    if options.wheel is not None:
        pytest.skip("--wheel given: the build chain does not run (nothing is configured or built)")

    def produce():
        root = _source.resolve_source(options.mxnet_src, Path(request.config.invocation_params.dir))
        info = _source.check_source_tree(root)
        _say(f"==> MXNet source tree: {root} (commit {info.commit or 'not a git checkout'}, "
             f"flavor {options.profile.name})")
        return info.to_json()
    return _source.SourceInfo.from_json(_run_once(shared_dir, "source", produce))


@pytest.fixture(scope="session")
def build_paths(options, mxnet_source) -> BuildPaths:
    return BuildPaths(options, mxnet_source.root)


@pytest.fixture(scope="session")
def cuda_root(options, shared_dir):
    """--cuda-from-wheels: the assembled CUDA root (None otherwise, or for the CPU flavor)."""
    if not (options.cuda_from_wheels and options.profile.is_cuda):
        return None

    def produce():
        _say("==> assembling a CUDA root from nvcc + pip's nvidia-* wheels (cached)")
        root = _cuda_root.assemble_cuda_root(python=_bc_sys.executable, find_links=options.find_links,
                                             index_url=options.index_url)
        return root.to_json()
    return _cuda_root.CudaRoot.from_json(_run_once(shared_dir, "cuda_root", produce))


@pytest.fixture(scope="session")
def configured_tree(options, profile, shared_dir, build_paths, cuda_root) -> _configure.ConfigureResult:
    def produce():
        _say(f"==> configure {build_paths.build_dir}")
        res = _configure.configure(build_paths.src, build_paths.build_dir, profile, options.cuda_arch_text,
                                   build_paths.logs, extra_defs=cuda_root.cmake_args if cuda_root else None,
                                   env=cuda_root.env if cuda_root else None)
        _say(f"[configure] {'first-time' if res.first_time else 'refresh'} in {res.seconds:.1f}s; "
             f"gencode: {' '.join(res.gencode) or 'none (CPU)'}")
        for note in res.notes:
            _say(f"[configure] note: {note}")
        return res.to_json()
    return _configure.ConfigureResult.from_json(_run_once(shared_dir, "configure", produce))


@pytest.fixture(scope="session")
def libmxnet(options, shared_dir, build_paths, configured_tree, cuda_root) -> _compile.CompileResult:
    def produce():
        _say(f"==> compile target mxnet in {build_paths.build_dir} with {options.jobs} jobs "
             f"(log: {build_paths.logs / 'compile.log'})")
        return _compile.compile_mxnet(build_paths.build_dir, options.jobs, build_paths.logs,
                                      env=cuda_root.env if cuda_root else None, progress=_LIVE).to_json()
    return _compile.CompileResult.from_json(_run_once(shared_dir, "compile", produce))


@pytest.fixture(scope="session")
def staged_package(profile, shared_dir, build_paths, libmxnet) -> dict:
    """libmxnet.so + headers staged into python/mxnet, OpenCV closure bundled, RUNPATHs set."""
    def produce():
        import time as _t
        start = _t.monotonic()
        staged = _bundle.stage_package(libmxnet.library, build_paths.src, profile)
        _say(f"[stage] {len(staged.bundle)} libraries bundled into {staged.package_dir / 'lib'}; "
             f"libmxnet RUNPATH {':'.join(staged.runpath)}")
        for w in staged.warnings:
            _say(f"[stage] warning: {w}")
        return {
            "package_dir": str(staged.package_dir), "libmxnet": str(staged.libmxnet),
            "bundled": [{"soname": b.soname, "path": str(b.path), "source": str(b.source),
                         "seed": b.seed, "needed_by": b.needed_by} for b in staged.bundle],
            "unresolved": staged.bundle.unresolved, "runpath": staged.runpath,
            "dropped_runpath": staged.dropped_runpath, "headers": staged.headers,
            "warnings": staged.warnings, "seconds": _t.monotonic() - start,
        }
    return _run_once(shared_dir, "stage", produce)


@pytest.fixture(scope="session")
def built_wheel(options, profile, shared_dir, build_paths, staged_package) -> Path:
    """The wheel, in a staging dir: dist/ gets it only after the gates passed (sessionfinish)."""
    def produce():
        version = options.wheel_version or profile.default_version()
        _say(f"==> python -m build --wheel (version {version}) in {build_paths.src / 'python'}")
        res = _package.build_wheel(build_paths.src, version, profile, build_paths.staging,
                                   build_paths.logs, options.build_python or _bc_sys.executable)
        _say(f"[package] {res.wheel.name} in {res.seconds:.1f}s (staged; dist/ after the gates)")
        return {**res.to_json(), "version": version, "dist": str(build_paths.dist)}
    return Path(_run_once(shared_dir, _BUILD_RECORD, produce)["wheel"])


class _BuildVerdicts:
    """Gate outcomes as the controller sees them (every worker's reports arrive there)."""
    failed: list = []
    passed_provenance: int = 0


@pytest.hookimpl(specname="pytest_runtest_logreport")
def pytest_build_chain_logreport(report):
    if not ("provenance" in report.keywords or "build" in report.keywords):
        return
    if "release" not in report.keywords:
        return
    if report.failed or (report.when == "call" and report.skipped):
        _BuildVerdicts.failed.append(report.nodeid)
    elif report.when == "call" and report.passed and "provenance" in report.keywords:
        _BuildVerdicts.passed_provenance += 1


@pytest.hookimpl(specname="pytest_sessionfinish", tryfirst=True)
def pytest_build_chain_sessionfinish(session, exitstatus):
    """Move the built wheel to dist/ if the gates passed, else keep it aside as FAILED-GATES."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    shared = shared_root(config)
    if shared is None:
        return
    lines = []
    records = {}
    for key in ("source", "configure", "compile", "stage", _BUILD_RECORD):
        f = shared / f"{key}.json"
        if f.exists():
            records[key] = _bc_json.loads(f.read_text())
    if not records:
        return
    src = records.get("source", {}).get("result", {})
    if src:
        lines.append(f"build chain: MXNet tree {src.get('root')} (commit {src.get('commit') or 'n/a'})")
    times = []
    for key, label in (("configure", "configure"), ("compile", "compile"), ("stage", "stage+bundle"),
                       (_BUILD_RECORD, "package")):
        rec = records.get(key)
        if rec is None:
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
    rec = records.get(_BUILD_RECORD)
    if rec and not rec.get("failed"):
        wheel = Path(rec["result"]["wheel"])
        dist = Path(rec["result"]["dist"])
        if _BuildVerdicts.failed:
            kept = _package.reject_wheel(wheel, dist)
            config.stash[FINAL_WHEEL_KEY] = str(kept)
            lines.append(f"wheel NOT copied to dist/: {len(_BuildVerdicts.failed)} build/provenance "
                         f"gate(s) failed; kept aside as {kept}")
        elif not _BuildVerdicts.passed_provenance:
            lines.append(f"wheel NOT copied to dist/: no provenance gate ran; it stays in {wheel.parent}")
        else:
            dest = _package.publish_to_dist(wheel, dist)
            config.stash[FINAL_WHEEL_KEY] = str(dest)
            lines.append(f"wheel passed {_BuildVerdicts.passed_provenance} provenance gate(s): {dest}")
    add_report_lines(config, lines)
    if not config.stash.get(_RESULTS_KEY, None):
        # the gate table (which prints report lines) is empty on an xdist controller
        for line in lines:
            _say(line)

# --------------------------------------------------------------------------------------------
# Throwaway venv and runtime probes
# --------------------------------------------------------------------------------------------
PROBES_DIR = HARNESS_ROOT / "tests" / "probes"
_VENV_KEY = "release-venv"


@pytest.fixture(scope="session")
def release_venv(options, wheel_path, shared_dir):
    """The throwaway venv with the wheel under test installed, one for all xdist workers.

    Works the same for --wheel PATH and for the wheel the build chain made. Created in
    --venv-dir or in the run's shared temp dir; removed by the last worker at session end
    unless --keep-venv.
    """
    import sys
    from build_steps import venv as venv_step
    from build_steps.profiles import GATE_TEST_REQUIREMENTS

    root = options.venv_dir or (shared_dir / "release-venv")
    log = shared_dir / "release-venv-install.log"

    def make() -> dict:
        venv = venv_step.create_venv(root, options.build_python or sys.executable, log=log)
        installed = venv_step.install(
            venv, wheel_path, find_links=options.find_links, index_url=options.index_url,
            extra_requirements=options.extra_requirements, test_requirements=GATE_TEST_REQUIREMENTS,
            no_deps=options.no_deps, log=log)
        return {**venv.to_dict(), "installed": installed, "log": str(log), "wheel": str(wheel_path)}

    product = venv_step.acquire_shared(shared_dir, _VENV_KEY, make)
    yield venv_step.Venv.from_dict(product)
    cleanup = None if options.keep_venv else (lambda p: venv_step.remove_venv(Path(p["root"])))
    venv_step.release_shared(shared_dir, _VENV_KEY, cleanup)


@pytest.fixture(scope="session")
def install_report(release_venv, options, wheel_path) -> dict:
    """check_install's facts: where mxnet and libmxnet.so resolve in the venv, and the version."""
    from build_steps.venv import check_install, expected_version
    return check_install(release_venv, expected_version(wheel_path, options.package_version))


@pytest.fixture(scope="session")
def venv_probe(release_venv, tmp_path_factory):
    """``venv_probe("probe_x.py", *args, timeout=..)`` runs a probe in the venv, returns its dict."""
    from build_steps.venv import run_probe

    def _probe(name: str, *args, timeout: float = 600, env: dict | None = None) -> dict:
        return run_probe(release_venv, PROBES_DIR / name, args, timeout=timeout, env=env,
                         cwd=tmp_path_factory.mktemp("probe"))
    return _probe


@pytest.fixture(scope="session")
def cuda_preflight(release_venv, tmp_path_factory) -> dict:
    """The ctypes cuBLAS/driver preflight, run in the venv's interpreter before any MXNet import:
    driver and GPUs, the cuBLAS the wheel would load (the venv's pip nvidia/cu13/lib first),
    its version and the verdict on the known traps. Works where MXNet cannot load."""
    from build_steps.venv import run_probe
    return run_probe(release_venv, HARNESS_ROOT / "build_steps" / "cublas_probe.py",
                     ["preflight", "--search-dir", str(release_venv.site_packages)], timeout=300,
                     cwd=tmp_path_factory.mktemp("preflight"))


# --------------------------------------------------------------------------------------------
# Publish
# --------------------------------------------------------------------------------------------
# Preflight before any build, the version the build uses, the publish gate's view of every other
# gate's verdict (also under xdist), and the one closing line of the run.
import dataclasses as _dc
import json as _json
import shutil as _shutil
import tempfile as _tempfile
import time as _time

from build_steps import publish as _publish

_PUBLISH_PLUGIN = "mxnet-publish"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """With --publish: refuse early (before any fixture builds) and fix the release version.

    The version is stored as ``options.wheel_version``, so the build chain builds exactly the
    version that will be tagged. xdist workers get the controller's choice (no second pick).
    """
    config = session.config
    opts = harness_options(config)
    release, src, results = None, opts.mxnet_src, None
    shipped = getattr(config, "workerinput", {}).get("mxnet_publish")
    if shipped is not None:
        release = shipped["release"] and _publish.ReleaseVersion(**shipped["release"])
        src = Path(shipped["mxnet_src"]) if shipped["mxnet_src"] else src
        results = Path(shipped["results"]) if shipped["results"] else None
    elif opts.publish and not hasattr(config, "workerinput"):
        try:
            state = _publish.preflight(opts.mxnet_src or Path(config.invocation_params.dir),
                                       opts.remote, dry_run=opts.dry_run, yes=opts.yes)
            release = _publish.resolve_release_version(
                state, opts.profile, explicit=opts.wheel_version, wheel=opts.wheel)
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        src = opts.mxnet_src or state.repo
        results = Path(_tempfile.mkdtemp(prefix="mxnet-publish-")) / "verdicts.json"
    elif (opts.dry_run or opts.yes) and not opts.publish:
        raise pytest.UsageError("--dry-run and --yes only apply together with --publish")
    if release:
        config.stash[_OPTIONS_KEY] = _dc.replace(opts, wheel_version=release.version, mxnet_src=src)
    config.pluginmanager.register(_PublishPlugin(config, release or None, src, results), _PUBLISH_PLUGIN)


class _PublishPlugin:
    """The publish gate's bookkeeping, as a plugin object so it can keep state.

    The controller (or the single process) records every gate's verdict from its reports; under
    xdist it also writes them to ``results`` for the worker that runs the publish gate.
    """

    def __init__(self, config, release, src, results):
        self.config = config
        self.release = release
        self.src = src
        self.results = results
        self.worker = hasattr(config, "workerinput")
        self.verdicts = {}      # nodeid -> passed / failed / skipped / xfailed / ...
        self.finished = set()   # nodeids whose teardown was reported
        self.publish_ids = set()
        self.wheel = None
        self.outcome = None     # what the publish gate reported (dict)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["mxnet_publish"] = {
            "release": _dc.asdict(self.release) if self.release else None,
            "mxnet_src": str(self.src) if self.src else None,
            "results": str(self.results) if self.results else None,
        }

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        gates = [i for i in items if i.get_closest_marker("publish")]
        rest = [i for i in items if not i.get_closest_marker("publish")]
        if gates and not harness_options(config).publish:
            # Without --publish the gate is not part of the run (a skip would fail -m release).
            config.hook.pytest_deselected(items=gates)
            items[:] = rest
        elif gates:
            items[:] = rest + gates  # last: it needs every other verdict

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        outcome = yield
        if fixturedef.argname == "wheel_path" and outcome.excinfo is None:
            self.wheel = str(outcome.get_result())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if self.wheel and report.when == "teardown":
            # A new list: the report shares item.user_properties otherwise.
            report.user_properties = [*report.user_properties, ("mxnet_wheel", self.wheel)]

    def pytest_runtest_logreport(self, report):
        if self.worker:
            return  # the controller records; it gets every worker's reports
        for key, value in report.user_properties:
            if key == "mxnet_wheel":
                self.wheel = value
            elif key == "mxnet_publish":
                self.outcome = value
        nodeid = report.nodeid
        if "publish" in report.keywords:
            self.publish_ids.add(nodeid)
        if report.when == "setup" and not report.passed:
            self.verdicts[nodeid] = report.outcome
        elif report.when == "call":
            self.verdicts[nodeid] = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        elif report.when == "teardown":
            if report.failed:
                self.verdicts[nodeid] = "failed"
            self.verdicts.setdefault(nodeid, "not run")
            self.finished.add(nodeid)
            if self.results is not None:
                tmp = self.results.with_suffix(".tmp")
                tmp.write_text(_json.dumps({n: self.verdicts[n] for n in self.finished}))
                tmp.replace(self.results)

    def verdicts_of(self, nodeids, poll_s=2.0, limit_s=24 * 3600) -> dict:
        """Final verdicts of ``nodeids``; a worker waits until the controller has them all."""
        wanted = set(nodeids)
        if not self.worker:
            return {n: self.verdicts[n] for n in wanted & self.finished}
        deadline = _time.monotonic() + limit_s
        while True:
            try:
                seen = _json.loads(self.results.read_text()) if self.results else {}
            except (OSError, ValueError):
                seen = {}
            if wanted <= seen.keys() or _time.monotonic() > deadline or self.results is None:
                return {n: v for n, v in seen.items() if n in wanted}
            _time.sleep(poll_s)

    def pytest_unconfigure(self, config):
        if self.results is not None and not self.worker:
            _shutil.rmtree(self.results.parent, ignore_errors=True)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        opts = harness_options(config)
        if self.worker or not (opts.publish or is_release_run(config)):
            return
        tr = terminalreporter
        out = self.outcome or {}
        if out.get("commands"):
            tr.section("publish: dry run (nothing was changed); a real run executes")
            for line in out["commands"]:
                tr.write_line(line)
        gates = {n: v for n, v in self.verdicts.items() if n not in self.publish_ids}
        passed = sum(v == "passed" for v in gates.values())
        verdict = "PASS" if gates and passed == len(gates) else "FAIL"
        if not opts.publish:
            published = "not published (--publish not given)"
        elif out.get("published"):
            published = f"PUBLISHED as {out.get('tag')} ({out.get('url')})"
        elif out.get("dry_run"):
            published = f"not published (dry run of {out.get('tag')})"
        elif out.get("reason"):
            published = f"NOT published: {out['reason']}"
        else:
            published = "NOT published (the publish gate did not run)"
        wheel = (config.stash.get(FINAL_WHEEL_KEY, None) or out.get("wheel") or self.wheel
                 or (str(opts.wheel) if opts.wheel else "no wheel"))
        tr.write_line(f"RELEASE {wheel}: {verdict} ({passed}/{len(gates)} gates passed); {published}",
                      bold=True, green=verdict == "PASS", red=verdict != "PASS")


def publish_plugin(config) -> _PublishPlugin:
    return config.pluginmanager.get_plugin(_PUBLISH_PLUGIN)
