"""The development build for the GPU in front of you: ``--cuda-arch=native`` and ``--fast-compile``.

Both build and install like a release but are declared development options: listed in the
summary, failed by test_no_development_override naming each, never publishable. ``native`` on a
host without a GPU (every CI machine) is a usage error before anything is configured. The build
time record (``.ninja_log``'s slowest commands, the CPU time) is read from real Ninja builds.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from build_steps import compile as compile_step
from build_steps import configure as configure_step, cuda_root
from build_steps.errors import UsageError
from build_steps.host_gpus import HostGpu, host_gpus, native_arch_list
from build_steps.options import make_options
from build_steps.overrides import development_option_promises
from build_steps.arch import Arch, make_arch, parse_cuda_arch
from build_steps.fast_compile import fast_compile_defines
from build_steps.readers import ninja_log
from selftest.conftest import HARNESS_CACHE, HARNESS_ROOT, run_gates
from selftest.fixtures_build import copy_sample_tree, default_build
from selftest.fixtures_publish import make_release_repo

NO_GPU = pytest.mark.skipif(bool(host_gpus()), reason="this host has a GPU: native resolves instead of refusing")


def _out(result) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


# --- --cuda-arch=native ---------------------------------------------------------------------------

@NO_GPU
def test_native_arch_without_a_gpu_is_a_usage_error_before_configure(gates, sample_tree):
    src = sample_tree()
    result = gates("-m", "release", f"--mxnet-src={src}", "--cuda-arch=native")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "--cuda-arch=native: this host has no NVIDIA GPU" in out, out[-3000:]
    assert "--cmake-define=MXNET_CUDA_ARCH=" in out, "the message names the way to a one-arch build"
    assert not any(src.glob("build*/CMakeCache.txt")) and not any(src.parent.glob("src-build*/CMakeCache.txt")), "nothing may be configured"


def _raw(**kw) -> dict:
    return {"flavor": None, "cuda_arch": None, "cmake_defines": None, **kw}


def test_native_arch_refused_where_it_means_nothing(tmp_path):
    wheel = tmp_path / "mxnet-2.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    with pytest.raises(UsageError, match="with --wheel nothing is built"):
        make_options(_raw(wheel=str(wheel), cuda_arch="native"))
    with pytest.raises(UsageError, match="the cpu flavor builds no CUDA code"):
        make_options(_raw(flavor="cpu", cuda_arch="native"))
    with pytest.raises(UsageError, match="both choose the archs"):
        make_options(_raw(cuda_arch="native", cmake_defines=["MXNET_CUDA_ARCH=9.0"]))
    with pytest.raises(UsageError, match="with --wheel nothing is compiled"):
        make_options(_raw(wheel=str(wheel), fast_compile=True))
    with pytest.raises(UsageError, match="--fast-compile sets CMAKE_CXX_FLAGS_RELEASE itself"):
        make_options(_raw(fast_compile=True, cmake_defines=["CMAKE_CXX_FLAGS_RELEASE=-O2"]))


def test_native_arch_list_is_each_capability_once_sass_only():
    gpus = [HostGpu("NVIDIA H200", "9.0", "nvidia-smi"), HostGpu("NVIDIA H200", "9.0", "nvidia-smi"),
            HostGpu("NVIDIA RTX PRO 6000", "12.0", "nvidia-smi"), HostGpu("NVIDIA A10", "8.6", "driver")]
    text = native_arch_list(gpus)
    assert text == "8.6;9.0;12.0"
    assert parse_cuda_arch(text).ptx == (), "a native build carries SASS for the GPUs here, no PTX"


def test_override_gate_names_both_development_options():
    options = make_options(_raw(fast_compile=True))
    assert options.build_defines == fast_compile_defines()
    native = dataclasses.replace(options, cuda_arch=Arch(requested=parse_cuda_arch("9.0"),
                                                         native_gpus=("NVIDIA H200 (9.0)",)))
    reasons = development_option_promises(native)
    assert len(reasons) == 2, reasons
    assert reasons[0].startswith("--cuda-arch=native built 9.0 only (for NVIDIA H200 (9.0))")
    assert "sm_100 (Blackwell datacenter" in reasons[0] and "compute_120 PTX" in reasons[0]
    assert reasons[1].startswith("--fast-compile built host code at -O0")
    assert development_option_promises(make_options(_raw())) == [], "a release run has none"


# --- --fast-compile-device: device code at nvcc's -Ofc, opted into on top of --fast-compile ------------

HAS_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()
#: --fast-compile's definitions as the GPU holds built with them: their bytes are the reference a
#: later hold compares with, so --fast-compile alone must keep giving exactly these
FAST_COMPILE_TODAY = {"CMAKE_C_FLAGS_RELEASE": "-O0 -DNDEBUG", "CMAKE_CXX_FLAGS_RELEASE": "-O0 -DNDEBUG",
                      "CMAKE_CUDA_FLAGS_RELEASE": "-O0 -DNDEBUG"}


def test_fast_compile_device_refused_where_it_means_nothing(tmp_path):
    wheel = tmp_path / "mxnet-2.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    with pytest.raises(UsageError, match="add --fast-compile"):
        make_options(_raw(fast_compile_device="max"))
    with pytest.raises(UsageError, match="the cpu flavor builds no CUDA code"):
        make_options(_raw(flavor="cpu", fast_compile=True, fast_compile_device="max"))
    with pytest.raises(UsageError, match="with --wheel nothing is built"):
        make_options(_raw(wheel=str(wheel), fast_compile_device="max"))
    with pytest.raises(UsageError, match="one of max, mid, min"):
        make_options(_raw(fast_compile=True, fast_compile_device="O0"))
    with pytest.raises(UsageError, match="--fast-compile sets CMAKE_CUDA_FLAGS_RELEASE itself"):
        make_options(_raw(fast_compile=True, fast_compile_device="max",
                          cmake_defines=["CMAKE_CUDA_FLAGS_RELEASE=-O0"]))


def test_fast_compile_device_is_a_development_option_and_fast_compile_alone_is_unchanged():
    plain = make_options(_raw(fast_compile=True))
    assert plain.build_defines == FAST_COMPILE_TODAY, "--fast-compile alone must build today's bytes"
    assert plain.development_options == ("--fast-compile",)
    device = make_options(_raw(fast_compile=True, fast_compile_device="mid"))
    assert device.build_defines == {**FAST_COMPILE_TODAY, "CMAKE_CUDA_FLAGS_RELEASE": "-O0 -DNDEBUG -Ofc=mid"}
    assert device.development_options == ("--fast-compile", "--fast-compile-device=mid")
    reasons = development_option_promises(device)
    assert reasons[0].startswith("--fast-compile built host code at -O0")
    assert reasons[1].startswith("--fast-compile-device=mid (a development option): compiles device code at "
                                 "nvcc's -Ofc"), reasons


def _cu_line(src: Path, build: Path, options, root) -> str:
    """The sample's kernel.cu compile line as CMake wrote it for ``options`` (sm_90 only), the build
    dir's path replaced so that two build dirs' lines compare."""
    configure_step.configure(src, build, options.profile, make_arch(options.profile, "9.0", {}),
                             build / "harness-logs", extra_defs=root.cmake_args, env=root.env,
                             overrides=options.build_defines)
    lines = subprocess.run(["ninja", "-C", str(build), "-t", "commands", "CMakeFiles/mxnet.dir/src/kernel.cu.o"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    return lines[-1].replace(str(build), "BUILD")


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc (CUDA 13) is needed to configure and compile the sample's .cu")
def test_fast_compile_device_reaches_the_nvcc_line_of_a_cu_object_and_only_that(sample_tree, tmp_path):
    src = sample_tree()
    root = cuda_root.assemble_cuda_root(cache=HARNESS_CACHE, python=sys.executable)
    today = _cu_line(src, tmp_path / "b-fast", make_options(_raw(fast_compile=True)), root)
    device = _cu_line(src, tmp_path / "b-device", make_options(_raw(fast_compile=True, fast_compile_device="max")),
                      root)
    assert " -O0 -DNDEBUG " in today and "-Ofc" not in today, today
    # the one difference: nvcc's device level right after --fast-compile's host level
    assert device == today.replace(" -O0 -DNDEBUG ", " -O0 -DNDEBUG -Ofc=max ", 1), (today, device)
    # C++ objects compile exactly as with --fast-compile
    cxx = {b: [ln.replace(str(tmp_path / b), "BUILD") for ln in subprocess.run(
        ["ninja", "-C", str(tmp_path / b), "-t", "commands", "mxnet"], capture_output=True, text=True,
        check=True).stdout.splitlines() if ln.split()[-1].endswith(".cc")] for b in ("b-fast", "b-device")}
    assert cxx["b-fast"] and cxx["b-fast"] == cxx["b-device"]
    # and nvcc 13 takes it: the object compiles
    built = subprocess.run(["ninja", "-C", str(tmp_path / "b-device"), "CMakeFiles/mxnet.dir/src/kernel.cu.o"],
                           capture_output=True, text=True, env={**os.environ, **root.env})
    assert built.returncode == 0, built.stdout[-3000:]
    assert (tmp_path / "b-device" / "CMakeFiles/mxnet.dir/src/kernel.cu.o").stat().st_size > 0


@pytest.mark.slow
def test_fast_compile_builds_at_O0_fails_the_override_gate_and_cannot_publish(pytester, tmp_path, gh_standin):
    repo = make_release_repo(tmp_path / "e2e", source=copy_sample_tree(tmp_path / "sample"))
    result = run_gates(pytester, HARNESS_ROOT / "tests",
                       "-m", "(release and (build or provenance)) or publish", "-k", "not install",
                       f"--mxnet-src={repo.repo}", "--flavor=cpu", "--fast-compile", "--jobs=2",
                       "--publish", "--dry-run", timeout=1500)
    out = _out(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-6000:]
    assert "development options: --fast-compile" in out, out[-6000:]
    assert "FAILED   tests/test_build_overrides.py::test_no_development_override" in out, out[-6000:]
    assert "--fast-compile built host code at -O0 (the release: -O3)" in out, out[-6000:]
    assert "publish refused" in out and repo.local_tags() == [] and gh_standin.calls() == []
    assert not list((repo.repo / "dist").glob("*.whl")), "a development build must not reach dist/"
    # the flags reached the compile lines, last (so they win over the fork's own -O3)
    build = default_build(repo.repo, 'cpu')
    lines = subprocess.run(["ninja", "-C", str(build), "-t", "commands", "mxnet"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    cxx = [line for line in lines if " -c " in line and line.split()[-1].endswith((".cc", ".cpp"))]
    assert cxx and all(line.split(" -o ")[0].rstrip().endswith("-O0 -DNDEBUG") or
                       [w for w in line.split() if w.startswith("-O")][-1] == "-O0" for line in cxx), cxx[:2]


# --- where the build's time went --------------------------------------------------------------------

def _tiny_cmake_tree(root: Path, n: int = 4) -> Path:
    """A real CMake/Ninja project: a shared library of ``n`` C++ sources, one of them heavy."""
    root.mkdir(parents=True)
    heavy = "\n".join(f"template<int N> struct F{i} {{ static const long v = F{i}<N-1>::v + N; }};"
                      f"template<> struct F{i}<0> {{ static const long v = 0; }};"
                      f"long h{i}() {{ return F{i}<700>::v; }}" for i in range(40))
    for i in range(n):
        (root / f"s{i}.cc").write_text(heavy if i == 0 else f"int f{i}() {{ return {i}; }}\n")
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(t CXX)\n"
        f"add_library(mxnet SHARED {' '.join(f's{i}.cc' for i in range(n))})\n")
    build = root / "build"
    subprocess.run(["cmake", "-G", "Ninja", "-S", str(root), "-B", str(build)], check=True,
                   capture_output=True)
    return build


def test_compile_record_names_the_slowest_commands_and_the_cpu_time(tmp_path):
    build = _tiny_cmake_tree(tmp_path / "t")
    first = compile_step.compile_mxnet(build, 2, tmp_path / "logs", progress=open("/dev/null", "w"),
                                        src=build.parent)
    rec = first.build_time
    # 4 objects + the link, read from the real .ninja_log; the heavy source leads
    assert rec["commands"] == 5 and not rec["whole_log"], rec
    assert rec["slowest_steps"][0]["target"] == "CMakeFiles/mxnet.dir/s0.cc.o", rec
    assert rec["slowest_steps"] == sorted(rec["slowest_steps"], key=lambda s: -s["seconds"])
    assert rec["command_seconds"] == pytest.approx(sum(s["seconds"] for s in rec["slowest_steps"]), abs=0.01)
    assert 0 < rec["cpu_seconds"] <= rec["command_seconds"] * 1.5 + 1, rec
    lines = ninja_log.describe(rec, first.seconds)
    assert lines[0].startswith("compile time: 5 commands took") and "CMakeFiles/mxnet.dir/s0.cc.o" in lines[1]

    # a resumed build counts only its own commands, though the log holds both runs
    (tmp_path / "t" / "s2.cc").write_text("int f2() { return 22; }\n")
    again = compile_step.compile_mxnet(build, 2, tmp_path / "logs", progress=open("/dev/null", "w"),
                                        src=build.parent)
    assert {s["target"] for s in again.build_time["slowest_steps"]} == {"CMakeFiles/mxnet.dir/s2.cc.o",
                                                                       "libmxnet.so"}, again.build_time
    assert not again.build_time["whole_log"]


def test_a_rewritten_ninja_log_is_read_whole_and_says_so(tmp_path):
    build = _tiny_cmake_tree(tmp_path / "t", n=2)
    subprocess.run(["ninja", "-C", str(build)], check=True, capture_output=True)
    before = ninja_log.log_position(build)
    log = build / ".ninja_log"
    # ninja's recompaction writes a new file and renames it over the log: a new inode
    (build / ".ninja_log.tmp").write_text(log.read_text())
    (build / ".ninja_log.tmp").replace(log)
    commands, this_run_only = ninja_log.read_commands(build, before)
    assert not this_run_only and len(commands) == 3
    assert "earlier runs' commands are counted too" in ninja_log.describe(ninja_log.build_time(commands, 1.0, True))[0]


def test_the_real_forks_build_log_names_its_slowest_commands(tmp_path):
    """The .ninja_log of the real fork's sm_90 build on the H200 (docs/gpu_runs/real_fork_2026-12-03.md):
    779 commands, the two softmax kernels first."""
    (tmp_path / ".ninja_log").write_bytes(
        (HARNESS_ROOT / "docs" / "gpu_runs" / "real_fork_2026-12-03.ninja_log").read_bytes())
    commands, this_run_only = ninja_log.read_commands(tmp_path, None)
    rec = ninja_log.build_time(commands, 14749.4, not this_run_only)
    assert rec["commands"] == 779 and this_run_only
    assert [s["target"] for s in rec["slowest_steps"][:2]] == [
        "CMakeFiles/mxnet.dir/src/operator/nn/log_softmax.cu.o", "CMakeFiles/mxnet.dir/src/operator/nn/softmax.cu.o"]
    assert rec["slowest_steps"][0]["seconds"] == pytest.approx(393.2, abs=0.1)
    assert len(rec["slowest_steps"]) == ninja_log.SLOWEST
    assert rec["command_seconds"] == pytest.approx(14788.2, abs=0.5)
