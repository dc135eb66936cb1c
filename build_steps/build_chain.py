"""The build chain as one table: source -> CUDA root -> configure -> compile -> stage -> package.

Each row of ``CHAIN`` is one build step: the session fixture the gates ask for, the run-once record
it files under the run's shared dir, the name its errors carry (``StepError.step``, ``chain::<name>``),
the summary's label, what it needs (fixture names), how it produces its record and how the record
is read back. Everything else is derived from the rows: the session fixtures (harness.plugins.chain), the
chain stop and the summary's step line, the wheel the pin hashes (the last row), the JSON report's
build section, and the step names that stop the session (harness.plugins.gates).

Adding a step ("sign the wheel") is its build_steps module plus one row here.

Each fixture runs its step once for all xdist workers (build_steps.once.run_once: a file lock and
a JSON record under the run's shared dir).
"""
from __future__ import annotations

import errno
import json
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from . import (bundle, compile, configure, cuda_root, filesystem, launcher, opencv_build, package, reproducible,
               run_lock, source, toolchain)
from .errors import BuildInterrupted, EnvironmentFault

if TYPE_CHECKING:
    from .options import RunOptions
    from .profile_data import Profile
    from .run_plan import BuildPaths, RunPlan

#: the harness's logger (harness.common shows its records live, past pytest's capture)
_LOG = logging.getLogger("mxnet_harness")


def say(line: str) -> None:
    _LOG.info(line)


def guarded(step: str, produce: Callable[[], dict[str, Any]], where: Path) -> Callable[[], dict[str, Any]]:
    """``produce`` as the chain's step ``step``: an interrupt anywhere in it is that step's
    INTERRUPTED (exit 2, no traceback), and a full or read-only disk under ``where`` is one
    sentence naming the filesystem, not an OSError traceback."""
    def run() -> dict[str, Any]:
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
            # the host's fault, not the wheel's: the run is not judged (exit 3, harness.plugins.finish.judge)
            if filesystem.is_no_space(exc):
                raise EnvironmentFault(step, filesystem.no_space(path)) from None
            if exc.errno == errno.EROFS:
                raise EnvironmentFault(step, f"cannot write {path}: read-only file system "
                                       f"{filesystem.filesystem_name(path)}. {filesystem.advice_for(path)}") from None
            raise
    return run


class StepInputs:
    """What a step's ``produce``/``where``/``applies`` get: the fixtures its row names in ``needs``,
    as typed attributes. Every name a row may need is declared here (a row naming another one is
    refused when the table is made); a name the row did not ask for is an AttributeError."""

    #: where the steps' live progress goes (harness.common.LIVE: the terminal, past pytest's capture)
    progress: compile.Progress
    options: RunOptions
    profile: Profile
    shared_dir: Path
    run_plan: RunPlan
    build_paths: BuildPaths
    cuda_root: cuda_root.CudaRoot | None
    built_opencv: opencv_build.OpenCVBuild | None
    compiler_launcher: launcher.Launcher
    configured_tree: configure.ConfigureResult
    libmxnet: compile.CompileResult
    staged_package: bundle.StagedRecord

    def __init__(self, **given: Any) -> None:
        unknown = set(given) - set(self.names())
        if unknown:
            raise TypeError(f"StepInputs has no {', '.join(sorted(unknown))}: declare it on the class")
        self.__dict__.update(given)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(cls.__annotations__)


def _always(_n: StepInputs) -> bool | str:
    return True


def _no_detail(_result: dict[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class Step:
    #: the session fixture gates ask for (``configured_tree``)
    fixture: str
    #: its run-once record under the shared dir (``configure`` -> configure.json)
    record: str
    #: the name its errors carry: StepError.step, ``chain::<name>``, ``[<name>]``
    name: str
    #: the summary's label (``build chain steps: stage+bundle 3.1s``)
    label: str
    #: the fixtures the step needs, by name (handed to ``produce``/``where``/``applies`` as attributes)
    needs: tuple[str, ...]
    #: needs -> the record's JSON (runs once per run, under ``guarded``)
    produce: Callable[[StepInputs], dict[str, Any]]
    #: the record's JSON -> the fixture's value (the result type's from_json)
    from_json: Callable[[dict[str, Any]], Any]
    #: needs -> where a full or read-only disk is looked for
    where: Callable[[StepInputs], Path]
    #: needs -> False when the step has nothing to do in this run (the fixture is None); a str:
    #: the gates that need it skip, for that reason
    applies: Callable[[StepInputs], bool | str] = _always
    #: named in the summary only when it failed or was interrupted
    quiet: bool = False
    #: other names this step's errors carry (raised inside it by its build_steps module)
    also_named: tuple[str, ...] = ()
    #: the record's result -> what the summary adds after the step's time
    detail: Callable[[dict[str, Any]], str] = _no_detail

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in StepInputs.names()]
        if unknown:
            raise TypeError(f"chain step {self.name!r} needs {unknown}, which StepInputs does not declare")


# --------------------------------------------------------------------------------------------
# What each step does in a run (the work itself is its build_steps module's)
# --------------------------------------------------------------------------------------------
def _say_each(prefix: str, lines: Iterable[str]) -> None:
    for line in lines:
        say(f"{prefix}{line}")


def _source_applies(n: StepInputs) -> bool | str:
    return "--wheel given: the build chain does not run (nothing is configured or built)" if n.options.wheel else True


def _produce_source(n: StepInputs) -> dict[str, Any]:
    root = n.run_plan.tree()
    info = source.check_source_tree(root, {**n.options.profile.configure_flags, **n.options.cmake_defines})
    say(f"==> MXNet source tree: {root} (commit {info.commit or 'not a git checkout'}, "
        f"flavor {n.options.profile.name})")
    _say_each("WARNING: ", info.submodule_warnings)
    return info.to_json()


def _produce_cuda_root(n: StepInputs) -> dict[str, Any]:
    say("==> assembling a CUDA root from nvcc + pip's nvidia-* wheels (cached)")
    start = time.monotonic()
    root = cuda_root.assemble_cuda_root(python=sys.executable, find_links=n.options.find_links,
                                        index_url=n.options.index_url, progress=n.progress,
                                        no_index=n.options.no_index, stack=n.options.profile.cuda)
    # the review page's timeline shows the download (CudaRoot.from_json ignores the extra key)
    return {**root.to_json(), "seconds": round(time.monotonic() - start, 1)}


def _produce_configure(n: StepInputs) -> dict[str, Any]:
    options, paths, cuda, tool = n.options, n.build_paths, n.cuda_root, n.compiler_launcher
    if options.fresh and paths.build_dir.exists():
        say(f"==> --fresh: deleting {paths.build_dir}")
        run_lock.clear_dir(paths.build_dir)  # but the run's lock, which lives there
    say(f"==> configure {paths.build_dir} (compiler launcher: {tool.path or 'none'})")
    _say_each("[configure] development option ", options.development_options)
    _say_each("[configure] override -D", (f"{k}={v}" for k, v in options.build_defines.items()))
    res = configure.configure(paths.src, paths.build_dir, n.profile, options.cuda_arch,
                              paths.logs, extra_defs={**(cuda.cmake_args if cuda else {}),
                                                      **reproducible.ARCHIVE_DEFINES,
                                                      **launcher.cmake_defines(tool, reproducible.launcher_prefix(
                                                          paths.src, paths.build_dir,
                                                          development=bool(options.development_options))),
                                                      **_opencv_root(n)},
                              env={**(cuda.env if cuda else {}), **launcher.cache_env(paths.src)},
                              overrides=options.build_defines)
    nvcc = options.build_defines.get("CMAKE_CUDA_COMPILER") or (cuda.cmake_args.get("CMAKE_CUDA_COMPILER") if cuda else None)
    # the toolchain, once, here: the compilers from the File API facts, cmake and ninja the harness's own
    res.toolchain = toolchain.versions(res.cache, res.compilers, cuda.wheels_dir if cuda else None,
                                       tools=toolchain.harness_tools(nvcc, cuda.env if cuda else None))
    say(f"[configure] {'first-time' if res.first_time else 'refresh'} in {res.seconds:.1f}s; "
        f"gencode: {' '.join(res.gencode) or 'none (CPU)'}")
    _say_each("[configure] note: ", res.notes)
    return res.to_json()


def _opencv_prefix(n: StepInputs) -> Path | None:
    """The prefix the build's OpenCV lies in: --opencv-prefix's, the harness's own build's
    (--opencv=built), or None (the host's)."""
    if n.options.opencv_prefix is not None:
        return n.options.opencv_prefix
    return n.built_opencv.prefix if n.built_opencv is not None else None


def _opencv_root(n: StepInputs) -> dict[str, str]:
    """The fork's own switch for an OpenCV outside the default search path (--opencv-prefix,
    --opencv=built): the same OPENCV_ROOT either way."""
    prefix = _opencv_prefix(n)
    if prefix is None:
        return {}
    return {"OPENCV_ROOT": str(bundle.opencv_config_dir(prefix))}


def _produce_opencv(n: StepInputs) -> dict[str, Any]:
    """--opencv=built: the minimal OpenCV's prefix, from the cache or built (build_steps.opencv_build)."""
    say("==> OpenCV core/imgproc/imgcodecs from pinned source (cached by source hash and flags)")
    rec = opencv_build.build_opencv(jobs=n.options.jobs, progress=n.progress)  # --jobs, niced (a shared host)
    say(f"[opencv] {'reused' if rec.reused else 'built in %.0fs' % rec.seconds} {rec.prefix} "
        f"({rec.library_bytes / 1e6:.1f} MB of libopencv_*, key {rec.key})")
    return rec.to_json()


def _produce_compile(n: StepInputs) -> dict[str, Any]:
    paths = n.build_paths
    say(f"==> compile target mxnet in {paths.build_dir} with {n.options.jobs} jobs "
        f"(log: {paths.logs / 'compile.log'})")
    if n.compiler_launcher.name == "sccache":
        _say_each("WARNING: ", filter(None, [launcher.cache_warning(n.cuda_root.env if n.cuda_root else None)]))
    repro = reproducible.compile_summary(paths.src, bool(n.options.development_options), n.compiler_launcher.name)
    say(f"[compile] {repro}")
    res = compile.compile_mxnet(paths.build_dir, n.options.jobs, paths.logs,
                                env={**(n.cuda_root.env if n.cuda_root else {}),
                                     **reproducible.compile_env(paths.src),
                                     # the tree's and commit's own cache partition (issue 41 item 4)
                                     **launcher.cache_env(paths.src)},
                                progress=n.progress, launcher=n.compiler_launcher,
                                # the sandbox's binds: the harness's own options, never the cache's
                                src=paths.src, inputs=list(_opencv_root(n).values())).to_json()
    return {**res, "reproducible": repro}


def _compile_detail(result: dict[str, Any]) -> str:
    return " (no work to do)" if result.get("no_work") else f" ({result.get('steps_run')} steps)"


def _produce_stage(n: StepInputs) -> dict[str, Any]:
    """libmxnet.so + headers staged into a copy of python/mxnet under the build dir, OpenCV closure
    bundled, RUNPATHs set."""
    start = time.monotonic()
    built_with = configure.expected_features(n.profile, n.options.cmake_defines)
    tree = package.stage_tree(n.build_paths.src, n.build_paths.package_tree)
    staged = bundle.stage_package(n.libmxnet.library, tree, n.profile,
                                  wants_opencv=bool(built_with.get("USE_OPENCV")),
                                  prefix=_opencv_prefix(n), tree=n.build_paths.src)
    say(f"[stage] {len(staged.bundle)} libraries bundled into {staged.package_dir / 'lib'}"
        + (f" (resolved from --opencv-prefix {n.options.opencv_prefix} first)" if n.options.opencv_prefix else
           f" (resolved from the built OpenCV {_opencv_prefix(n)} first)" if _opencv_prefix(n) else "")
        + "; "
        f"libmxnet RUNPATH {':'.join(staged.runpath)}")
    _say_each("[stage] warning: ", staged.warnings)
    return staged.record(time.monotonic() - start).to_json()


def _produce_wheel(n: StepInputs) -> dict[str, Any]:
    """The wheel, in a staging dir: dist/ gets it only after the gates passed (harness.plugins.chain)."""
    paths = n.build_paths
    version = n.options.wheel_version or n.profile.default_version()
    say(f"==> python -m build --wheel (version {version}) in {paths.package_tree / 'python'}")
    res = package.build_wheel(paths.package_tree, version, n.profile, paths.staging,
                              paths.logs, n.options.build_python or sys.executable, commit_of=paths.src)
    say(f"[package] {res.wheel.name} in {res.seconds:.1f}s (staged; dist/ after the gates)")
    return {**res.to_json(), "version": version, "dist": str(paths.dist)}


def _wheel_of(record: dict[str, Any]) -> Path:
    return Path(record["wheel"])


def _in_build_dir(n: StepInputs) -> Path:
    paths: BuildPaths = n.build_paths
    return paths.build_dir


#: The chain, in order. The last row makes the wheel (the pin's producer, dist/'s candidate).
CHAIN = (
    Step("mxnet_source", "source", "source", "source", ("options", "shared_dir", "run_plan"),
         _produce_source, source.SourceInfo.from_json,
         where=lambda n: n.run_plan.source or Path.cwd(), applies=_source_applies, quiet=True),
    Step("cuda_root", "cuda_root", "cuda-root", "CUDA root", ("options", "shared_dir"),
         _produce_cuda_root, cuda_root.CudaRoot.from_json,
         where=lambda n: cuda_root.default_cache_dir(),
         applies=lambda n: n.options.cuda_from_wheels and n.options.profile.is_cuda, quiet=True),
    Step("built_opencv", "opencv", "opencv", "OpenCV build", ("options", "shared_dir"),
         _produce_opencv, opencv_build.OpenCVBuild.from_json, where=lambda n: opencv_build.default_cache_root(),
         applies=lambda n: n.options.opencv == "built" and n.options.wheel is None),
    Step("configured_tree", "configure", "configure", "configure",
         ("options", "profile", "shared_dir", "build_paths", "cuda_root", "built_opencv", "compiler_launcher"),
         _produce_configure, configure.ConfigureResult.from_json, where=_in_build_dir),
    Step("libmxnet", "compile", "compile", "compile",
         ("options", "shared_dir", "build_paths", "configured_tree", "cuda_root", "built_opencv",
          "compiler_launcher"),
         _produce_compile, compile.CompileResult.from_json, where=_in_build_dir, detail=_compile_detail),
    Step("staged_package", "stage", "stage", "stage+bundle",
         ("options", "profile", "shared_dir", "build_paths", "libmxnet", "built_opencv"),
         _produce_stage, bundle.StagedRecord.from_json, where=_in_build_dir, also_named=("bundle",)),
    Step("built_wheel", "built_wheel", "package", "package",
         ("options", "profile", "shared_dir", "build_paths", "staged_package"),
         _produce_wheel, _wheel_of, where=_in_build_dir),
)
#: The step that makes the wheel.
WHEEL_STEP = CHAIN[-1]
#: Every name a chain step's errors carry: when one fails, no further gate can run (harness.plugins.gates).
STEP_NAMES = tuple(name for step in CHAIN for name in (step.name, *step.also_named))


def step_by_record(record: str) -> Step:
    return next(step for step in CHAIN if step.record == record)


def chain_records(shared: Path | None) -> dict[str, dict[str, Any]]:
    """record key -> the run-once record of each chain step that ran, in chain order: what the
    summary (harness.plugins.chain), the JSON report and the review page read about the build. An
    unreadable record is left out."""
    records: dict[str, dict[str, Any]] = {}
    for step in CHAIN if shared is not None else ():
        try:
            records[step.record] = json.loads((shared / f"{step.record}.json").read_text())  # type: ignore[operator]
        except (OSError, ValueError):
            continue
    return records


def chain_stop_of(records: dict[str, dict[str, Any]]) -> str | None:
    """What stopped the chain (``"configure failed"``, ``"compile INTERRUPTED"``), None if nothing did."""
    for step in CHAIN:
        rec = records.get(step.record) or {}
        if rec.get("failed"):
            return f"{step.label} {'INTERRUPTED' if rec.get('interrupted') else 'failed'}"
    return None


#: The steps after the wheel (the venv's install): their run-once state, and the summary's label.
AFTER_CHAIN = (("release-venv.state", "install"),)


def after_chain_records(shared: Path | None) -> dict[str, dict[str, Any]]:
    """label -> the failure record of each step after the chain that failed or was interrupted
    (the install's state file holds its product otherwise, which the summary does not time)."""
    found: dict[str, dict[str, Any]] = {}
    for key, label in AFTER_CHAIN if shared is not None else ():
        try:
            rec = json.loads((shared / f"{key}.json").read_text())  # type: ignore[operator]
        except (OSError, ValueError):
            continue
        if rec.get("failed"):
            found[label] = rec
    return found


def step_times(records: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """The summary's entries, one per step that ran (a quiet step only when it failed); ``after``:
    the failed steps after the chain (after_chain_records), so an interrupted install is named."""
    times = []
    for step in CHAIN:
        rec = records.get(step.record)
        if rec is None or (step.quiet and not rec.get("failed")):
            continue
        times.append(_entry(step.label, rec, step.detail))
    times += [_entry(label, rec, _no_detail) for label, rec in (after or {}).items()]
    return times


def _entry(label: str, rec: dict[str, Any], detail: Callable[[dict[str, Any]], str]) -> str:
    if rec.get("interrupted"):
        return (f"{label} INTERRUPTED ({rec.get('error', '').split('] ', 1)[-1].split(';')[0]}; "
                "re-run to resume)")
    if rec.get("failed"):
        return f"{label} FAILED"
    r = rec["result"]
    return f"{label} {r.get('seconds', 0):.1f}s{detail(r)}"


def step_seconds(records: dict[str, dict[str, Any]]) -> dict[str, float]:
    """record key -> seconds of each timed step that finished (the JSON report's build section)."""
    return {step.record: round(rec["result"]["seconds"], 1) for step in CHAIN if not step.quiet
            and (rec := records.get(step.record)) and (rec.get("result") or {}).get("seconds") is not None}
