"""Release profiles: everything a flavor promises, loaded from ``profiles.toml`` beside this module.

The build steps and the gates both read these, so a build cannot be configured one way and
checked another. The data file states each fact once (a toggle, a reason, a RUNPATH entry); this
module checks it against PROFILES_SCHEMA and derives the rest (configure flags, features, setup
switches, RUNPATH) into frozen :class:`Profile` objects. The CUDA arch rules and the host-library
policy stay here as code.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import jsonschema
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .errors import HarnessError, UsageError

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

#: Libraries the host provides and a wheel must never bundle, matched on the whole name
#: (``libc`` must not swallow ``libcharls``, ``libm`` not ``libmount``). The fork's skip list,
#: plus the GCC runtimes it forgot (docs/background.md, G8): libgomp (the host OpenMP runtime libmxnet itself
#: uses; two copies in one process fight) and libquadmath (GPL: must not be redistributed).
HOST_LIBRARIES = (
    "ld-linux", "ld-linux-x86-64", "libc", "libm", "libdl", "libpthread", "librt", "libutil",
    "libnsl", "libresolv", "libanl", "libmvec", "libstdc++", "libgcc_s", "libatomic",
    "libgomp", "libquadmath",
    # CUDA: the driver comes with the host, the toolkit libraries from pip wheels or the toolkit.
    "libcuda", "libcudart", "libcublas", "libcublasLt", "libcudnn", "libnccl", "libnvrtc",
    "libcufft", "libcusolver", "libcusparse", "libcurand", "libnvJitLink", "libnvToolsExt",
    "libnvidia",
)

#: Libraries that must never be inside a wheel, whatever the flavor, and why.
NEVER_BUNDLE = {
    "libcuda.so": "libcuda.so.1 is the NVIDIA driver's; a bundled copy breaks every other driver version",
    "libquadmath.so": "libquadmath is GPL and must not be redistributed in the wheel",
}


def _prefix_re(names) -> re.Pattern:
    """Whole-name SONAME prefixes (``libc`` matches libc.so.6, not libcharls.so)."""
    return re.compile(r"^(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                      + r")(?:\.so|-|$)")


_HOST_RE = _prefix_re(HOST_LIBRARIES)


def is_host_library(soname: str) -> bool:
    """True when ``soname`` is provided by the host (glibc, GCC runtime, NVIDIA driver/toolkit)."""
    return bool(_HOST_RE.match(soname))


@dataclass(frozen=True)
class MachoPolicy:
    """What a macOS wheel's Mach-O files promise (checked from Linux by build_steps.readers.macho_audit)."""
    #: the one architecture every Mach-O file must carry a slice for
    arch: str
    libmxnet: str
    #: load paths the system provides (macOS ships these; everything else comes from the wheel)
    system_prefixes: tuple
    #: absolute prefixes of build hosts (Homebrew, MacPorts, home dirs) named in messages; any other
    #: absolute non-system path is refused as well
    build_host_prefixes: tuple
    #: runtime library name prefix -> why the wheel must bundle it (macOS ships no OpenMP runtime)
    bundled_runtimes: dict
    #: the install name every bundled library and libmxnet carries: "@rpath/<file name>"
    install_name_prefix: str = "@rpath/"


#: libomp/libiomp5/libgomp: the OpenMP runtimes libmxnet may link (the fork's pattern).
OPENMP_RUNTIME_RE = re.compile(r"^lib(?:omp|iomp5|gomp)\b")


@dataclass(frozen=True)
class Profile:
    """One flavor's promises, as load_profiles builds it from its [profiles.<name>] table: the
    derived attributes (features and configure_flags from one toggle, runpath, setup_env,
    onnx_hard, needs_libcuda, release_arch) are never written in the data file."""
    name: str
    #: expected CMake toggle per key of CMAKE_FEATURES (True = ON)
    features: dict
    #: onnx must be a hard Requires-Dist (True) or only the ``onnx`` extra (False)
    onnx_hard: bool
    cuda_arch: str | None
    #: RUNPATH of libmxnet.so, in order (entries after these are the build tree's, tolerated)
    runpath: tuple
    #: MXNET_SETUP_ENABLE_* switches given to python/setup.py
    setup_env: dict
    #: requirements that must appear in METADATA with exactly these specifiers
    hard_requirements: tuple
    #: requirements that must NOT be hard (name -> reason)
    forbidden_hard: dict
    build_dir: str
    version_prefix: str
    #: full first-time configure flags (the fork's release set)
    configure_flags: dict
    #: pip-provided libraries: SONAME prefix -> the RUNPATH entry that must reach it
    pip_libraries: dict = field(default_factory=dict)
    needs_libcuda: bool = False
    #: the Mach-O promises of a macOS wheel (None: the wheel's libraries are ELF)
    macho: MachoPolicy | None = None
    #: groups of HOST_BASELINE ([host_baseline] of profiles.toml) a user's machine provides (what a NEEDED may be left to)
    host_baseline: tuple = ()
    #: the highest symbol versions the wheel may require (family -> version), from [symbol_floors]
    symbol_floor: dict = field(default_factory=dict)
    #: SONAME majors a NEEDED left to the host or to pip may have: prefix -> (majors, what they are);
    #: from [soname_majors]
    soname_majors: dict = field(default_factory=dict)
    #: free space a build dir of the fork needs for this profile, in GiB (measured: see profiles.toml); 0: not checked
    build_space_gib: float = 0.0
    #: free space the build's temporaries need in TMPDIR, in GiB (estimated: see profiles.toml); 0: not checked
    tmp_space_gib: float = 0.0
    #: free space the harness cache (CUDA wheels, compiler cache) needs, in GiB; 0: not checked
    cache_space_gib: float = 0.0
    #: the oldest nvcc that builds this profile ("13.0"); "" for a profile without CUDA
    nvcc_minimum: str = ""
    #: cuda_arch, parsed (NO_ARCH without one)
    release_arch: "ArchSpec" = None
    #: start-up files the wheel may install: site-packages path -> why (from startup_allowed)
    startup_allowed: dict = field(default_factory=dict)

    @property
    def binary_format(self) -> str:
        return "macho" if self.macho is not None else "elf"

    @property
    def is_cuda(self) -> bool:
        return bool(self.features.get("USE_CUDA"))

    def default_version(self, when: datetime | None = None) -> str:
        when = when or datetime.now(timezone.utc)
        return f"{self.version_prefix}.{when:%Y%m%d}"

    def version_pattern(self) -> re.Pattern:
        """The release scheme ``<prefix>.<YYYYMMDD>[.<N>]`` (e.g. 2.0.0+cu13.bw.20260614.1)."""
        return re.compile(re.escape(self.version_prefix) + r"\.(\d{8})(?:\.(\d+))?$")


def baseline_group(soname: str, profile: "Profile") -> str | None:
    """The HOST_BASELINE group of ``profile`` that provides ``soname``, or None."""
    for group in profile.host_baseline:
        if _BASELINE_RE[group].match(soname):
            return group
    return None


@dataclass(frozen=True)
class ArchSpec:
    """A parsed MXNET_CUDA_ARCH list: SASS archs as ints (80, 120) and the PTX archs, and the list
    as it was written (what CMake is given and messages quote; not compared: "9.0" == "90")."""
    sass: tuple
    ptx: tuple
    text: str = field(default="", compare=False)

    @property
    def gencode_flags(self) -> list:
        flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in self.sass]
        flags += [f"-gencode=arch=compute_{a},code=compute_{a}" for a in self.ptx]
        return flags


def parse_cuda_arch(value: str) -> ArchSpec:
    """Parse ``"8.0;8.6;9.0;12.0+PTX"`` (also accepts ``,`` or spaces as separators, and ``90``).

    ``X+PTX`` means SASS for X plus PTX for X, as MXNet's select_compute_arch.cmake reads it.
    """
    sass, ptx = [], []
    items = [i for i in re.split(r"[;,\s]+", value.strip()) if i]
    if not items:
        raise UsageError("--cuda-arch is empty: give e.g. '8.0;8.6;8.9;9.0;10.0;12.0+PTX'")
    for item in items:
        m = re.fullmatch(r"(\d+)(?:\.(\d))?(\+PTX)?", item, flags=re.IGNORECASE)
        if not m:
            raise UsageError(
                f"--cuda-arch entry {item!r} is not an arch: use forms like '9.0', '12.0+PTX'")
        major, minor, with_ptx = m.group(1), m.group(2), m.group(3)
        arch = int(major) * 10 + int(minor) if minor is not None else int(major)
        if arch < 30 or arch > 200:
            raise UsageError(f"--cuda-arch entry {item!r} is not a CUDA compute capability")
        if arch not in sass:
            sass.append(arch)
        if with_ptx and arch not in ptx:
            ptx.append(arch)
    return ArchSpec(sass=tuple(sass), ptx=tuple(ptx), text=value)


#: No CUDA arch at all: a CPU profile's.
NO_ARCH = ArchSpec(sass=(), ptx=())


#: The data file the profiles are loaded from (schema: PROFILES_SCHEMA).
PROFILES_FILE = Path(__file__).resolve().with_name("profiles.toml")


class ProfileDataError(HarnessError):
    """The profiles data file breaks its schema or names something it does not define."""


def _table(values: dict, *, required=(), additional=None) -> dict:
    """A JSON-schema object: exactly these keys (``additional``: the schema of any other key)."""
    return {"type": "object", "properties": values, "required": list(required),
            "additionalProperties": additional if additional is not None else False}


_STR = {"type": "string", "minLength": 1}
_STRS = {"type": "array", "items": _STR}
_KEYED_STRS = {"type": "object", "additionalProperties": _STR}
_CMAKE_VALUE = {"type": ["boolean", "string"]}

#: The shape of profiles.toml (JSON Schema, checked with jsonschema): every table is closed, so an
#: unknown or misspelt key is an error naming it.
PROFILES_SCHEMA = _table({
    "reasons": {"type": "object", "additionalProperties": _STR},
    "requirements": {"type": "object", "additionalProperties": _table(
        {"specs": _STRS, "setup_switch": _STR}, required=("specs",))},
    "pip_libraries": {"type": "object", "additionalProperties": _table(
        {"runpath": _STR, "distribution": _STR}, required=("runpath", "distribution"))},
    "host_baseline": {"type": "object", "additionalProperties": _STRS},
    "symbol_floors": {"type": "object", "additionalProperties": _KEYED_STRS},
    "soname_majors": {"type": "object", "additionalProperties": {
        "type": "object", "additionalProperties": _table({"majors": _STRS, "what": _STR},
                                                         required=("majors", "what"))}},
    "install": _table({"shadowing_names": _STRS, "dependency_top_level": {
        "type": "object", "additionalProperties": _STRS}}, required=("shadowing_names", "dependency_top_level")),
    "macho": {"type": "object", "additionalProperties": _table(
        {"arch": _STR, "libmxnet": _STR, "system_prefixes": _STRS, "build_host_prefixes": _STRS,
         "bundled_runtimes": _KEYED_STRS, "install_name_prefix": _STR},
        required=("arch", "libmxnet", "system_prefixes", "build_host_prefixes", "bundled_runtimes"))},
    "profiles": {"type": "object", "minProperties": 1, "additionalProperties": _table({
        "cuda_arch": _STR,
        "requirements": _STRS,
        "forbidden": _KEYED_STRS,
        "forbidden_names": _KEYED_STRS,
        "build_dir": _STR,
        "version_prefix": _STR,
        "runpath": _STRS,
        "pip_libraries": _STRS,
        "host_baseline": _STRS,
        "symbol_floor": _STR,
        "soname_majors": _STR,
        "macho": _STR,
        "build_space_gib": {"type": "number", "minimum": 0},
        "tmp_space_gib": {"type": "number", "minimum": 0},
        "cache_space_gib": {"type": "number", "minimum": 0},
        "nvcc_minimum": {"type": "string", "pattern": "^[0-9]+[.][0-9]+$"},
        "platform_tag": _STR,
        "startup_allowed": _KEYED_STRS,
        "cmake": {"type": "object", "additionalProperties": _CMAKE_VALUE,
                  "required": list(CMAKE_FEATURES),
                  "properties": {key: {"type": "boolean"} for key in CMAKE_FEATURES}},
    }, required=("requirements", "build_dir", "version_prefix", "cmake"))},
}, required=("reasons", "requirements", "pip_libraries", "host_baseline", "symbol_floors",
             "soname_majors", "install", "macho", "profiles"))


def _cmake_value(value) -> str:
    """A profile's CMake setting as configure passes it: a toggle (true/false) is ON/OFF."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return value


def _pick(path: Path, table: dict, key: str, where: str):
    """``table[key]``, or a ProfileDataError naming the missing key, where it was named, and the file."""
    try:
        return table[key]
    except KeyError:
        raise ProfileDataError(f"{path}: {where} names {key!r}, which is not defined there "
                               f"(defined: {', '.join(sorted(table)) or 'none'})") from None


def _profile(path: Path, name: str, raw: dict, data: dict, macho: dict) -> Profile:
    where = f"[profiles.{name}]"
    groups = {g: _pick(path, data["requirements"], g, f"{where} requirements") for g in raw["requirements"]}
    forbidden = {req_name: _pick(path, data["reasons"], reason, f"{where} forbidden_names")
                 for req_name, reason in raw.get("forbidden_names", {}).items()}
    for group, reason in raw.get("forbidden", {}).items():
        why = _pick(path, data["reasons"], reason, f"{where} forbidden")
        for spec in _pick(path, data["requirements"], group, f"{where} forbidden")["specs"]:
            forbidden[Requirement(spec).name] = why
    pip = {lib: _pick(path, data["pip_libraries"], lib, f"{where} pip_libraries")["runpath"]
           for lib in raw.get("pip_libraries", ())}
    for group in raw.get("host_baseline", ()):
        _pick(path, data["host_baseline"], group, f"{where} host_baseline")
    cmake = raw["cmake"]
    cuda_arch = raw.get("cuda_arch")
    if cuda_arch is not None and not cmake["USE_CUDA"]:
        raise ProfileDataError(f"{path}: {where} has a cuda_arch but USE_CUDA = false")
    flags = {key: _cmake_value(value) for key, value in cmake.items()}
    if cuda_arch is not None:
        flags["MXNET_CUDA_ARCH"] = cuda_arch
    floor = raw.get("symbol_floor")
    majors = raw.get("soname_majors")
    return Profile(
        name=name,
        features={key: cmake[key] for key in CMAKE_FEATURES},
        onnx_hard="onnx" in groups,
        cuda_arch=cuda_arch,
        runpath=tuple(dict.fromkeys([*raw.get("runpath", ()), *pip.values()])),
        setup_env={g["setup_switch"]: "1" if key in groups else "0"
                   for key, g in data["requirements"].items() if "setup_switch" in g},
        hard_requirements=tuple(spec for g in groups.values() for spec in g["specs"]),
        forbidden_hard=forbidden,
        build_dir=raw["build_dir"],
        version_prefix=raw["version_prefix"],
        configure_flags=flags,
        pip_libraries=pip,
        needs_libcuda=bool(cmake["USE_CUDA"]),
        macho=_pick(path, macho, raw["macho"], f"{where} macho") if "macho" in raw else None,
        host_baseline=tuple(raw.get("host_baseline", ())),
        symbol_floor=dict(_pick(path, data["symbol_floors"], floor, f"{where} symbol_floor")) if floor else {},
        soname_majors={prefix: (tuple(m["majors"]), m["what"]) for prefix, m in
                       _pick(path, data["soname_majors"], majors, f"{where} soname_majors").items()}
        if majors else {},
        build_space_gib=float(raw.get("build_space_gib", 0.0)),
        tmp_space_gib=float(raw.get("tmp_space_gib", 0.0)),
        cache_space_gib=float(raw.get("cache_space_gib", 0.0)),
        nvcc_minimum=raw.get("nvcc_minimum", ""),
        release_arch=parse_cuda_arch(cuda_arch) if cuda_arch is not None else NO_ARCH,
        startup_allowed={member: _pick(path, data["reasons"], reason, f"{where} startup_allowed")
                         for member, reason in raw.get("startup_allowed", {}).items()},
    )


@dataclass(frozen=True)
class ProfileData:
    """profiles.toml, loaded and checked: the profiles and the shared tables they refer to."""
    profiles: dict
    host_baseline: dict
    symbol_floors: dict
    soname_majors: dict
    macho: dict
    #: SONAME prefix -> the pip distribution that ships it
    pip_distributions: dict
    #: wheel platform-tag prefix -> the flavor a wheel so tagged is audited as
    platform_flavors: dict
    #: top-level names no wheel may install (the [install] table)
    shadowing_names: tuple = ()
    #: canonical distribution name -> the top-level names its wheels install
    dependency_top_level: dict = field(default_factory=dict)


def load_profiles(path: Path = PROFILES_FILE) -> ProfileData:
    """Read ``path``, check it against PROFILES_SCHEMA and its cross-references, and build the
    frozen profiles. A ProfileDataError names the offending key and the file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ProfileDataError(f"{path}: not valid TOML: {exc}") from None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(PROFILES_SCHEMA).iter_errors(data))
    if error is not None:
        at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        raise ProfileDataError(f"{path}: {at or 'top level'}: {error.message}")
    macho = {key: MachoPolicy(**{**value, "system_prefixes": tuple(value["system_prefixes"]),
                                 "build_host_prefixes": tuple(value["build_host_prefixes"])})
             for key, value in data["macho"].items()}
    return ProfileData(
        profiles={name: _profile(path, name, raw, data, macho) for name, raw in data["profiles"].items()},
        host_baseline={group: tuple(names) for group, names in data["host_baseline"].items()},
        symbol_floors=data["symbol_floors"],
        soname_majors={prefix: (tuple(m["majors"]), m["what"])
                       for table in data["soname_majors"].values() for prefix, m in table.items()},
        macho=macho,
        pip_distributions={lib: value["distribution"] for lib, value in data["pip_libraries"].items()},
        platform_flavors={raw["platform_tag"]: name for name, raw in data["profiles"].items()
                          if "platform_tag" in raw},
        shadowing_names=tuple(data["install"]["shadowing_names"]),
        dependency_top_level={canonicalize_name(k): tuple(v)
                              for k, v in data["install"]["dependency_top_level"].items()},
    )


_DATA = load_profiles()
PROFILES = _DATA.profiles
#: The release arch matrix (the cuda profile's cuda_arch).
RELEASE_CUDA_ARCH = PROFILES["cuda"].cuda_arch
HOST_BASELINE = _DATA.host_baseline
SYMBOL_FLOORS = _DATA.symbol_floors
SONAME_MAJORS_CUDA13 = PROFILES["cuda"].soname_majors
MACOS_POLICY = _DATA.macho["macos"]
#: Which pip distribution ships a pip-provided library (SONAME prefix -> distribution name), so the
#: closure check can demand that the wheel declares it in Requires-Dist.
PIP_LIBRARY_DISTRIBUTIONS = _DATA.pip_distributions
#: Wheel platform tag prefix -> the flavor a wheel so tagged is audited as (when --flavor is not given).
PLATFORM_FLAVORS = _DATA.platform_flavors
#: Top-level names no wheel may install, and those of known distributions (the [install] table).
SHADOWING_NAMES = _DATA.shadowing_names
DEPENDENCY_TOP_LEVEL = _DATA.dependency_top_level


def dependency_top_level(distribution: str) -> tuple:
    """The top-level names a distribution's wheels install: from [install.dependency_top_level],
    else its own name with '-' as '_' (how setuptools names a project's package by default)."""
    name = canonicalize_name(distribution)
    return DEPENDENCY_TOP_LEVEL.get(name, (name.replace("-", "_"),))
_BASELINE_RE = {group: _prefix_re(names) for group, names in HOST_BASELINE.items()}

def get_profile(flavor: str) -> Profile:
    try:
        return PROFILES[flavor]
    except KeyError:
        raise UsageError(f"unknown flavor {flavor!r}: use one of {', '.join(sorted(PROFILES))}") from None


@dataclass(frozen=True)
class Arch:
    """The CUDA archs of one run, made once from ``--cuda-arch`` (or ``native``) and any
    ``--cmake-define=MXNET_CUDA_ARCH`` override (options.make_options), and carried to preflight,
    configure, the override judgement, the gates and the report. Nothing parses arch text after it.
    """
    #: what the run asks for: --cuda-arch (``native`` resolved on this host), else the profile's
    #: release list; NO_ARCH for a CPU profile. What the gates hold the wheel to.
    requested: ArchSpec = NO_ARCH
    #: the --cmake-define=MXNET_CUDA_ARCH override (a development build), None without one
    override: ArchSpec | None = None
    #: --cuda-arch=native: the GPUs it was resolved from ("NVIDIA H200 (9.0)"); empty otherwise
    native_gpus: tuple = ()

    @property
    def built(self) -> ArchSpec:
        """The list CMake builds: the override wins over the request."""
        return self.override if self.override is not None else self.requested

    @property
    def is_release_choice(self) -> bool:
        """Neither an override nor ``native`` chose the list (those are declared development builds)."""
        return self.override is None and not self.native_gpus

    # ---- the JSON form (the --provenance-json report's ``expected.cuda_arch``) ----------------
    # Readers of a report take the Arch back with from_json and use ``.built``: nothing parses the
    # text again. ``built`` is written too (derived, checked on reading) for readers outside Python.

    def to_json(self) -> dict:
        """``{"requested": SPEC, "override": SPEC | None, "native_gpus": [...], "built": SPEC}``,
        each SPEC ``{"sass": [80, ...], "ptx": [120], "text": "8.0;...;12.0+PTX"}``."""
        return {"requested": _spec_json(self.requested),
                "override": None if self.override is None else _spec_json(self.override),
                "native_gpus": list(self.native_gpus), "built": _spec_json(self.built)}

    @classmethod
    def from_json(cls, data) -> "Arch":
        """The Arch ``to_json`` wrote; a UsageError names what is not one (ARCH_JSON_SCHEMA)."""
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(ARCH_JSON_SCHEMA).iter_errors(data))
        if error is not None:
            at = "/".join(str(p) for p in error.absolute_path) or "the top level"
            raise UsageError(f"{str(data)[:120]} is not a CUDA arch as Arch.to_json writes it (at {at}: "
                             f"{error.message}); write the report again with this harness's --provenance-json")
        arch = cls(requested=_spec_of(data["requested"]),
                   override=None if data.get("override") is None else _spec_of(data["override"]),
                   native_gpus=tuple(data.get("native_gpus", ())))
        if "built" in data and _spec_of(data["built"]) != arch.built:
            raise UsageError(f"the arch's 'built' {data['built']} is not its override or request "
                             f"({arch.built.text!r}): the document was edited; write it again")
        return arch


def _spec_json(spec: ArchSpec) -> dict:
    return {"sass": list(spec.sass), "ptx": list(spec.ptx), "text": spec.text}


def _spec_of(data: dict) -> ArchSpec:
    return ArchSpec(sass=tuple(data["sass"]), ptx=tuple(data["ptx"]), text=data.get("text", ""))


_ARCH_NUMBERS = {"type": "array", "items": {"type": "integer", "minimum": 30, "maximum": 200}}
_SPEC_JSON = _table({"sass": _ARCH_NUMBERS, "ptx": _ARCH_NUMBERS, "text": {"type": "string"}},
                    required=("sass", "ptx"))
#: The shape of Arch.to_json (JSON Schema): build_steps.gpu_reports.REPORT_SCHEMA checks reports with it.
ARCH_JSON_SCHEMA = _table({"requested": _SPEC_JSON, "override": {"anyOf": [{"type": "null"}, _SPEC_JSON]},
                           "native_gpus": {"type": "array", "items": {"type": "string"}}, "built": _SPEC_JSON},
                          required=("requested",))


def make_arch(profile: Profile, requested: str | None, cmake_defines: dict, native=None) -> Arch:
    """The run's Arch: ``requested`` (--cuda-arch text, or None for the profile's list) and the
    MXNET_CUDA_ARCH of ``cmake_defines``. ``native``: (text, GPUs) of --cuda-arch=native."""
    native_gpus = ()
    if native is not None:
        requested, native_gpus = native
    text = requested or profile.cuda_arch or ""
    # a CPU profile builds no CUDA code: its MXNET_CUDA_ARCH define reaches CMake and means nothing
    override = cmake_defines.get("MXNET_CUDA_ARCH") if profile.is_cuda else None
    if override is not None:
        try:
            override = parse_cuda_arch(override)
        except UsageError as exc:
            raise UsageError(f"--cmake-define=MXNET_CUDA_ARCH={override}: {exc}") from None
    return Arch(requested=parse_cuda_arch(text) if text else NO_ARCH, override=override,
                native_gpus=native_gpus)


def missing_release_archs(profile: Profile, arch: ArchSpec) -> list[str]:
    """The profile's release archs (SASS, each with its GPU family, and PTX) that ``arch`` leaves
    out: the GPUs a build with ``arch`` would give no kernel image."""
    release = profile.release_arch
    missing = [f"sm_{a} ({ARCH_GPU_FAMILIES.get(a, 'unknown GPUs')})" for a in release.sass if a not in arch.sass]
    return missing + [f"compute_{a} PTX" for a in release.ptx if a not in arch.ptx]


def validate_version(value: str, profile: Profile | None = None, *, strict_scheme: bool = False) -> str:
    """PEP 440-validate (and normalise) a wheel version; optionally enforce the release scheme."""
    try:
        normalised = str(Version(value.strip()))
    except InvalidVersion:
        raise UsageError(
            f"version {value!r} is not a valid PEP 440 version; use e.g. "
            f"{(profile or PROFILES['cuda']).default_version()}.1") from None
    if strict_scheme and profile is not None and not profile.version_pattern().match(normalised):
        raise UsageError(
            f"version {normalised!r} does not follow the {profile.name} release scheme "
            f"{profile.version_prefix}.<YYYYMMDD>[.<N>]")
    return normalised


#: ``--fast-compile``: the host-code optimisation of a development build. The release compiles host
#: code at -O3 (the fork appends -O3 for Release; CMake's *_FLAGS_RELEASE add "-O3 -DNDEBUG"), which
#: is what makes the C++ half of a one-arch build slow. The *_FLAGS_RELEASE come last on each
#: compile line, so these win; nvcc's -O is its host-side level (device code stays at ptxas -O3).
#: -DNDEBUG stays: asserts on would change behaviour, not just speed. The level was chosen by
#: bench/bench_fast_compile.py (docs/bench_fast_compile_2026-12-03.txt): on the heavy operator objects -O0 took
#: 0.30x and -O1 0.54x the release's time, and the H200 build's C++ half ran 2.4x faster at -O0.
FAST_COMPILE_LEVEL = "-O0"
RELEASE_HOST_OPT = "-O3"


def fast_compile_defines(level: str = FAST_COMPILE_LEVEL) -> dict:
    """The CMake definitions ``--fast-compile`` adds at configure."""
    return {f"CMAKE_{lang}_FLAGS_RELEASE": f"{level} -DNDEBUG" for lang in ("C", "CXX", "CUDA")}


#: SASS arch -> the GPUs that lose native code when the arch is missing from the fatbin.
ARCH_GPU_FAMILIES = {
    70: "Volta (V100)",
    75: "Turing (T4, RTX 20xx)",
    80: "Ampere A100/A30",
    86: "Ampere RTX 30xx/A10/A40/A6000",
    87: "Jetson Orin",
    89: "Ada Lovelace (L4, L40, RTX 40xx)",
    90: "Hopper (H100, H200, GH200)",
    100: "Blackwell datacenter (B200, GB200)",
    103: "Blackwell Ultra (B300, GB300)",
    110: "Jetson Thor",
    120: "Blackwell consumer/workstation (RTX 50xx, RTX PRO 6000)",
    121: "DGX Spark (GB10)",
}


#: CUDA 13's binary compatibility of SASS by suffix, as data (CUDA C Programming Guide, "Binary
#: Compatibility" and "Feature Availability"): which compute capabilities a cubin for ``sm_XY``,
#: ``sm_XYf`` or ``sm_XYa`` runs on, and whether it keeps the generic ``sm_XY`` promise (code that
#: runs on every GPU of that line, later ones included). ``a`` code runs on exactly one compute
#: capability and on no later GPU; ``f`` code on the members of its family.
SASS_VARIANTS = {
    "": {"runs_on": "same major, this minor or later", "keeps_generic_promise": True},
    "f": {"runs_on": "its family (SASS_FAMILIES)", "keeps_generic_promise": True},
    "a": {"runs_on": "this compute capability only", "keeps_generic_promise": False},
}
#: Family-specific targets and the compute capabilities of their family (CUDA 13.0).
SASS_FAMILIES = {100: (100, 103), 103: (103,), 110: (110,), 120: (120, 121), 121: (121,)}


def sass_runs_on(arch: int, variant: str) -> frozenset:
    """The known compute capabilities (ARCH_GPU_FAMILIES) a cubin for ``sm_<arch><variant>`` runs on."""
    if variant == "a":
        return frozenset({arch})
    if variant == "f":
        return frozenset(SASS_FAMILIES.get(arch, (arch,)))
    return frozenset(c for c in ARCH_GPU_FAMILIES if c // 10 == arch // 10 and c >= arch) | {arch}


def sass_keeps_promise(arch: int, variant: str, wanted: int) -> bool:
    """Does SASS ``sm_<arch><variant>`` keep the release promise of generic ``sm_<wanted>``?"""
    rule = SASS_VARIANTS.get(variant)
    return (rule is not None and rule["keeps_generic_promise"] and arch == wanted
            and sass_runs_on(arch, variant) >= sass_runs_on(wanted, ""))


def split_sass_name(name: str) -> tuple:
    """``"sm_100a"`` -> ``(100, "a")``."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)([a-z]?)", name)
    if not m:
        raise ValueError(f"not a CUDA arch name: {name!r}")
    return int(m.group(1)), m.group(2)


def pip_library_prefix(soname: str, profile: Profile) -> str | None:
    """The profile.pip_libraries key that ``soname`` belongs to (longest match), or None."""
    best = None
    for prefix in profile.pip_libraries:
        if re.match(re.escape(prefix) + r"(?:\.so|-|$)", soname) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def soname_major(soname: str) -> str | None:
    """The major version of a SONAME (``libcudart.so.11.0`` -> ``"11"``), None when it has none."""
    m = re.search(r"\.so\.(\d+)", soname)
    return m.group(1) if m else None


def major_problem(soname: str, profile: Profile) -> str | None:
    """Why ``soname`` is not a major the profile accepts (profile.soname_majors), or None."""
    best = None
    for prefix in profile.soname_majors:
        if re.match(re.escape(prefix) + r"(?:\.so|-|$)", soname) and (best is None or len(prefix) > len(best)):
            best = prefix
    if best is None:
        return None
    majors, what = profile.soname_majors[best]
    have = soname_major(soname)
    if have in majors:
        return None
    want = " or ".join(f"{best}.so.{m}" for m in majors)
    got = f"major {have}" if have else "no major version (a development link name)"
    return (f"{soname} has {got}, but the {profile.name} profile accepts only {want} ({what}): the loader "
            f"asks for that exact file name, which a host with {what} does not have")
