"""Issue 31, point 1: the compiler-launcher prefix makes one source give the same object bytes in
two build dirs with two TMPDIRs (real gcc and nvcc); without it they differ."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps import deterministic_compile as dc
from build_steps import reproducible

REQUIRES_NVCC = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA 13) compiles the .cu")

CU = r"""
#include <cstdio>
#include <cassert>
namespace { __global__ void twice(float *x) { x[threadIdx.x] *= 2; } }
void run(float *x) { twice<<<1, 32>>>(x); assert(x); printf("%s %s\n", __DATE__, __FILE__); }
"""
CC = r"""
#include <cstdio>
#include <cassert>
namespace { int hidden(int x) { return x * 3; } }
int run(int x) { assert(x); std::printf("%s %s %s\n", __DATE__, __TIME__, __FILE__); return hidden(x); }
"""


def _compile(tmp_path, name, lang, compiler_args, through_prefix=True):
    src = tmp_path / "tree"
    build = tmp_path / name / "build"
    tmp = tmp_path / name / "tmp"
    build.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(exist_ok=True)
    source = src / ("src/k.cu" if lang == "CUDA" else "src/k.cc")
    cmd = [*compiler_args, "-c", str(source), "-o", "k.o"]
    if through_prefix:
        cmd = reproducible.launcher_prefix(src, build)(lang) + cmd
    # the build dirs' paths differ in length: offsets in the object move if a path gets in
    env = {**os.environ, "TMPDIR": str(tmp), **reproducible.compile_env(src)}
    subprocess.run(cmd, cwd=build, env=env, check=True, capture_output=True)
    return (build / "k.o").read_bytes()


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "tree" / "src").mkdir(parents=True)
    (tmp_path / "tree" / "src" / "k.cu").write_text(CU)
    (tmp_path / "tree" / "src" / "k.cc").write_text(CC)
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z"}
    git = ["git", "-C", str(tmp_path / "tree"), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "t"], check=True, env=env)
    return tmp_path


def test_gcc_objects_are_identical_in_two_build_dirs_and_differ_without_the_prefix(tree):
    args = ["g++", "-g", "-O2"]
    assert _compile(tree, "one", "CXX", args) == _compile(tree, "two-longer-name", "CXX", args)
    assert _compile(tree, "one", "CXX", args, False) != _compile(tree, "two-longer-name", "CXX", args, False), \
        "without the prefix the build dir's path must show (else this test proves nothing)"


@REQUIRES_NVCC
def test_nvcc_objects_are_identical_in_two_build_dirs_and_differ_without_the_prefix(tree):
    args = ["nvcc", "-lineinfo", "-gencode=arch=compute_90,code=sm_90", "-x", "cu"]
    one = _compile(tree, "one", "CUDA", args)
    assert one == _compile(tree, "two-longer-name", "CUDA", args)
    # nvcc alone: pid-named temporaries and cudafe++'s random anonymous-namespace names
    assert _compile(tree, "one", "CUDA", args, False) != _compile(tree, "one", "CUDA", args, False)


def test_seeds_follow_the_path_in_the_tree_not_the_checkout():
    a = dc.added_flags("CXX", ["-c", "/x/one/src/op/a.cc"], "/x/one", "/x/one/build")
    b = dc.added_flags("CXX", ["-c", "/y/two/src/op/a.cc"], "/y/two", "/elsewhere/b")
    seed = [f for f in a if f.startswith("-frandom-seed")]
    assert seed and seed == [f for f in b if f.startswith("-frandom-seed")]
    other = dc.added_flags("CXX", ["-c", "/x/one/src/op/b.cc"], "/x/one", "/x/one/build")
    assert [f for f in other if f.startswith("-frandom-seed")] != seed
    # the build dir inside the tree: its map comes last (gcc applies the last match)
    maps = [f for f in a if f.startswith("-ffile-prefix-map")]
    assert maps[-1].endswith("/x/one/build=/mxnet-build")
    # a generated source in the build dir is named by its place there
    assert dc.relative_name("gen/x.cc", "/x/one", "/x/one/build") == "build/gen/x.cc"


def test_a_cuda_compile_leaves_sccache_out_unless_the_build_is_for_development():
    argv = ["--lang=CUDA", "--src=/t", "--build=/t/b", "/bin/sccache", "nvcc", "-c", "/t/k.cu", "-o", "k.o"]
    release = dc.command(argv, "/t/b")
    assert release[0] == "nvcc" and "--objdir-as-tempdir" in release
    dev = dc.command(["--dev", *argv], "/t/b")
    assert dev[:2] == ["/bin/sccache", "nvcc"] and "--objdir-as-tempdir" not in dev  # sccache fails on it
    cxx = dc.command(["--lang=CXX", "--src=/t", "--build=/t/b", "/bin/sccache", "g++", "-c", "/t/k.cc"], "/t/b")
    assert cxx[:2] == ["/bin/sccache", "g++"]
    assert "NO (development build" in reproducible.compile_summary(Path("/nonexistent"), True, "sccache")


def test_the_prefix_starts_fast(tmp_path):
    # it runs once per compile (~1300 in the fork): no import of the harness
    out = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", dc.__file__, "--lang=CXX",
                          "--src=/t", "--build=/t", "true"], capture_output=True, text=True, check=True)
    assert "build_steps" not in out.stderr and "harness" not in out.stderr
