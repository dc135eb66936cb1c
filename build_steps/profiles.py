"""Release profiles: everything a flavor promises, as data, in one place.

The build steps and the gates both read these, so a build cannot be configured one way and
checked another. Values follow the fork's release recipe and its build script; where the script was wrong the fix
is noted (the gaps are listed in docs/background.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from packaging.version import InvalidVersion, Version

from .errors import UsageError

#: The release arch matrix: Ampere, Ada, Hopper, both Blackwell families, PTX only on the top arch.
RELEASE_CUDA_ARCH = "8.0;8.6;8.9;9.0;10.0;12.0+PTX"

#: Free space a build of the fork needs where its build dir is, in GiB (Profile.build_space_gib;
#: preflight refuses less). Measured 2026-12-03 on the fork at 3f13890 (issue 21): configured with
#: the cuda profile, its ``mxnet`` target is 1317 Ninja steps making 243 .cu, 619 .cc and 535
#: oneDNN .cpp objects. A random sample of them (seed 21) was compiled for real: 3 six-arch .cu
#: objects of 1.3, 1.8 and 4.4 MB (mean 2.5 MB), 8 .cc of 0.06-7.5 MB (mean 1.14 MB), 8 .cpp of
#: 1 KB-832 KB (mean 0.23 MB). Extrapolated: 0.61 GB of .cu + 0.71 GB of .cc + 0.12 GB of .cpp
#: (and again in libdnnl.a) + libmxnet.so, ~1 GB (the fork's own figure, and about the sum of the
#: objects it links) = 2.6 GB; staging and packaging add a copy of the library with its bundled
#: libraries and the ~454 MB wheel, ~1.5 GB: 4.1 GB. With 1.5x for the sample's spread (one .cc
#: in 8 was 7.5 MB): 6 GiB. The cpu profile has no .cu objects and a smaller library: 4 GiB,
#: estimated from the same figures (not compiled separately).
BUILD_SPACE_GIB = {"cuda": 6.0, "cpu": 4.0}

#: CMake feature toggles the gates compare (cache key -> runtime Features name).
CMAKE_FEATURES = {
    "USE_CUDA": "CUDA",
    "USE_CUDNN": "CUDNN",
    "USE_NCCL": "NCCL",
    "USE_ONEDNN": "ONEDNN",
    "USE_OPENCV": "OPENCV",
    "USE_OPENMP": "OPENMP",
}

BASE_REQUIREMENTS = (
    "numpy>=1.17,<2",
    "requests>=2.20.0,<3",
    "graphviz<0.9.0,>=0.8.1",
    "packaging>=20.0",
    "scipy-openblas32>=0.3.33,<0.4",
)
#: cuBLAS is pinned by cuBLAS version (13.5 fixes the syrk crash of 13.1.1.3; needs an R590+ driver).
CUDA_REQUIREMENTS = (
    "nvidia-cudnn-cu13>=9.22,<10",
    "nvidia-nccl-cu13>=2.28,<3",
    "nvidia-cublas>=13.5,<14",
)
OPENCV_REQUIREMENTS = ("opencv-python>=4,<5",)
ONNX_REQUIREMENT = "onnx>=1.7.0,<1.22"
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
_HOST_RE = re.compile(
    r"^(?:" + "|".join(re.escape(n) for n in sorted(HOST_LIBRARIES, key=len, reverse=True))
    + r")(?:\.so|-|$)"
)

#: Libraries that must never be inside a wheel, whatever the flavor, and why.
NEVER_BUNDLE = {
    "libcuda.so": "libcuda.so.1 is the NVIDIA driver's; a bundled copy breaks every other driver version",
    "libquadmath.so": "libquadmath is GPL and must not be redistributed in the wheel",
}


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

MACOS_POLICY = MachoPolicy(
    arch="arm64",
    libmxnet="mxnet/libmxnet.dylib",
    system_prefixes=("/usr/lib/", "/System/"),
    build_host_prefixes=("/usr/local/", "/opt/homebrew/", "/opt/local/", "/Users/", "/private/",
                         "/tmp/", "/var/folders/"),
    bundled_runtimes={"libomp": "macOS has no system OpenMP runtime: libomp.dylib must ship in "
                                "mxnet/lib/ (a host copy from Homebrew is another build, if any)"},
)


@dataclass(frozen=True)
class Profile:
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
    #: groups of HOST_BASELINE a user's machine provides (what a NEEDED may be left to)
    host_baseline: tuple = ()
    #: the highest symbol versions the wheel may require (family -> version), see SYMBOL_FLOORS
    symbol_floor: dict = field(default_factory=dict)
    #: SONAME majors a NEEDED left to the host or to pip may have: prefix -> (majors, what they are);
    #: see SONAME_MAJORS_CUDA13
    soname_majors: dict = field(default_factory=dict)
    #: free space a build dir of the fork needs for this profile, in GiB (BUILD_SPACE_GIB); 0: not checked
    build_space_gib: float = 0.0

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


#: What a user's Linux machine provides, by group, in the spirit of auditwheel's policy files: a
#: NEEDED of any ELF in the wheel that is neither bundled nor pip-provided must be one of these
#: (whole-name prefixes, matched like HOST_LIBRARIES). A profile lists the groups it relies on.
HOST_BASELINE = {
    # glibc itself (every Linux host)
    "glibc": ("ld-linux", "ld-linux-x86-64", "libc", "libm", "libdl", "libpthread", "librt",
              "libutil", "libnsl", "libresolv", "libanl", "libmvec"),
    # the GCC runtimes. libgomp: libmxnet's own OpenMP runtime, left to the host on purpose (two
    # copies in one process fight; the fork's clean-room CI installs libgomp1). libquadmath:
    # libgfortran's dependency, never bundled (NEVER_BUNDLE), so it is the host's by policy.
    "gcc-runtime": ("libstdc++", "libgcc_s", "libatomic", "libgomp", "libquadmath"),
    # the NVIDIA driver: installed with the GPU, never bundled
    "nvidia-driver": ("libcuda", "libnvidia"),
    # the CUDA toolkit libraries the recipe takes from the system toolkit at /usr/local/cuda
    # (only cuDNN, NCCL and cuBLAS come from pip)
    "cuda-toolkit": ("libcudart", "libcufft", "libcusolver", "libcusparse", "libcurand",
                     "libnvrtc", "libnvJitLink", "libnvToolsExt"),
}

#: Symbol-version ceilings of a reference host: the newest GLIBC_/GLIBCXX_/CXXABI_ version its
#: glibc and libstdc++ define. Ubuntu 24.04 (the recipe's reference host): glibc 2.39 and the
#: libstdc++ of GCC 14 (GLIBCXX_3.4.33, CXXABI_1.3.15).
SYMBOL_FLOORS = {
    "ubuntu-24.04": {"GLIBC": "2.39", "GLIBCXX": "3.4.33", "CXXABI": "1.3.15"},
}


def _prefix_re(names) -> re.Pattern:
    return re.compile(r"^(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                      + r")(?:\.so|-|$)")


_BASELINE_RE = {group: _prefix_re(names) for group, names in HOST_BASELINE.items()}


def baseline_group(soname: str, profile: "Profile") -> str | None:
    """The HOST_BASELINE group of ``profile`` that provides ``soname``, or None."""
    for group in profile.host_baseline:
        if _BASELINE_RE[group].match(soname):
            return group
    return None


#: The SONAME major versions of the CUDA 13 stack (libcudart.so.13, libcudnn.so.9 ...). A prefix
#: alone would take libcudart.so.11.0 (the real mxnet-cu112 wheel's) as "the CUDA toolkit": the
#: loader asks for that exact file name, which a CUDA 13 host or the cu13 pip wheels do not have.
#: Majors from the CUDA 13.0 toolkit's and NVIDIA's pip wheels' SONAMEs (the libraries keep their
#: own numbering: cuFFT 12, cuRAND 10).
SONAME_MAJORS_CUDA13 = {
    "libcuda": (("1",), "the NVIDIA driver API"),
    "libcudart": (("13",), "the CUDA 13 runtime"),
    "libcublas": (("13",), "cuBLAS 13"),
    "libcublasLt": (("13",), "cuBLASLt 13"),
    "libcufft": (("12",), "cuFFT of CUDA 13"),
    "libcurand": (("10",), "cuRAND of CUDA 13"),
    "libcusolver": (("12",), "cuSOLVER of CUDA 13"),
    "libcusparse": (("12",), "cuSPARSE of CUDA 13"),
    "libnvrtc": (("13",), "NVRTC of CUDA 13"),
    "libnvJitLink": (("13",), "nvJitLink of CUDA 13"),
    "libnvToolsExt": (("1",), "NVTX 1"),
    "libcudnn": (("9",), "cuDNN 9"),
    "libnccl": (("2",), "NCCL 2"),
}

_CUDA_PIP = {
    "libcudnn": "$ORIGIN/../nvidia/cudnn/lib",
    "libnccl": "$ORIGIN/../nvidia/nccl/lib",
    "libcublas": "$ORIGIN/../nvidia/cu13/lib",
    "libcublasLt": "$ORIGIN/../nvidia/cu13/lib",
    "libscipy_openblas": "$ORIGIN/../scipy_openblas32/lib",
}

PROFILES = {
    "cuda": Profile(
        name="cuda",
        features={"USE_CUDA": True, "USE_CUDNN": True, "USE_NCCL": True,
                  "USE_ONEDNN": True, "USE_OPENCV": True, "USE_OPENMP": True},
        onnx_hard=True,
        cuda_arch=RELEASE_CUDA_ARCH,
        runpath=("$ORIGIN/lib", "$ORIGIN/../scipy_openblas32/lib", "$ORIGIN/../nvidia/cudnn/lib",
                 "$ORIGIN/../nvidia/nccl/lib", "$ORIGIN/../nvidia/cu13/lib"),
        setup_env={"MXNET_SETUP_ENABLE_CUDA_DEPS": "1", "MXNET_SETUP_ENABLE_OPENCV_DEPS": "1",
                   "MXNET_SETUP_ENABLE_ONNX_DEPS": "1"},
        hard_requirements=BASE_REQUIREMENTS + CUDA_REQUIREMENTS + OPENCV_REQUIREMENTS
        + (ONNX_REQUIREMENT,),
        forbidden_hard={},
        build_dir="build",
        version_prefix="2.0.0+cu13.bw",
        configure_flags={
            "CMAKE_BUILD_TYPE": "Release", "USE_CUDA": "ON", "USE_CUDNN": "ON", "USE_NCCL": "ON",
            "USE_ONEDNN": "ON", "USE_OPENMP": "ON", "USE_F16C": "ON", "USE_OPENCV": "ON",
            "USE_LAPACK": "ON", "USE_BLAS": "open", "USE_DIST_KVSTORE": "OFF",
            "BUILD_CPP_EXAMPLES": "OFF", "MXNET_CUDA_ARCH": RELEASE_CUDA_ARCH,
        },
        pip_libraries=dict(_CUDA_PIP),
        needs_libcuda=True,
        host_baseline=("glibc", "gcc-runtime", "nvidia-driver", "cuda-toolkit"),
        symbol_floor=dict(SYMBOL_FLOORS["ubuntu-24.04"]),
        soname_majors=dict(SONAME_MAJORS_CUDA13),
        build_space_gib=BUILD_SPACE_GIB["cuda"],
    ),
    "cpu": Profile(
        name="cpu",
        features={"USE_CUDA": False, "USE_CUDNN": False, "USE_NCCL": False,
                  "USE_ONEDNN": True, "USE_OPENCV": True, "USE_OPENMP": True},
        onnx_hard=False,
        cuda_arch=None,
        runpath=("$ORIGIN/lib", "$ORIGIN/../scipy_openblas32/lib"),
        setup_env={"MXNET_SETUP_ENABLE_CUDA_DEPS": "0", "MXNET_SETUP_ENABLE_OPENCV_DEPS": "1",
                   "MXNET_SETUP_ENABLE_ONNX_DEPS": "0"},
        hard_requirements=BASE_REQUIREMENTS + OPENCV_REQUIREMENTS,
        forbidden_hard={"onnx": "the CPU wheel keeps onnx as the optional [onnx] extra",
                        "nvidia-cudnn-cu13": "a CPU wheel must not pull CUDA runtime wheels",
                        "nvidia-nccl-cu13": "a CPU wheel must not pull CUDA runtime wheels",
                        "nvidia-cublas": "a CPU wheel must not pull CUDA runtime wheels"},
        build_dir="build-cpu",
        version_prefix="2.0.0+cpu.linux",
        configure_flags={
            "CMAKE_BUILD_TYPE": "Release", "USE_CUDA": "OFF", "USE_CUDNN": "OFF", "USE_NCCL": "OFF",
            "USE_ONEDNN": "ON", "USE_OPENMP": "ON", "USE_F16C": "ON", "USE_OPENCV": "ON",
            "USE_LAPACK": "ON", "USE_BLAS": "open", "USE_DIST_KVSTORE": "OFF",
            "BUILD_CPP_EXAMPLES": "OFF",
        },
        pip_libraries={"libscipy_openblas": "$ORIGIN/../scipy_openblas32/lib"},
        needs_libcuda=False,
        host_baseline=("glibc", "gcc-runtime"),
        symbol_floor=dict(SYMBOL_FLOORS["ubuntu-24.04"]),
        build_space_gib=BUILD_SPACE_GIB["cpu"],
    ),
    # Apple-silicon CPU wheel, built on a Mac by the fork's build script (Accelerate BLAS, hermetic
    # LLVM libomp, OpenCV from Homebrew/MacPorts bundled); audited here from its Mach-O files.
    "macos": Profile(
        name="macos",
        features={"USE_CUDA": False, "USE_CUDNN": False, "USE_NCCL": False,
                  "USE_ONEDNN": True, "USE_OPENCV": True, "USE_OPENMP": True},
        onnx_hard=True,
        cuda_arch=None,
        runpath=(),
        setup_env={"MXNET_SETUP_ENABLE_CUDA_DEPS": "0", "MXNET_SETUP_ENABLE_OPENCV_DEPS": "1",
                   "MXNET_SETUP_ENABLE_ONNX_DEPS": "1"},
        hard_requirements=BASE_REQUIREMENTS + OPENCV_REQUIREMENTS + (ONNX_REQUIREMENT,),
        forbidden_hard={"nvidia-cudnn-cu13": "a CPU wheel must not pull CUDA runtime wheels",
                        "nvidia-nccl-cu13": "a CPU wheel must not pull CUDA runtime wheels",
                        "nvidia-cublas": "a CPU wheel must not pull CUDA runtime wheels"},
        build_dir="build",
        version_prefix="2.0.0+cpu.macos",
        configure_flags={
            "CMAKE_BUILD_TYPE": "Release", "CMAKE_OSX_ARCHITECTURES": "arm64", "USE_CUDA": "OFF",
            "USE_CUDNN": "OFF", "USE_NCCL": "OFF", "USE_ONEDNN": "ON", "USE_OPENMP": "ON",
            "USE_OPENCV": "ON", "USE_BLAS": "apple", "USE_LAPACK": "ON", "USE_DIST_KVSTORE": "OFF",
            "USE_SSE": "OFF", "USE_F16C": "OFF", "BUILD_CPP_EXAMPLES": "OFF",
        },
        macho=MACOS_POLICY,
    ),
}

#: Wheel platform tag prefix -> the flavor a wheel so tagged is audited as (when --flavor is not given).
PLATFORM_FLAVORS = {"macosx_": "macos"}


def get_profile(flavor: str) -> Profile:
    try:
        return PROFILES[flavor]
    except KeyError:
        raise UsageError(f"unknown flavor {flavor!r}: use one of {', '.join(sorted(PROFILES))}") from None


@dataclass(frozen=True)
class ArchSpec:
    """A parsed MXNET_CUDA_ARCH list: SASS archs as ints (80, 120) and the PTX archs."""
    sass: tuple
    ptx: tuple

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
    return ArchSpec(sass=tuple(sass), ptx=tuple(ptx))


def missing_release_archs(profile: Profile, arch: ArchSpec) -> list[str]:
    """The profile's release archs (SASS, each with its GPU family, and PTX) that ``arch`` leaves
    out: the GPUs a build with ``arch`` would give no kernel image."""
    release = parse_cuda_arch(profile.cuda_arch)
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


#: Which pip distribution ships a pip-provided library (SONAME prefix -> distribution name), so the
#: closure check can demand that the wheel declares it in Requires-Dist.
PIP_LIBRARY_DISTRIBUTIONS = {
    "libcudnn": "nvidia-cudnn-cu13",
    "libnccl": "nvidia-nccl-cu13",
    "libcublas": "nvidia-cublas",
    "libcublasLt": "nvidia-cublas",
    "libscipy_openblas": "scipy-openblas32",
}

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
