"""Issue 35: the CUDA stack is profile data. A CUDA 12 flavor is profiles.toml alone: a copy of the
shipped file plus a ``cuda12`` requirement group, CUDA stack and profile, loaded with the loader,
makes the library gates accept CUDA 12 SONAMEs and refuse CUDA 13 ones under it, and the reverse
under the shipped ``cuda`` profile. No code is edited and no run-level switch is used: the test
hands the loaded profiles to the gates' own functions. Where a reader needs an ELF it gets a real
one, made with gcc with the SONAMEs and NEEDED entries of each stack.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from build_steps.cuda_stack import cublas_probe_args
from build_steps.library_policy import major_problem, pip_library_prefix
from build_steps.profile_data import PROFILES_FILE, load_profiles
from build_steps.readers.loader import HOST, PIP, RULE_MAJOR, UNRESOLVED, resolve_closure
from harness.plugins.runtime import load_probe

#: A CUDA 12 flavor, as its author would add it to profiles.toml (majors from the CUDA 12.x
#: toolkit's SONAMEs and NVIDIA's -cu12 pip wheels, which keep cuBLAS in nvidia/cublas/lib).
CUDA12 = '''
[requirements.cuda12]
specs = ["nvidia-cudnn-cu12>=9,<10", "nvidia-nccl-cu12>=2.20,<3", "nvidia-cublas-cu12>=12.4,<13"]
setup_switch = "MXNET_SETUP_ENABLE_CUDA_DEPS"

[cuda_stacks.cuda12]
major = 12
build_wheels = ["nvidia-cublas-cu12>=12.4,<13", "nvidia-cuda-nvrtc-cu12>=12.4,<13", "nvidia-cufft-cu12>=11,<12",
                "nvidia-cusolver-cu12>=11,<12", "nvidia-curand-cu12>=10,<11", "nvidia-cudnn-cu12>=9,<10",
                "nvidia-nccl-cu12>=2.20,<3"]
wheel_lock = "cuda12_wheels.lock.toml"

[cuda_stacks.cuda12.pip_libraries]
libcudnn = { runpath = "$ORIGIN/../nvidia/cudnn/lib", distribution = "nvidia-cudnn-cu12" }
libnccl = { runpath = "$ORIGIN/../nvidia/nccl/lib", distribution = "nvidia-nccl-cu12" }
libcublas = { runpath = "$ORIGIN/../nvidia/cublas/lib", distribution = "nvidia-cublas-cu12" }
libcublasLt = { runpath = "$ORIGIN/../nvidia/cublas/lib", distribution = "nvidia-cublas-cu12" }

[cuda_stacks.cuda12.soname_majors]
libcuda = { majors = ["1"], what = "the NVIDIA driver API" }
libcudart = { majors = ["12"], what = "the CUDA 12 runtime" }
libcublas = { majors = ["12"], what = "cuBLAS 12" }
libcublasLt = { majors = ["12"], what = "cuBLASLt 12" }
libcufft = { majors = ["11"], what = "cuFFT of CUDA 12" }
libcurand = { majors = ["10"], what = "cuRAND of CUDA 12" }
libcusolver = { majors = ["11"], what = "cuSOLVER of CUDA 12" }
libcusparse = { majors = ["12"], what = "cuSPARSE of CUDA 12" }
libnvrtc = { majors = ["12"], what = "NVRTC of CUDA 12" }
libnvJitLink = { majors = ["12"], what = "nvJitLink of CUDA 12" }
libnvToolsExt = { majors = ["1"], what = "NVTX 1" }
libcudnn = { majors = ["9"], what = "cuDNN 9" }
libnccl = { majors = ["2"], what = "NCCL 2" }

[cuda_stacks.cuda12.cublas]
driver_floor = 525
pin_driver = 525

[profiles.cuda12]
cuda_arch = "7.0;7.5;8.0;8.6;8.9;9.0+PTX"
cuda_stack = "cuda12"
requirements = ["base", "cuda12", "opencv", "onnx"]
build_dir = "build-cu12"
version_prefix = "2.0.0+cu12.bw"
runpath = ["$ORIGIN/lib"]
pip_libraries = ["libscipy_openblas"]
host_baseline = ["glibc", "gcc-runtime", "nvidia-driver", "cuda-toolkit"]
symbol_floor = "ubuntu-24.04"
nvcc_minimum = "12.4"

[profiles.cuda12.cmake]
CMAKE_BUILD_TYPE = "Release"
USE_CUDA = true
USE_CUDNN = true
USE_NCCL = true
USE_ONEDNN = true
USE_OPENMP = true
USE_F16C = true
USE_OPENCV = true
USE_LAPACK = true
USE_BLAS = "open"
USE_DIST_KVSTORE = false
BUILD_CPP_EXAMPLES = false
'''

#: CUDA major -> (its profile, the site-packages dir of pip's cuBLAS, the distribution that ships it)
STACKS = {
    12: ("cuda12", "nvidia/cublas/lib", "nvidia-cublas-cu12"),
    13: ("cuda", "nvidia/cu13/lib", "nvidia-cublas"),
}


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("data") / "profiles.toml"
    path.write_text(PROFILES_FILE.read_text() + CUDA12)
    return load_profiles(path).profiles


def _gcc(out: Path, *args) -> Path:
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), *map(str, args)], check=True)
    return out


def _libmxnet(root: Path, major: int) -> Path:
    """A wheel tree whose libmxnet.so NEEDs the CUDA ``major`` runtime and cuBLAS (real ELF files:
    the stand-ins it links against lie outside the tree, as the host's and pip's do) and whose
    RUNPATH reaches that stack's pip cuBLAS dir."""
    src = root / "f.c"
    src.write_text("int f(void) { return 0; }\n")
    host = root / "host"
    host.mkdir()
    deps = [_gcc(host / f"{lib}.so.{major}", src, f"-Wl,-soname,{lib}.so.{major}") for lib in ("libcudart", "libcublas")]
    pkg = root / "wheel" / "mxnet"
    pkg.mkdir(parents=True)
    _gcc(pkg / "libmxnet.so", src, "-Wl,--no-as-needed", *deps,
         f"-Wl,-rpath,$ORIGIN/lib:$ORIGIN/../{STACKS[major][1]}")
    return root / "wheel"


def _verdicts(wheel: Path, profile) -> dict:
    """NEEDED -> Resolution of libmxnet.so, judged under ``profile`` (its requirements declared)."""
    declared = {Requirement(spec).name for spec in profile.hard_requirements}
    closure = resolve_closure(wheel, "mxnet/libmxnet.so", [], profile, declared)
    return {r.needed: r for r in closure.resolutions}


def test_the_cuda12_profile_is_data_the_loader_takes(profiles):
    cu12, cu13, cpu = profiles["cuda12"], profiles["cuda"], profiles["cpu"]
    assert cu12.cuda.major == 12 and cu13.cuda.major == 13
    assert cu12.runpath == ("$ORIGIN/lib", "$ORIGIN/../scipy_openblas32/lib", "$ORIGIN/../nvidia/cudnn/lib",
                            "$ORIGIN/../nvidia/nccl/lib", "$ORIGIN/../nvidia/cublas/lib")
    assert cu12.pip_distributions["libcublas"] == "nvidia-cublas-cu12"
    assert cu13.pip_distributions["libcublas"] == "nvidia-cublas"
    # two flavors' requirement groups share one setup.py switch: on for each CUDA flavor, off for cpu
    assert cu12.setup_env["MXNET_SETUP_ENABLE_CUDA_DEPS"] == cu13.setup_env["MXNET_SETUP_ENABLE_CUDA_DEPS"] == "1"
    assert cpu.setup_env["MXNET_SETUP_ENABLE_CUDA_DEPS"] == "0"
    assert cu12.cuda.wheel_lock.name == "cuda12_wheels.lock.toml"
    assert cu12.default_version().startswith("2.0.0+cu12.bw.")


@pytest.mark.parametrize("soname", ["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libcufft.so.11",
                                    "libcusolver.so.11", "libnvrtc.so.12", "libcudnn.so.9", "libnccl.so.2"])
def test_cuda12_sonames_pass_under_cuda12(profiles, soname):
    assert major_problem(soname, profiles["cuda12"]) is None


@pytest.mark.parametrize("cu13, cu12", [("libcudart.so.13", "libcudart.so.12"), ("libcublas.so.13", "libcublas.so.12"),
                                        ("libcufft.so.12", "libcufft.so.11"), ("libnvrtc.so.13", "libnvrtc.so.12")])
def test_each_profile_refuses_the_other_stacks_sonames(profiles, cu13, cu12):
    problem = major_problem(cu13, profiles["cuda12"])
    assert problem and f"accepts only {cu12}" in problem and "the cuda12 profile" in problem
    problem = major_problem(cu12, profiles["cuda"])
    assert problem and f"accepts only {cu13}" in problem and "the cuda profile" in problem
    assert major_problem(cu13, profiles["cuda"]) is None and major_problem(cu12, profiles["cuda12"]) is None


def test_pip_library_of_each_stack(profiles):
    assert pip_library_prefix("libcublasLt.so.12", profiles["cuda12"]) == "libcublasLt"
    assert profiles["cuda12"].pip_libraries["libcublas"] == "$ORIGIN/../nvidia/cublas/lib"
    assert profiles["cuda"].pip_libraries["libcublas"] == "$ORIGIN/../nvidia/cu13/lib"


@pytest.mark.parametrize("major", sorted(STACKS))
def test_loader_takes_a_libmxnet_of_its_own_stack_and_refuses_the_other(profiles, tmp_path, major):
    wheel = _libmxnet(tmp_path, major)
    own, other = profiles[STACKS[major][0]], profiles[STACKS[25 - major][0]]
    got = _verdicts(wheel, own)
    assert got[f"libcudart.so.{major}"].verdict == HOST, got[f"libcudart.so.{major}"]
    cublas = got[f"libcublas.so.{major}"]
    assert cublas.verdict == PIP and cublas.found == f"$ORIGIN/../{STACKS[major][1]}", cublas
    assert STACKS[major][2] in cublas.detail
    refused = _verdicts(wheel, other)
    for lib in ("libcudart", "libcublas"):
        r = refused[f"{lib}.so.{major}"]
        assert r.verdict == UNRESOLVED and r.rule == RULE_MAJOR, r
        assert f"{lib}.so.{25 - major}" in r.detail and f"the {other.name} profile" in r.detail


def test_the_cublas_gate_is_told_each_stack(profiles):
    probe = load_probe("cublas_probe")
    cu12 = probe.parse_stack(cublas_probe_args(profiles["cuda12"]))
    assert cu12["cublas_soname"] == "libcublas.so.12" and cu12["cudart_soname"] == "libcudart.so.12"
    assert cu12["pip_dirs"] == ["nvidia/cublas/lib"] and cu12["cublas_requirement"] == "nvidia-cublas-cu12>=12.4,<13"
    assert probe.verdict((12, 4, 5), "12.4.5.8", 535, cu12)["status"] == "ok"
    old = probe.verdict((12, 4, 5), None, 520, cu12)
    assert [t["id"] for t in old["traps"]] == ["driver-too-old"]
    assert "older than R525, the minimum for any CUDA 12 library" in old["traps"][0]["message"]
    cu13 = probe.parse_stack(cublas_probe_args(profiles["cuda"]))
    assert cu13["cublas_soname"] == "libcublas.so.13" and cu13["pip_dirs"][0] == "nvidia/cu13/lib"
    # the CUDA 13 traps are the cuda13 stack's, never the cuda12 one's
    assert probe.verdict((13, 1, 1), "13.1.1.3", 535, cu13)["status"] == "trap"
    assert probe.verdict((12, 1, 1), None, 535, cu12)["status"] == "ok"
