"""Release profiles: everything a flavor promises, loaded from ``profiles.toml`` beside this module.

The build steps and the gates both read these, so a build cannot be configured one way and
checked another. The data file states each fact once (a toggle, a reason, a RUNPATH entry, a CUDA
stack); this module checks it against PROFILES_SCHEMA and derives the rest (configure flags,
features, setup switches, RUNPATH) into frozen :class:`Profile` objects, the way auditwheel loads
its policy file. The rules that read the data live with their concern: build_steps.arch (CUDA
archs), build_steps.library_policy (host and pip libraries), build_steps.versions (the version
scheme), build_steps.cuda_stack (the CUDA stack's derived facts).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .arch import NO_ARCH, ArchSpec, parse_cuda_arch
from .checked_toml import load_checked_toml
from .cuda_stack import CUBLAS_PROBE_LIBRARIES, CublasPolicy, CudaStack
from .errors import ProfileDataError, UsageError
from .versions import release_version, release_version_pattern

#: CMake feature toggles the gates compare (cache key -> runtime Features name).
CMAKE_FEATURES = {
    "USE_CUDA": "CUDA",
    "USE_CUDNN": "CUDNN",
    "USE_NCCL": "NCCL",
    "USE_ONEDNN": "ONEDNN",
    "USE_OPENCV": "OPENCV",
    "USE_OPENMP": "OPENMP",
}

#: What the runtime gates install beside the wheel: onnxruntime runs the exported model; it is a
#: test-only dependency, never one of the wheel's. No upper pin: a newer
#: runtime reads the IR versions of every onnx the wheel allows.
GATE_TEST_REQUIREMENTS = ("onnxruntime>=1.20",)
#: Runtime feature names that older MXNet releases spell differently (mxnet 1.x: MKLDNN).
FEATURE_ALIASES = {"ONEDNN": ("ONEDNN", "MKLDNN")}


@dataclass(frozen=True)
class MachoPolicy:
    """What a macOS wheel's Mach-O files promise (checked from Linux by build_steps.readers.macho_audit)."""
    #: the one architecture every Mach-O file must carry a slice for
    arch: str
    libmxnet: str
    #: load paths the system provides (macOS ships these; everything else comes from the wheel)
    system_prefixes: tuple[str, ...]
    #: absolute prefixes of build hosts (Homebrew, MacPorts, home dirs) named in messages; any other
    #: absolute non-system path is refused as well
    build_host_prefixes: tuple[str, ...]
    #: runtime library name prefix -> why the wheel must bundle it (macOS ships no OpenMP runtime)
    bundled_runtimes: dict[str, str]
    #: the install name every bundled library and libmxnet carries: "@rpath/<file name>"
    install_name_prefix: str = "@rpath/"


@dataclass(frozen=True)
class Profile:
    """One flavor's promises, as load_profiles builds it from its [profiles.<name>] table: the
    derived attributes (features and configure_flags from one toggle, runpath, setup_env,
    onnx_hard, needs_libcuda, release_arch, and what its CUDA stack brings) are never written in
    the data file."""
    name: str
    #: expected CMake toggle per key of CMAKE_FEATURES (True = ON)
    features: dict[str, bool]
    #: onnx must be a hard Requires-Dist (True) or only the ``onnx`` extra (False)
    onnx_hard: bool
    cuda_arch: str | None
    #: RUNPATH of libmxnet.so, in order (entries after these are the build tree's, tolerated)
    runpath: tuple[str, ...]
    #: MXNET_SETUP_ENABLE_* switches given to python/setup.py
    setup_env: dict[str, str]
    #: requirements that must appear in METADATA with exactly these specifiers
    hard_requirements: tuple[str, ...]
    #: requirements that must NOT be hard (name -> reason)
    forbidden_hard: dict[str, str]
    #: the default build dir's suffix: ``<tree>-<build_dir>`` beside the tree (default_build_dir)
    build_dir: str
    version_prefix: str
    #: full first-time configure flags (the fork's release set)
    configure_flags: dict[str, str]
    #: pip-provided libraries: SONAME prefix -> the RUNPATH entry that must reach it (the profile's
    #: own [pip_libraries] and its CUDA stack's)
    pip_libraries: dict[str, str] = field(default_factory=dict)
    #: pip-provided libraries: SONAME prefix -> the distribution that ships it (the closure check
    #: demands it in Requires-Dist)
    pip_distributions: dict[str, str] = field(default_factory=dict)
    needs_libcuda: bool = False
    #: the Mach-O promises of a macOS wheel (None: the wheel's libraries are ELF)
    macho: MachoPolicy | None = None
    #: the host baseline a user's machine provides (what a NEEDED may be left to): group of
    #: [host_baseline] -> its whole-name SONAME prefixes
    host_baseline: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the highest symbol versions the wheel may require (family -> version), from [symbol_floors]
    symbol_floor: dict[str, str] = field(default_factory=dict)
    #: SONAME majors a NEEDED left to the host or to pip may have: prefix -> (majors, what they are);
    #: the CUDA stack's (empty without one)
    soname_majors: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    #: the CUDA stack (None: a profile without CUDA)
    cuda: CudaStack | None = None
    #: free space a build dir of the fork needs for this profile, in GiB (measured: see profiles.toml); 0: not checked
    build_space_gib: float = 0.0
    #: the C/C++/CUDA sources of the tree build_space_gib and cache_space_gib were measured on: a tree
    #: with fewer needs proportionally less (preflight.space_needs); 0: not scaled
    space_sources: int = 0
    #: the least a build dir needs however small the tree (its staged libraries and wheel), in GiB
    build_space_min_gib: float = 0.0
    #: free space the build's temporaries need in TMPDIR, in GiB (estimated: see profiles.toml); 0: not checked
    tmp_space_gib: float = 0.0
    #: free space the compiler cache's objects of one build need in the harness cache, in GiB (the
    #: CUDA wheels' share is the stack's wheels_space_gib); 0: not checked
    cache_space_gib: float = 0.0
    #: the oldest nvcc that builds this profile ("13.0"); "" for a profile without CUDA
    nvcc_minimum: str = ""
    #: cuda_arch, parsed (NO_ARCH without one)
    release_arch: ArchSpec = NO_ARCH
    #: start-up files the wheel may install: site-packages path -> why (from startup_allowed)
    startup_allowed: dict[str, str] = field(default_factory=dict)
    #: which OpenCV the flavor builds against and bundles (--opencv's default): "system" (the host's or
    #: --opencv-prefix's, the recipe's) or "built" (build_steps.opencv_build; docs/opencv_build.md)
    opencv: str = "system"
    #: the bundled closure's budget (mxnet/lib: files, MB) per OpenCV choice, measured (issue 46):
    #: {"system": (files, mb), "built": (files, mb)}; a choice without one has no budget gate
    closure_budget: dict[str, tuple[int, float]] = field(default_factory=dict)

    @property
    def binary_format(self) -> str:
        return "macho" if self.macho is not None else "elf"

    @property
    def is_cuda(self) -> bool:
        return bool(self.features.get("USE_CUDA"))

    def default_build_dir(self, src: Path) -> Path:
        """The build dir when --build-dir is not given: beside the tree, never in it (``~/mxnet`` ->
        ``~/mxnet-build``). A build dir in the tree writes files its CMake globs can pick up (CMake's
        own CMakeCUDACompilerId.cu matched the fork's GLOB_RECURSE src/*.cu: issue 42)."""
        src = Path(src)
        return src.parent / f"{src.name}-{self.build_dir}"

    def default_version(self, when: datetime | None = None) -> str:
        return release_version(self.version_prefix, when)

    def version_pattern(self) -> re.Pattern[str]:
        """The release scheme ``<prefix>.<YYYYMMDD>[.<N>]`` (e.g. 2.0.0+cu13.bw.20260614.1)."""
        return release_version_pattern(self.version_prefix)


#: The data file the profiles are loaded from (schema: PROFILES_SCHEMA).
PROFILES_FILE = Path(__file__).resolve().with_name("profiles.toml")


def _table(values: dict[str, Any], *, required: Iterable[str] = (),
           additional: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-schema object: exactly these keys (``additional``: the schema of any other key)."""
    return {"type": "object", "properties": values, "required": list(required),
            "additionalProperties": additional if additional is not None else False}


_STR = {"type": "string", "minLength": 1}
_STRS = {"type": "array", "items": _STR}
_KEYED_STRS = {"type": "object", "additionalProperties": _STR}
_CMAKE_VALUE = {"type": ["boolean", "string"]}
_VERSION = {"type": "string", "pattern": "^[0-9]+([.][0-9]+)*$"}
_DRIVER = {"type": "integer", "minimum": 1}
_PIP_LIBRARIES = {"type": "object", "additionalProperties": _table(
    {"runpath": _STR, "distribution": _STR}, required=("runpath", "distribution"))}

#: The shape of profiles.toml (JSON Schema, checked with jsonschema): every table is closed, so an
#: unknown or misspelt key is an error naming it.
PROFILES_SCHEMA = _table({
    "reasons": {"type": "object", "additionalProperties": _STR},
    "requirements": {"type": "object", "additionalProperties": _table(
        {"specs": _STRS, "setup_switch": _STR}, required=("specs",))},
    "pip_libraries": _PIP_LIBRARIES,
    "host_baseline": {"type": "object", "additionalProperties": _STRS},
    "symbol_floors": {"type": "object", "additionalProperties": _KEYED_STRS},
    "cuda_stacks": {"type": "object", "additionalProperties": _table({
        "major": {"type": "integer", "minimum": 1},
        "build_wheels": _STRS,
        "wheel_lock": _STR,
        "wheels_space_gib": {"type": "number", "minimum": 0},
        "pip_libraries": _PIP_LIBRARIES,
        "soname_majors": {"type": "object", "additionalProperties": _table(
            {"majors": _STRS, "what": _STR}, required=("majors", "what"))},
        "cublas": _table({"driver_floor": _DRIVER, "pin_driver": _DRIVER, "legacy_pip_dirs": _STRS,
                          "new_driver_from": _VERSION, "syrk_crash": _VERSION, "syrk_fixed": _VERSION},
                         required=("driver_floor", "pin_driver")),
    }, required=("major", "build_wheels", "wheel_lock", "pip_libraries", "soname_majors", "cublas"))},
    "ptx_isa_drivers": {"type": "object", "propertyNames": {"pattern": "^[0-9]+[.][0-9]+$"},
                        "additionalProperties": _table({"cuda": _VERSION, "driver": _DRIVER},
                                                       required=("cuda", "driver"))},
    "install": _table({"shadowing_names": _STRS, "dependency_top_level": {
        "type": "object", "additionalProperties": _STRS}}, required=("shadowing_names", "dependency_top_level")),
    "macho": {"type": "object", "additionalProperties": _table(
        {"arch": _STR, "libmxnet": _STR, "system_prefixes": _STRS, "build_host_prefixes": _STRS,
         "bundled_runtimes": _KEYED_STRS, "install_name_prefix": _STR},
        required=("arch", "libmxnet", "system_prefixes", "build_host_prefixes", "bundled_runtimes"))},
    "profiles": {"type": "object", "minProperties": 1, "additionalProperties": _table({
        "cuda_arch": _STR,
        "cuda_stack": _STR,
        "requirements": _STRS,
        "forbidden": _KEYED_STRS,
        "forbidden_names": _KEYED_STRS,
        "build_dir": _STR,
        "version_prefix": _STR,
        "runpath": _STRS,
        "pip_libraries": _STRS,
        "host_baseline": _STRS,
        "symbol_floor": _STR,
        "macho": _STR,
        "build_space_gib": {"type": "number", "minimum": 0},
        "space_sources": {"type": "integer", "minimum": 1},
        "build_space_min_gib": {"type": "number", "minimum": 0},
        "tmp_space_gib": {"type": "number", "minimum": 0},
        "cache_space_gib": {"type": "number", "minimum": 0},
        "nvcc_minimum": {"type": "string", "pattern": "^[0-9]+[.][0-9]+$"},
        "platform_tag": _STR,
        "startup_allowed": _KEYED_STRS,
        "opencv": {"enum": ["system", "built"]},
        "closure_budget": _table({choice: _table({"files": {"type": "integer", "minimum": 1},
                                                  "mb": {"type": "number", "exclusiveMinimum": 0}},
                                                 required=("files", "mb"))
                                  for choice in ("system", "built")}, required=()),
        "cmake": {"type": "object", "additionalProperties": _CMAKE_VALUE,
                  "required": list(CMAKE_FEATURES),
                  "properties": {key: {"type": "boolean"} for key in CMAKE_FEATURES}},
    }, required=("requirements", "build_dir", "version_prefix", "cmake"))},
}, required=("reasons", "requirements", "pip_libraries", "host_baseline", "symbol_floors",
             "install", "macho", "profiles"))


def _cmake_value(value: bool | str) -> str:
    """A profile's CMake setting as configure passes it: a toggle (true/false) is ON/OFF."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return value


_V = TypeVar("_V")


def _pick(path: Path, table: Mapping[str, _V], key: str, where: str) -> _V:
    """``table[key]``, or a ProfileDataError naming the missing key, where it was named, and the file."""
    try:
        return table[key]
    except KeyError:
        raise ProfileDataError(f"{path}: {where} names {key!r}, which is not defined there "
                               f"(defined: {', '.join(sorted(table)) or 'none'})") from None


def _cuda_stack(path: Path, name: str, raw: dict[str, Any]) -> CudaStack:
    where = f"[cuda_stacks.{name}]"
    for prefix in CUBLAS_PROBE_LIBRARIES:
        _pick(path, raw["soname_majors"], prefix, f"{where} soname_majors (the cuBLAS gate's facts)")
    _pick(path, raw["pip_libraries"], "libcublas", f"{where} pip_libraries (the cuBLAS gate's facts)")
    if "syrk_crash" in raw["cublas"] and "syrk_fixed" not in raw["cublas"]:
        raise ProfileDataError(f"{path}: {where} cublas has a syrk_crash but no syrk_fixed: the trap's "
                               "message names the cuBLAS that fixes it")
    for spec in raw["build_wheels"]:
        Requirement(spec)  # a malformed spec fails here, not at the first --cuda-from-wheels
    return CudaStack(
        name=name, major=raw["major"], build_wheels=tuple(raw["build_wheels"]),
        wheel_lock=path.parent / raw["wheel_lock"],
        wheels_space_gib=float(raw.get("wheels_space_gib", 0.0)),
        pip_libraries={lib: v["runpath"] for lib, v in raw["pip_libraries"].items()},
        pip_distributions={lib: v["distribution"] for lib, v in raw["pip_libraries"].items()},
        soname_majors={prefix: (tuple(m["majors"]), m["what"]) for prefix, m in raw["soname_majors"].items()},
        cublas=CublasPolicy(**{**raw["cublas"], "legacy_pip_dirs": tuple(raw["cublas"].get("legacy_pip_dirs", ()))}),
    )


def _profile(path: Path, name: str, raw: dict[str, Any], data: dict[str, Any],
             macho: dict[str, MachoPolicy], stacks: dict[str, CudaStack]) -> Profile:
    where = f"[profiles.{name}]"
    groups = {g: _pick(path, data["requirements"], g, f"{where} requirements") for g in raw["requirements"]}
    forbidden = {req_name: _pick(path, data["reasons"], reason, f"{where} forbidden_names")
                 for req_name, reason in raw.get("forbidden_names", {}).items()}
    for group, reason in raw.get("forbidden", {}).items():
        why = _pick(path, data["reasons"], reason, f"{where} forbidden")
        for spec in _pick(path, data["requirements"], group, f"{where} forbidden")["specs"]:
            forbidden[Requirement(spec).name] = why
    pip = {lib: _pick(path, data["pip_libraries"], lib, f"{where} pip_libraries")
           for lib in raw.get("pip_libraries", ())}
    cmake = raw["cmake"]
    stack = _pick(path, stacks, raw["cuda_stack"], f"{where} cuda_stack") if "cuda_stack" in raw else None
    if (stack is not None) != bool(cmake["USE_CUDA"]):
        raise ProfileDataError(f"{path}: {where} has USE_CUDA = {str(bool(cmake['USE_CUDA'])).lower()} "
                               f"and {'a' if stack else 'no'} cuda_stack: a CUDA profile names the "
                               "[cuda_stacks] table of its CUDA major, a profile without CUDA none")
    if stack is not None:
        twice = sorted(set(pip) & set(stack.pip_libraries))
        if twice:
            raise ProfileDataError(f"{path}: {where} pip_libraries names {', '.join(twice)}, which its "
                                   f"CUDA stack {stack.name} provides: name each pip library once")
    runpaths = {lib: v["runpath"] for lib, v in pip.items()} | (stack.pip_libraries if stack else {})
    distributions = {lib: v["distribution"] for lib, v in pip.items()} | (stack.pip_distributions if stack else {})
    baseline = {group: tuple(_pick(path, data["host_baseline"], group, f"{where} host_baseline"))
                for group in raw.get("host_baseline", ())}
    cuda_arch = raw.get("cuda_arch")
    if cuda_arch is not None and not cmake["USE_CUDA"]:
        raise ProfileDataError(f"{path}: {where} has a cuda_arch but USE_CUDA = false")
    flags = {key: _cmake_value(value) for key, value in cmake.items()}
    if cuda_arch is not None:
        flags["MXNET_CUDA_ARCH"] = cuda_arch
    floor = raw.get("symbol_floor")
    # a switch is on when any group the profile requires is added by it (two flavors' groups may share one)
    switches = dict.fromkeys(g["setup_switch"] for g in data["requirements"].values() if "setup_switch" in g)
    on = {g["setup_switch"] for g in groups.values() if "setup_switch" in g}
    return Profile(
        name=name,
        features={key: cmake[key] for key in CMAKE_FEATURES},
        onnx_hard="onnx" in groups,
        cuda_arch=cuda_arch,
        runpath=tuple(dict.fromkeys([*raw.get("runpath", ()), *runpaths.values()])),
        setup_env={switch: "1" if switch in on else "0" for switch in switches},
        hard_requirements=tuple(spec for g in groups.values() for spec in g["specs"]),
        forbidden_hard=forbidden,
        build_dir=raw["build_dir"],
        version_prefix=raw["version_prefix"],
        configure_flags=flags,
        pip_libraries=runpaths,
        pip_distributions=distributions,
        needs_libcuda=bool(cmake["USE_CUDA"]),
        macho=_pick(path, macho, raw["macho"], f"{where} macho") if "macho" in raw else None,
        host_baseline=baseline,
        symbol_floor=dict(_pick(path, data["symbol_floors"], floor, f"{where} symbol_floor")) if floor else {},
        soname_majors=dict(stack.soname_majors) if stack else {},
        cuda=stack,
        build_space_gib=float(raw.get("build_space_gib", 0.0)),
        space_sources=int(raw.get("space_sources", 0)),
        build_space_min_gib=float(raw.get("build_space_min_gib", 0.0)),
        tmp_space_gib=float(raw.get("tmp_space_gib", 0.0)),
        cache_space_gib=float(raw.get("cache_space_gib", 0.0)),
        nvcc_minimum=raw.get("nvcc_minimum", ""),
        opencv=raw.get("opencv", "system"),
        closure_budget={choice: (int(b["files"]), float(b["mb"]))
                        for choice, b in raw.get("closure_budget", {}).items()},
        release_arch=parse_cuda_arch(cuda_arch) if cuda_arch is not None else NO_ARCH,
        startup_allowed={member: _pick(path, data["reasons"], reason, f"{where} startup_allowed")
                         for member, reason in raw.get("startup_allowed", {}).items()},
    )


@dataclass(frozen=True)
class ProfileData:
    """profiles.toml, loaded and checked: the profiles and the shared tables they refer to."""
    profiles: dict[str, Profile]
    #: name -> CudaStack, every [cuda_stacks] table
    cuda_stacks: dict[str, CudaStack]
    macho: dict[str, MachoPolicy]
    #: wheel platform-tag prefix -> the flavor a wheel so tagged is audited as
    platform_flavors: dict[str, str]
    #: top-level names no wheel may install (the [install] table)
    shadowing_names: tuple[str, ...] = ()
    #: canonical distribution name -> the top-level names its wheels install
    dependency_top_level: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: PTX ISA (major, minor) -> (the CUDA release that introduced it, its minimum driver): [ptx_isa_drivers]
    ptx_isa_drivers: dict[tuple[int, int], tuple[str, int]] = field(default_factory=dict)


def load_profiles(path: Path = PROFILES_FILE) -> ProfileData:
    """Read ``path``, check it against PROFILES_SCHEMA and its cross-references, and build the
    frozen profiles. A ProfileDataError names the offending key and the file."""
    path = Path(path)
    data = load_checked_toml(path, PROFILES_SCHEMA, ProfileDataError)
    macho = {key: MachoPolicy(**{**value, "system_prefixes": tuple(value["system_prefixes"]),
                                 "build_host_prefixes": tuple(value["build_host_prefixes"])})
             for key, value in data["macho"].items()}
    stacks = {name: _cuda_stack(path, name, raw) for name, raw in data.get("cuda_stacks", {}).items()}
    return ProfileData(
        profiles={name: _profile(path, name, raw, data, macho, stacks) for name, raw in data["profiles"].items()},
        cuda_stacks=stacks,
        macho=macho,
        platform_flavors={raw["platform_tag"]: name for name, raw in data["profiles"].items()
                          if "platform_tag" in raw},
        shadowing_names=tuple(data["install"]["shadowing_names"]),
        dependency_top_level={canonicalize_name(k): tuple(v)
                              for k, v in data["install"]["dependency_top_level"].items()},
        ptx_isa_drivers={(int(k.split(".")[0]), int(k.split(".")[1])): (v["cuda"], v["driver"])
                         for k, v in data.get("ptx_isa_drivers", {}).items()},
    )


_DATA = load_profiles()
PROFILES = _DATA.profiles
MACOS_POLICY = _DATA.macho["macos"]
#: Wheel platform tag prefix -> the flavor a wheel so tagged is audited as (when --flavor is not given).
PLATFORM_FLAVORS = _DATA.platform_flavors
#: Top-level names no wheel may install, and those of known distributions (the [install] table).
SHADOWING_NAMES = _DATA.shadowing_names
DEPENDENCY_TOP_LEVEL = _DATA.dependency_top_level
PTX_ISA_DRIVERS = _DATA.ptx_isa_drivers


def ptx_isa_problem(isa: tuple[int, int], driver_floor: int) -> str | None:
    """Why PTX of ISA ``isa`` does not load on a driver of ``driver_floor`` ([ptx_isa_drivers]),
    else None. A driver runs the ISAs of its CUDA release and older: any ISA above the newest
    the floor's driver runs fails, listed or not (an unlisted one is named as newer than the table)."""
    runs = [v for v, (_, driver) in PTX_ISA_DRIVERS.items() if driver <= driver_floor]
    newest = max(runs) if runs else None
    if newest is not None and isa <= newest:
        return None
    known = PTX_ISA_DRIVERS.get(isa)
    needs = (f"CUDA {known[0]}, driver R{known[1]}+" if known else
             "a CUDA release newer than any in build_steps/profiles.toml [ptx_isa_drivers]")
    floor = (f"the newest it runs is ISA {newest[0]}.{newest[1]} (CUDA {PTX_ISA_DRIVERS[newest][0]})"
             if newest else "it runs none of the listed ISAs")
    return (f"PTX ISA {isa[0]}.{isa[1]} needs {needs}; the profile's driver floor is R{driver_floor}, and {floor}")


def dependency_top_level(distribution: str) -> tuple[str, ...]:
    """The top-level names a distribution's wheels install: from [install.dependency_top_level],
    else its own name with '-' as '_' (how setuptools names a project's package by default)."""
    name = canonicalize_name(distribution)
    return DEPENDENCY_TOP_LEVEL.get(name, (name.replace("-", "_"),))


def get_profile(flavor: str) -> Profile:
    try:
        return PROFILES[flavor]
    except KeyError:
        raise UsageError(f"unknown flavor {flavor!r}: use one of {', '.join(sorted(PROFILES))}") from None


def cuda_profiles() -> tuple[Profile, ...]:
    """The profiles with a CUDA stack, in the data file's order."""
    return tuple(p for p in PROFILES.values() if p.cuda is not None)


def only_cuda_profile(why: str) -> Profile:
    """The one CUDA profile, for a caller that was not told which (``why``: what it needs it for);
    a UsageError naming the choices when profiles.toml has several."""
    found = cuda_profiles()
    if len(found) != 1:
        raise UsageError(f"{why}: profiles.toml has {len(found)} CUDA profiles "
                         f"({', '.join(p.name for p in found) or 'none'}); name the flavor")
    return found[0]
