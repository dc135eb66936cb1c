"""The harness's configure and compile steps on the real MXNet fork tree.

The sample tree is shaped the way the harness's readers expect; the fork is not (it prints its
nvcc flags as a CMake list, its compile is ~1300 Ninja steps). Configure runs with the cuda
profile and the CUDA root from pip wheels (cached under $MXNET_HARNESS_CACHE); the slow test
compiles two real objects of the fork, one .cc and one .cu for a single arch.
"""
from __future__ import annotations

import io
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from build_steps import configure as configure_step
from build_steps import cuda_root
from build_steps.compile import compile_mxnet
from build_steps.readers.elf import is_elf
from build_steps.errors import StepError
from build_steps.readers.fatbin import read_fatbin
from build_steps.profile_data import PROFILES
from build_steps.arch import make_arch, parse_cuda_arch
from selftest.conftest import HARNESS_CACHE
from selftest.fixtures_realtree import git

pytestmark = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
    reason="nvcc (CUDA 13) is needed to configure the fork with USE_CUDA=ON")

CUDA = PROFILES["cuda"]
RELEASE_CUDA_ARCH = CUDA.cuda_arch
#: one real object per compiler, picked cheap (CPU seconds measured: g++ 0.5, nvcc for sm_90 17;
#: src/common/utils.cc would be 30)
CC_OBJECT = "CMakeFiles/mxnet.dir/src/lang/ir.cc.o"
CU_OBJECT = "CMakeFiles/mxnet.dir/src/operator/custom/native_op.cu.o"


@pytest.fixture(scope="module")
def wheels_cuda_root():
    return cuda_root.assemble_cuda_root(cache=HARNESS_CACHE, python=sys.executable)


def _configure(tree: Path, build: Path, arch: str, root) -> configure_step.ConfigureResult:
    return configure_step.configure(tree, build, CUDA, make_arch(CUDA, arch, {}), build / "harness-logs",
                                    extra_defs=root.cmake_args, env=root.env)


def test_real_fork_configures_with_the_cuda_profile_and_wheel_toolkit(fork_tree, wheels_cuda_root, tmp_path):
    # configure() verifies the cache against the profile and raises on any disagreement (the
    # fork's list-form nvcc message once made it report "no -gencode flags" every time)
    res = _configure(fork_tree, tmp_path / "build", RELEASE_CUDA_ARCH, wheels_cuda_root)
    cache = res.cache
    assert res.first_time
    # each wanted library found, not only toggled ON
    for key, (evidence, _package) in configure_step.FOUND_EVIDENCE.items():
        assert cache.get(key) == "ON", (key, cache.get(key))
        assert all(configure_step._found(cache.get(e)) for e in evidence), {e: cache.get(e) for e in evidence}
    assert str(wheels_cuda_root.root) in cache["CUDNN_LIBRARY"] and str(wheels_cuda_root.root) in cache["NCCL_LIBRARIES"]
    ninja = (res.build_dir / "build.ninja").read_text(errors="replace")
    for macro in ("MXNET_USE_ONEDNN=1", "MXNET_USE_OPENCV=1", "MXNET_USE_NCCL=1", "USE_CUDNN"):
        assert f"-D{macro}" in ninja, f"build.ninja never compiles with -D{macro}"
    assert "CMakeFiles/dnnl_cpu.dir/" in ninja, "oneDNN's CPU library is not built"
    # the six release archs + PTX on the top one, as CMake announced them
    want = parse_cuda_arch(RELEASE_CUDA_ARCH).gencode_flags
    assert sorted(res.gencode) == sorted(want) and len(want) == 7, res.gencode
    # the verification is the one the chain runs: this cache passes it again, and fails it on the
    # regressions it exists for (an arch CMake did not emit, a library it did not find)
    configure_step.verify_cache(res, CUDA, parse_cuda_arch(RELEASE_CUDA_ARCH))
    with pytest.raises(StepError, match="expected"):
        configure_step.verify_cache(replace(res, gencode=res.gencode[1:], notes=[]), CUDA, parse_cuda_arch(RELEASE_CUDA_ARCH))
    lost = {**res.cache, "CUDNN_LIBRARY": "CUDNN_LIBRARY-NOTFOUND"}
    with pytest.raises(StepError, match="USE_CUDNN"):
        configure_step.verify_cache(replace(res, cache=lost, notes=[]), CUDA, parse_cuda_arch(RELEASE_CUDA_ARCH))
    # configure writes nothing tracked into the tree (a release run refuses a dirty tree)
    assert git(fork_tree, "status", "--porcelain", "--untracked-files=no").stdout == ""


@pytest.mark.slow
def test_compile_step_builds_real_fork_objects_with_progress_and_log(fork_tree, wheels_cuda_root, tmp_path):
    build = tmp_path / "build-sm90"
    res = _configure(fork_tree, build, "9.0", wheels_cuda_root)
    assert res.gencode == ["-gencode=arch=compute_90,code=sm_90"], res.gencode
    for obj, kind in ((CC_OBJECT, "CXX"), (CU_OBJECT, "CUDA")):
        shown = io.StringIO()
        logs = tmp_path / f"logs-{kind}"
        out = compile_mxnet(build, 2, logs, target=obj, env=wheels_cuda_root.env, progress=shown,
                            library_name=obj, src=fork_tree)
        lines = shown.getvalue().splitlines()
        progress = [l for l in lines if re.match(r"\[compile\] \[\d+/\d+\]", l)]
        assert progress, shown.getvalue()
        last = re.match(r"\[compile\] \[(\d+)/(\d+)\]", progress[-1])
        assert last.group(1) == last.group(2), f"the last progress line must be the last step: {progress}"
        assert any(f"Building {kind} object {obj}" in l for l in progress), progress
        log = (logs / "compile.log").read_text()
        assert f"cmake --build {build} --target {obj}" in log, log[:500]
        assert re.search(rf"^\[\d+/\d+\] Building {kind} object {re.escape(obj)}$", log, re.M), log[-2000:]
        assert out.library == build / obj and is_elf(out.library) and out.steps_run >= 1
    fatbin = read_fatbin(build / CU_OBJECT)
    assert fatbin is not None and fatbin.sass_archs == {90} and not fatbin.ptx_archs, \
        "the .cu object must carry SASS for exactly the one arch configured"
