"""The harness's options, validated once, before any test or build starts.

``conftest.py`` turns pytest's command line into a :class:`RunOptions`; everything else takes
that object (or the plain values in it). Bad input is a :class:`UsageError` with a message that
names the option and the fix.
"""
from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from .bundle import opencv_config_dir
from .development_settings import cmake_define_reason, host_workarounds, used_options
from .errors import UsageError, WheelError, WheelNameError
from .host_gpus import host_gpus, native_arch_list
from .profile_data import PLATFORM_FLAVORS, Profile, get_profile
from .arch import Arch, make_arch
from .fast_compile import DEVICE_LEVELS, fast_compile_defines
from .versions import validate_version
from .readers.symbol_floor import parse_floor
from .readers.wheel import check_archive
from .readers.wheel_name import parse_wheel_name
from .venv import check_pass_env


@dataclass(frozen=True)
class RunOptions:
    profile: Profile
    #: the CUDA archs: as requested, any MXNET_CUDA_ARCH override, and the GPUs of --cuda-arch=native
    cuda_arch: Arch
    wheel: Path | None = None
    package_version: str | None = None
    cmake_cache: Path | None = None
    mxnet_src: Path | None = None
    provenance_json: Path | None = None
    build_dir: Path | None = None
    jobs: int = 1
    wheel_version: str | None = None
    build_python: str | None = None
    venv_dir: Path | None = None
    keep_venv: bool = False
    find_links: tuple[str, ...] = ()
    index_url: str | None = None
    #: --no-index: the venv installs from --find-links only (an offline host's wheelhouse)
    no_index: bool = False
    extra_requirements: tuple[str, ...] = ()
    no_deps: bool = False
    cuda_from_wheels: bool = False
    publish: bool = False
    dry_run: bool = False
    yes: bool = False
    remote: str = "origin"
    compiler_launcher: str = "auto"
    #: --cmake-define KEY=VALUE, in order (a later one of the same key wins)
    cmake_defines: dict[str, str] = field(default_factory=dict)
    allow_dirty: bool = False
    #: --allow-untracked: a release run builds a tree with untracked, not ignored files (a development setting)
    allow_untracked: bool = False
    fresh: bool = False
    #: --glibc-floor: symbol-version family -> version, replacing the profile's floor
    glibc_floor: dict[str, str] | None = None
    #: --pass-env NAME: variables the wheel's code gets beside the allow-list (build_steps.venv)
    pass_env: tuple[str, ...] = ()
    #: --fast-compile: host code built at fast_compile.FAST_COMPILE_LEVEL instead of the release's -O3
    fast_compile: bool = False
    #: --fast-compile-device: nvcc's -Ofc level for device code on top of --fast-compile, or None
    fast_compile_device: str | None = None
    #: --opencv-prefix: OpenCV installed in a prefix outside / (configure's OPENCV_ROOT, bundle's search)
    opencv_prefix: Path | None = None
    #: --opencv: "system" (the host's or --opencv-prefix's) or "built" (build_steps.opencv_build)
    opencv: str = "system"
    #: (as written, why) of each development run option (development_settings.toml [options])
    development_settings: tuple[tuple[str, str], ...] = ()
    #: --no-sandbox: the tree's and the wheel's code run without bubblewrap (build_steps.sandbox)
    no_sandbox: bool = False

    @property
    def build_defines(self) -> dict[str, str]:
        """Every CMake definition the user's options add to the profile's, in the order they win:
        --fast-compile's, then --cmake-define's (an explicit definition beats a shorthand)."""
        return {**(fast_compile_defines(device=self.fast_compile_device) if self.fast_compile else {}),
                **self.cmake_defines}

    @property
    def development_options(self) -> tuple[str, ...]:
        """The shorthand development options of this run, as written on the command line."""
        opts: list[str] = []
        if self.cuda_arch.native_gpus:
            opts.append(f"--cuda-arch=native ({self.cuda_arch.requested.text}: "
                        f"{', '.join(self.cuda_arch.native_gpus)})")
        if self.fast_compile:
            opts.append("--fast-compile")
        opts += [written for written, _why in self.development_settings]
        opts += [f"--cmake-define={k}={v}" for k, v in self.cmake_defines.items()
                 if cmake_define_reason(k, self.profile)]
        return tuple(opts)

    @property
    def host_workarounds(self) -> list[str]:
        """``-DKEY=VALUE (why)`` of each --cmake-define a host needs to build at all."""
        return host_workarounds(self.cmake_defines)

    def for_release(self, version: str, mxnet_src: Path | None) -> "RunOptions":
        """The options of a publish run once its release version is fixed.

        The only change RunOptions ever sees after make_options: the version needs git (local and
        remote tags), so it is picked at session start (harness.plugins.publish_run), before any fixture reads
        the options, and harness.common.fix_release_options installs the result exactly once.
        """
        return replace(self, wheel_version=version, mxnet_src=mxnet_src)


def check_wheel_path(value: str) -> Path:
    """A ``--wheel`` argument that exists, is readable, is a zip and has a wheel's file name."""
    path = Path(value).expanduser()
    if not path.exists():
        raise UsageError(f"--wheel {value}: no such file; pass the path of a built .whl")
    if path.is_dir():
        raise UsageError(f"--wheel {value}: is a directory; pass the .whl file inside it")
    if not os.access(path, os.R_OK):
        raise UsageError(f"--wheel {value}: not readable (check its permissions)")
    if path.suffix != ".whl":
        raise UsageError(f"--wheel {value}: not a wheel (the name must end in .whl)")
    if not zipfile.is_zipfile(path):
        raise UsageError(
            f"--wheel {value}: not a valid zip archive (truncated or corrupt download?); "
            "rebuild or download the wheel again")
    try:  # once here, not once per gate: a name pip and the gates cannot read is a usage error
        parse_wheel_name(path)
    except WheelNameError as exc:
        raise UsageError(f"--wheel {value}: {exc}") from None
    try:  # an archive pip or a streaming reader would refuse or misread (unsafe, linked, encrypted,
        # duplicate or bomb members, headers that disagree): a bad input, said once (issue 43)
        check_archive(path)
    except WheelError as exc:
        raise UsageError(f"--wheel {value}: {exc}") from None
    return path.resolve()


def _existing_dir(option: str, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise UsageError(f"{option} {value}: no such directory")
    return path.resolve()


def parse_cmake_defines(values: Iterable[object] | None) -> dict[str, str]:
    """``["USE_OPENCV=OFF", "CMAKE_CXX_FLAGS=-O2 -g"]`` -> ``{"USE_OPENCV": "OFF", ...}``."""
    defines: dict[str, str] = {}
    for value in values or ():
        key, sep, val = str(value).partition("=")
        key = key.strip()
        if key.startswith("-D"):
            key = key[2:]
        key = key.split(":", 1)[0]  # KEY:TYPE=VALUE, as cmake -D takes it
        if not sep or not key or not all(c.isalnum() or c in "_.-" for c in key):
            raise UsageError(f"--cmake-define {value!r}: write KEY=VALUE (e.g. --cmake-define="
                             "USE_CUDNN=OFF), one definition per option")
        defines[key] = val
    return defines


def flavor_for_wheel(filename: str) -> str | None:
    """The flavor a wheel's platform tag implies (``macosx_*`` -> macos), or None (no opinion)."""
    try:
        tags = parse_wheel_name(filename).tags
    except WheelNameError:
        return None
    found = {flavor for t in tags for prefix, flavor in PLATFORM_FLAVORS.items()
             if t.platform.startswith(prefix)}
    return found.pop() if len(found) == 1 else None


def make_options(raw: Mapping[str, Any]) -> RunOptions:
    """Validate the raw option values (as given on the command line) into RunOptions. (``raw``'s
    values are Any: each option's value has the type pytest's parser gave it; this is where they
    are checked into RunOptions' typed fields.)"""
    wheel = check_wheel_path(raw["wheel"]) if raw.get("wheel") else None
    if wheel is not None:
        _refuse_build_options(raw)
    # No --flavor: a macosx_* wheel is the macOS flavor's; anything else the CUDA release's.
    profile = get_profile(raw.get("flavor") or (wheel and flavor_for_wheel(wheel.name)) or "cuda")
    if profile.macho is not None and wheel is None:
        raise UsageError(f"--flavor {profile.name} audits an existing wheel: pass --wheel=PATH of the "
                         "macOS wheel (it is built on a Mac by the fork's build script, not here)")
    cmake_defines = parse_cmake_defines(raw.get("cmake_defines"))
    requested = raw.get("cuda_arch")
    native = (_native_arch(profile, wheel, cmake_defines)
              if requested and requested.strip().lower() == "native" else None)
    arch = make_arch(profile, requested, cmake_defines, native)
    if raw.get("fast_compile"):
        if wheel is not None:
            raise UsageError("--fast-compile changes how libmxnet is compiled; with --wheel nothing is "
                             "compiled. Drop it")
        clash = sorted(set(fast_compile_defines()) & set(cmake_defines))
        if clash:
            raise UsageError(f"--fast-compile sets {', '.join(clash)} itself; drop it or the "
                             f"--cmake-define of {' and '.join(clash)}")
    device = _fast_compile_device(raw, profile)

    package_version = raw.get("package_version")
    if package_version:
        package_version = validate_version(package_version, profile)
    wheel_version = raw.get("wheel_version")
    if wheel_version:
        wheel_version = validate_version(wheel_version, profile, strict_scheme=bool(raw.get("publish")))

    cmake_cache = raw.get("cmake_cache")
    if cmake_cache:
        cmake_cache = Path(cmake_cache).expanduser()
        if not cmake_cache.is_file():
            raise UsageError(f"--cmake-cache {raw['cmake_cache']}: no such file; pass <build>/CMakeCache.txt")
        cmake_cache = cmake_cache.resolve()

    jobs = raw.get("jobs")
    if jobs is not None and int(jobs) < 1:  # 0 is not "all cores": that is leaving --jobs out
        raise UsageError(f"--jobs {jobs}: must be a positive number (leave it out for all cores)")
    jobs = jobs or os.cpu_count() or 1

    prov_json = raw.get("provenance_json")
    if prov_json:
        prov_json = Path(prov_json).expanduser().resolve()
        if not prov_json.parent.is_dir():
            raise UsageError(f"--provenance-json {raw['provenance_json']}: directory {prov_json.parent} does not exist")

    return RunOptions(
        profile=profile,
        cuda_arch=arch,
        wheel=wheel,
        package_version=package_version,
        cmake_cache=cmake_cache,
        mxnet_src=_existing_dir("--mxnet-src", raw.get("mxnet_src")),
        provenance_json=prov_json,
        build_dir=_build_dir(raw.get("build_dir")),
        jobs=int(jobs),
        wheel_version=wheel_version,
        build_python=raw.get("build_python"),
        venv_dir=Path(raw["venv_dir"]).expanduser().resolve() if raw.get("venv_dir") else None,
        keep_venv=bool(raw.get("keep_venv")),
        find_links=tuple(raw.get("find_links") or ()),
        index_url=raw.get("index_url"),
        no_index=bool(raw.get("no_index")),
        extra_requirements=tuple(raw.get("extra_requirements") or ()),
        no_deps=bool(raw.get("no_deps")),
        cuda_from_wheels=bool(raw.get("cuda_from_wheels")),
        publish=bool(raw.get("publish")),
        dry_run=bool(raw.get("dry_run")),
        yes=bool(raw.get("yes")),
        remote=raw.get("remote") or "origin",
        cmake_defines=cmake_defines,
        allow_dirty=bool(raw.get("allow_dirty")),
        allow_untracked=bool(raw.get("allow_untracked")),
        fresh=bool(raw.get("fresh")),
        compiler_launcher=raw.get("compiler_launcher") or "auto",
        glibc_floor=parse_floor(raw["glibc_floor"]) if raw.get("glibc_floor") else None,
        pass_env=check_pass_env(raw.get("pass_env")),
        fast_compile=bool(raw.get("fast_compile")),
        fast_compile_device=device,
        opencv_prefix=_opencv_prefix(raw.get("opencv_prefix")),
        opencv=_opencv_choice(raw, profile),
        development_settings=used_options(raw),
        no_sandbox=bool(raw.get("no_sandbox")),
    )


#: (dest, as written, the value that means "not given") of the options that only a build reads.
#: Not --opencv: with --wheel it states which OpenCV the wheel bundles, the closure budget
#: (tests/test_opencv_bundle.py) the audit judges it against (_opencv_choice).
BUILD_OPTIONS = (("jobs", "--jobs", None), ("build_dir", "--build-dir", None),
                 ("cuda_from_wheels", "--cuda-from-wheels", False), ("cuda_arch", "--cuda-arch", None),
                 ("fresh", "--fresh", False), ("compiler_launcher", "--compiler-launcher", "auto"),
                 ("allow_untracked", "--allow-untracked", False),
                 ("fast_compile_device", "--fast-compile-device", None))


def _refuse_build_options(raw: Mapping[str, Any]) -> None:
    """With --wheel nothing is built: a build option would be silently ignored, so it is refused
    (as --fast-compile and --cuda-arch=native are, each with its own sentence)."""
    if raw.get("fast_compile") or str(raw.get("cuda_arch") or "").strip().lower() == "native":
        return
    for dest, option, unset in BUILD_OPTIONS:
        value = raw.get(dest)
        if value is not None and value != unset and value is not False:
            raise UsageError(f"{option} {value if value is not True else ''}".rstrip()
                             + f": a build option; with --wheel nothing is built. Drop it, or drop "
                             "--wheel to build from --mxnet-src")


def _fast_compile_device(raw: Mapping[str, Any], profile: Profile) -> str | None:
    """``--fast-compile-device=LEVEL``: a level of --fast-compile's build, for its CUDA compiles."""
    level = raw.get("fast_compile_device")
    if level is None:
        return None
    if level not in DEVICE_LEVELS:
        raise UsageError(f"--fast-compile-device={level}: one of {', '.join(DEVICE_LEVELS)} (nvcc's -Ofc levels)")
    if not raw.get("fast_compile"):
        raise UsageError(f"--fast-compile-device={level} sets the device-code level of a --fast-compile "
                         "build: add --fast-compile")
    if not profile.is_cuda:
        raise UsageError(f"--fast-compile-device: the {profile.name} flavor builds no CUDA code; drop it")
    return str(level)


def _build_dir(value: str | None) -> Path | None:
    """``--build-dir``: relative to the current directory, as every path a shell passes is; an empty
    value is a mistake (an unset variable), not "the default"."""
    if value is None:
        return None
    if not str(value).strip():
        raise UsageError("--build-dir is empty (an unset variable?): pass a directory outside the source "
                         "tree, or leave the option out for the default beside it")
    return Path(value).expanduser().resolve()


def _opencv_prefix(value: str | None) -> Path | None:
    """``--opencv-prefix``: a directory with OpenCV's CMake package (OpenCVConfig.cmake) in it."""
    path = _existing_dir("--opencv-prefix", value)
    if path is not None and opencv_config_dir(path) is None:
        raise UsageError(f"--opencv-prefix {value}: no OpenCVConfig.cmake under it (looked in "
                         "usr/lib/x86_64-linux-gnu/cmake/opencv4 and lib/cmake/opencv4); pass the root the "
                         "OpenCV packages were unpacked into (python -m tools.opencv_prefix unpack)")
    return path


def _opencv_choice(raw: Mapping[str, Any], profile: Profile) -> str:
    """``--opencv``: which OpenCV the build uses (default: the profile's, profiles.toml); ``built``
    brings its own prefix, so an ``--opencv-prefix`` beside it would be two answers to one question.
    An --opencv-prefix alone is the system choice, whatever the profile says. With --wheel nothing
    is built: the choice is the audit's statement of which OpenCV the wheel bundles (a wheel linked
    against the host's OpenCV is audited with --opencv=system), the closure budget it is judged by."""
    given = raw.get("opencv")
    if given == "built" and raw.get("opencv_prefix"):
        raise UsageError("--opencv=built and --opencv-prefix both choose the OpenCV the wheel is built "
                         "against: keep one (--opencv=built builds its own prefix)")
    if given is None and raw.get("opencv_prefix"):
        return "system"
    return str(given or profile.opencv)


def _native_arch(profile: Profile, wheel: Path | None,
                 cmake_defines: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """``--cuda-arch=native`` resolved on this host: (MXNET_CUDA_ARCH text, the GPUs it came from)."""
    if wheel is not None:
        raise UsageError("--cuda-arch=native chooses what to build; with --wheel nothing is built. "
                         "Drop it (a wheel's archs are read from its fatbin)")
    if not profile.is_cuda:
        raise UsageError(f"--cuda-arch=native: the {profile.name} flavor builds no CUDA code; drop it")
    if "MXNET_CUDA_ARCH" in cmake_defines:
        raise UsageError("--cuda-arch=native and --cmake-define=MXNET_CUDA_ARCH=... both choose the "
                         "archs: keep one")
    gpus = host_gpus()
    if not gpus:
        raise UsageError("--cuda-arch=native: this host has no NVIDIA GPU that nvidia-smi or the CUDA "
                         "driver (libcuda.so.1) reports, so there is nothing to build for. Run it on "
                         "the GPU machine, or name the archs of a development build yourself "
                         "(--cmake-define=MXNET_CUDA_ARCH=9.0)")
    return native_arch_list(gpus), tuple(f"{g.name} ({g.compute_capability})" for g in gpus)
