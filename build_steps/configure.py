"""CMake configure (first time or refresh) and verification of what CMake really did.

The fork's script refuses to start without a cache and then trusts the cache; both were wrong.
A missing cache gets the profile's full first-time flag set. An existing cache gets the feature
toggles refreshed. Then the cache is *verified*: a toggle that says ON proves nothing, because
MXNet's CMake drops cuDNN with a normal variable (the cache keeps ON) when FindCUDNN finds no
unversioned libcudnn.so, so each wanted library must also have been found.

What CMake did is read from its File API (build_steps.readers.cmake_file_api): the flags and
defines the mxnet target is compiled with, the compilers and their versions. Not from CMake's
stdout, where a message says what the tree chose to print, not what nvcc is given.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import filesystem, processes, sandbox
from .venv import build_env
from .readers import cmake_cache, cmake_file_api
from .errors import EnvironmentFault, StepError, log_excerpt
from .profile_data import CMAKE_FEATURES, Profile
from .arch import Arch, ArchSpec, parse_cuda_arch
from .once import JsonRecord
from .step_record import record_step
from .own_files import open_log

#: Toggles refreshed on every configure (the fork's partial reconfigure set, plus the CPU's).
REFRESH_KEYS = ("USE_CUDA", "USE_CUDNN", "USE_NCCL", "USE_ONEDNN", "USE_OPENCV", "USE_OPENMP")

#: For a toggle the profile wants ON: the cache entries that prove CMake found the library,
#: and the package to install when it did not.
FOUND_EVIDENCE = {
    "USE_CUDNN": (("CUDNN_LIBRARY", "CUDNN_INCLUDE"),
                  "libcudnn9-dev-cuda-13 (FindCUDNN needs the unversioned libcudnn.so; or pass "
                  "--cuda-from-wheels)"),
    "USE_NCCL": (("NCCL_LIBRARIES", "NCCL_INCLUDE_DIRS"), "libnccl-dev (or pass --cuda-from-wheels)"),
    "USE_OPENCV": (("OpenCV_DIR",), "libopencv-dev"),
}
#: Optional CUDA extras that stay ON in the cache when not found: reported, never fatal.
OPTIONAL_KEYS = ("USE_NVML", "USE_NVTX", "USE_CUTENSOR")

#: the target whose flags and defines are the build's (libmxnet, in the fork and the sample tree)
MXNET_TARGET = "mxnet"


@dataclass
class ConfigureFacts:
    """What CMake's File API says the configure made (read_facts): data, never configuration."""
    #: distinct -gencode flags the mxnet target's CUDA sources are compiled with
    gencode: list[str] = field(default_factory=list)
    #: the mxnet target's compile definitions ("MXNET_USE_CUDNN=0"), every language's
    defines: list[str] = field(default_factory=list)
    #: the mxnet target's compile flags (its compileCommandFragments), every language's
    flags: list[str] = field(default_factory=list)
    #: language -> {"id", "version", "path"}: the compilers CMake found and used (toolchains-v1)
    compilers: dict[str, dict[str, str]] = field(default_factory=dict)
    cmake_version: str = ""


@dataclass
class ConfigureResult(JsonRecord):
    build_dir: Path
    first_time: bool
    seconds: float
    log: Path
    cache: dict[str, str]            # key -> value (types dropped)
    gencode: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: ConfigureFacts' defines, flags, compilers and cmake_version (the File API's)
    defines: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    compilers: dict[str, dict[str, str]] = field(default_factory=dict)
    cmake_version: str = ""
    #: tool -> version (build_steps.toolchain.versions): computed once, here, for the report
    toolchain: dict[str, str] = field(default_factory=dict)


def read_cache(path: Path) -> dict[str, str]:
    """CMakeCache.txt -> {key: value} (types dropped): what ConfigureResult.cache records."""
    return {key: entry.value for key, entry in cmake_cache.read_cache(path).items()}


def _found(value: str | None) -> bool:
    if not value:  # None or "": not found (mypy narrows on this test, not on bool(value))
        return False
    return not value.upper().endswith("NOTFOUND") and value.upper() not in ("OFF", "FALSE")


def configure_command(src: Path, build_dir: Path, profile: Profile, arch: Arch, first_time: bool,
                      extra: dict[str, str] | None = None, overrides: dict[str, str] | None = None) -> list[str]:
    """The cmake command line. ``extra`` are the harness's own definitions (the CUDA root);
    ``overrides`` the user's ``--cmake-define``s, applied last on every configure so they win
    (an MXNET_CUDA_ARCH among them is ``arch.override``)."""
    defs = dict(profile.configure_flags) if first_time else {
        k: profile.configure_flags[k] for k in REFRESH_KEYS if k in profile.configure_flags}
    if profile.is_cuda:
        defs["MXNET_CUDA_ARCH"] = arch.requested.text
    for k, v in (extra or {}).items():
        # Changing the CUDA compiler of an existing cache makes CMake wipe it: first time only.
        if k == "CMAKE_CUDA_COMPILER" and not first_time:
            continue
        defs[k] = v
    defs.update(overrides or {})
    cmd = ["cmake", "-S", str(src), "-B", str(build_dir)]
    if first_time:
        cmd += ["-G", "Ninja"] if shutil.which("ninja") else []
    cmd += [f"-D{k}={v}" for k, v in defs.items()]
    return cmd


def configure(src: Path, build_dir: Path, profile: Profile, arch: Arch, log_dir: Path,
              extra_defs: dict[str, str] | None = None, env: dict[str, str] | None = None,
              overrides: dict[str, str] | None = None) -> ConfigureResult:
    """Configure (or refresh) ``build_dir`` and verify the cache against the profile.

    The cache is verified against what this run asked for: the profile with the user's
    ``overrides`` applied (a development build with ``-DUSE_OPENCV=OFF`` configures fine; the
    overrides gate then says which promise it broke, and the run cannot publish)."""
    src, build_dir, log_dir = Path(src), Path(build_dir), Path(log_dir)
    overrides = dict(overrides or {})
    check_build_dir(build_dir, src, extra_defs or {}, overrides)
    log_dir.mkdir(parents=True, exist_ok=True)
    build_dir.mkdir(parents=True, exist_ok=True)
    cache_file = build_dir / "CMakeCache.txt"
    unfinished = unfinished_configure(build_dir)
    if unfinished:
        cache_file.unlink()
        shutil.rmtree(build_dir / "CMakeFiles", ignore_errors=True)  # the stale CMakeError.log with it
    first_time = not cache_file.exists()
    cmake_file_api.write_query(build_dir)  # before CMake runs: it answers at the end of its generate step
    cmd = configure_command(src, build_dir, profile, arch, first_time, extra_defs, overrides)
    log = log_dir / "configure.log"
    start = time.monotonic()
    with open_log(log, "w") as fh:  # harness-logs is the build's to write: no link followed
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        # processes.run: an interrupt stops CMake's try-compiles too, not only cmake
        argv, child_env = sandbox.wrap(cmd, build_env(env), **build_box(
            src, build_dir, env=env, inputs=[v for k, v in {**(extra_defs or {}), **overrides}.items()
                                             if k in INPUT_DIR_KEYS]))
        rc = processes.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=child_env)
    seconds = time.monotonic() - start
    record_step(build_dir, "configure", "first-time" if first_time else "refresh")
    if rc != 0:
        tail = log_excerpt(log)
        # the try-compiles write to the build dir and, through gcc, to TMPDIR: blame the one that filled
        full = filesystem.full_one([build_dir, filesystem.tmpdir(env)], tail, _try_compile_output(build_dir))
        if full is not None:
            # A try-compile that could not write its object makes CMake blame the compiler
            # ("The Fortran compiler is not able to compile a simple test program").
            raise EnvironmentFault("configure", f"CMake configure of {src} failed: {filesystem.no_space(full)}",
                            log=log, tail=tail)
        raise StepError("configure", f"CMake configure of {src} into {build_dir} failed "
                        f"(exit {rc})", log=log, tail=tail)
    facts = read_facts(build_dir)
    result = ConfigureResult(build_dir=build_dir, first_time=first_time, seconds=seconds, log=log,
                             cache=read_cache(cache_file), gencode=facts.gencode, defines=facts.defines,
                             flags=facts.flags, compilers=facts.compilers, cmake_version=facts.cmake_version)
    if unfinished:
        result.notes.append(unfinished)
    verify_cache(result, profile, arch.built, expected_features(profile, overrides))
    return result


#: CMake definitions that name a directory the build reads from outside the tree (--opencv-prefix
#: sets the fork's OPENCV_ROOT): the configure and compile sandboxes show them read-only, which
#: would otherwise be hidden when they lie under /tmp or a home. Only the harness's own values
#: (its options) are bound: the same keys in CMakeCache.txt are the tree's CMake's to write, and a
#: bind taken from there (OPENCV_ROOT=/root) showed the compile the operator's secrets (issue 41, 3).
INPUT_DIR_KEYS = ("OPENCV_ROOT",)


def build_box(src: Path | None, build_dir: Path, network: bool = False, env: dict[str, str] | None = None,
              inputs: Iterable[str | Path] = ()) -> dict[str, Any]:
    """What a configure or compile sandbox shows (build_steps.sandbox): the tree ``src`` (the one
    the harness was given, never the cache's CMAKE_HOME_DIRECTORY), the CUDA cache and the input
    dirs ``inputs`` (the harness's own INPUT_DIR_KEYS values, never the cache's) read-only, the
    build dir and the compiler caches read-write."""
    readable, writable = sandbox.cache_dirs(env)
    from .bundle import opencv_prefix_of  # OPENCV_ROOT is a config dir: the build reads its whole prefix
    dirs = [opencv_prefix_of(Path(p)) for p in inputs if p and Path(p).is_absolute() and Path(p).is_dir()]
    return {"readable": [*([src] if src else []), *readable, *dirs], "writable": [build_dir, *writable],
            "network": network, "cwd": build_dir}


def _log_text(log: Path) -> str:
    """configure.log's text, never through a link the configure planted in its place ("" then)."""
    from .errors import PlantedLink, read_log
    try:
        return read_log(Path(log)).decode("utf-8", "replace")
    except (PlantedLink, OSError):
        return ""


def _try_compile_output(build_dir: Path) -> str:
    """The end of CMake's record of its try-compiles (where a compiler's ENOSPC is written)."""
    from .errors import log_tail
    return "\n".join(log_tail(Path(build_dir) / "CMakeFiles" / name, 200)
                     for name in ("CMakeConfigureLog.yaml", "CMakeError.log"))


def expected_features(profile: Profile, overrides: dict[str, str]) -> dict[str, bool]:
    """The profile's feature toggles with the user's overrides applied (what the cache must say)."""
    features = dict(profile.features)
    for key in CMAKE_FEATURES:
        # read once, so the None check narrows it (an override that is no CMake boolean: the profile's stands)
        wanted = cmake_cache.to_bool(overrides[key]) if key in overrides else None
        if wanted is not None:
            features[key] = wanted
    return features


#: Cache entries that tie a build dir to one CUDA compiler and toolkit. CMake refuses to change
#: the CUDA compiler of an existing cache (or silently wipes it), and a cache pointing at another
#: toolkit root links libraries from there: either way the build is not the one this run asks for.
_TOOLCHAIN_KEYS = ("CMAKE_CUDA_COMPILER", "CUDAToolkit_ROOT")


def unfinished_configure(build_dir: Path) -> str:
    """A note when ``build_dir``'s last configure did not finish its compiler checks ("" otherwise).

    A configure whose try-compiles failed (a full TMPDIR or disk) leaves CMAKE_EXECUTABLE_FORMAT=
    Unknown in the cache and a CMakeError.log; a refresh keeps both, and the build never recovers.
    Such a cache is configured afresh (measured on the sample tree with a full TMPDIR: issue 42)."""
    cache_file = Path(build_dir) / "CMakeCache.txt"
    if not cache_file.is_file() or read_cache(cache_file).get("CMAKE_EXECUTABLE_FORMAT") != "Unknown":
        return ""
    return (f"the last configure of {build_dir} did not finish its compiler checks (its cache says "
            "CMAKE_EXECUTABLE_FORMAT=Unknown: a full disk or TMPDIR?): configured afresh, its CMakeCache.txt "
            "and CMakeFiles/ deleted")


def check_build_dir(build_dir: Path, src: Path, extra_defs: dict[str, str], overrides: dict[str, str]) -> None:
    """Refuse a build dir configured from another source tree or with another CUDA compiler or
    toolkit root than this run's, before anything runs in it."""
    cache_file = Path(build_dir) / "CMakeCache.txt"
    if not cache_file.is_file():
        return
    cache = read_cache(cache_file)
    wanted = {**{k: extra_defs[k] for k in _TOOLCHAIN_KEYS if k in extra_defs},
              **{k: overrides[k] for k in _TOOLCHAIN_KEYS if k in overrides}}
    problems = []
    home = cache.get("CMAKE_HOME_DIRECTORY")
    if home and Path(home).resolve() != Path(src).resolve():
        problems.append(f"it was configured from {home}, this run builds {src}")
    for key, want in wanted.items():
        have = cache.get(key)
        if have and Path(have).resolve() != Path(want).resolve():
            problems.append(f"{key} is {have} in its cache, this run uses {want}")
    if problems:
        raise StepError("configure", f"build dir {build_dir} belongs to another build: "
                        + "; ".join(problems) + ". Re-run with --fresh to delete it and configure "
                        "anew, or pass --build-dir=DIR for a separate tree")


def read_facts(build_dir: Path) -> ConfigureFacts:
    """The File API's reply to the query configure() wrote (a StepError when it is missing or
    malformed): the mxnet target's -gencode flags, defines and flags, and the compilers.

    The -gencode flags are those in the mxnet target's CUDA compile flags (the fork appends its
    CUDA_ARCH_FLAGS to CMAKE_CUDA_FLAGS), which is what nvcc receives; the configure message that
    announces them is the tree's to word and was once parsed instead."""
    reply = cmake_file_api.read_reply(Path(build_dir), [MXNET_TARGET])
    target = reply.targets.get(MXNET_TARGET)
    groups = target.compile_groups if target else ()
    return ConfigureFacts(
        gencode=_gencode_flags(" ".join(target.fragments("CUDA"))) if target else [],
        defines=sorted(target.defines()) if target else [],
        flags=[f for g in groups for f in g.fragments],
        compilers={lang: {"id": c.id, "version": c.version, "path": c.path}
                   for lang, c in sorted(reply.compilers.items())},
        cmake_version=reply.cmake_version)


def _gencode_flags(text: str) -> list[str]:
    """Distinct ``-gencode=arch=…,code=…`` flags, in order, from any of nvcc's spellings."""
    flags = []
    for arch, code in re.findall(r"(?:-gencode|--generate-code)[=; ]+arch=(compute_\w+),code=(\[?[\w,]+\]?)",
                                 text):
        flag = f"-gencode=arch={arch},code={code}"
        if flag not in flags:
            flags.append(flag)
    return flags


def verify_cache(result: ConfigureResult, profile: Profile, built: ArchSpec,
                 features: dict[str, bool] | None = None) -> None:
    """Fail (StepError 'configure') on every way the cache disagrees with the profile
    (``built``: the arch list this run builds, Arch.built; ``features``: the profile's toggles
    with the run's overrides applied)."""
    cache, problems = result.cache, []
    features = profile.features if features is None else features
    for key in CMAKE_FEATURES:
        want = bool(features.get(key))
        have = cmake_cache.to_bool(cache.get(key))
        if have is None:
            problems.append(f"{key} is not in {result.build_dir}/CMakeCache.txt as a boolean")
        elif have != want:
            problems.append(f"{key} is {'ON' if have else 'OFF'} in the cache, the {profile.name} "
                            f"profile wants {'ON' if want else 'OFF'}: reconfigure with -D{key}="
                            f"{'ON' if want else 'OFF'}")
    for key, (evidence, package) in FOUND_EVIDENCE.items():
        if not features.get(key) or cmake_cache.to_bool(cache.get(key)) is not True:
            continue
        missing = [e for e in evidence if not _found(cache.get(e))]
        if missing:
            shown = ", ".join(f"{e}={cache.get(e, '<unset>')}" for e in missing)
            problems.append(
                f"{key}:BOOL=ON in the cache but CMake did not find the library ({shown}): the build "
                f"would silently compile it out. Install {package}, delete {result.build_dir} and "
                "reconfigure")
    flags = " ".join(result.flags)
    for key in FOUND_EVIDENCE:
        macro = "MXNET_" + key
        # the File API's defines; a -D in the flags (CMAKE_CXX_FLAGS) is one too
        if features.get(key) and (f"{macro}=0" in result.defines or re.search(rf"-D{macro}=0\b", flags)):
            problems.append(f"the {MXNET_TARGET} target compiles with -D{macro}=0 although {key} is wanted ON: "
                            f"CMake dropped it; install {FOUND_EVIDENCE[key][1]} and reconfigure")
    if profile.is_cuda:
        cached = cache.get("MXNET_CUDA_ARCH")
        try:  # the cache's text, as CMake kept it
            same = cached is not None and parse_cuda_arch(cached) == built
        except Exception:
            same = False
        if not same:
            problems.append(f"MXNET_CUDA_ARCH is {cached!r} in the cache, requested {built.text!r}")
        elif result.gencode and set(result.gencode) != set(built.gencode_flags):
            problems.append(
                f"CMake emitted {' '.join(result.gencode)} for MXNET_CUDA_ARCH={built.text}, expected "
                f"{' '.join(built.gencode_flags)}")
        elif not result.gencode:
            problems.append("CMake emitted no -gencode flags (is CMAKE_CUDA_ARCHITECTURES forced "
                            "OFF and MXNET_CUDA_ARCH honoured?)")
    # The File API has no messages: that an optional library was not found is only in what the
    # tree's CMake printed, so these notes (reported, never fatal) still come from configure.log.
    log_text = _log_text(result.log)
    for key in OPTIONAL_KEYS:
        if cmake_cache.to_bool(cache.get(key)):
            said = [l.strip("- ").strip() for l in log_text.splitlines()
                    if key[4:] in l and re.search(r"not found|NOT FOUND|could not find", l, re.I)]
            # The log's line usually names the key itself ("USE_NVML=ON but NVML was not found"):
            # then it is the note, so the key is not said twice.
            if said and said[-1].startswith(key):
                note = said[-1]
            else:
                note = f"{key}=ON in the cache" + (f" but: {said[-1]}" if said else "")
            result.notes.append(note + " (optional: reported, not fatal)")
    if problems:
        raise StepError("configure", "the CMake cache does not match the release profile:\n  - "
                        + "\n  - ".join(problems), log=result.log)
