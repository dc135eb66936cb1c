"""build_steps.readers.cmake_file_api against real CMake replies, and against hostile ones.

A tiny project (C, and CUDA when nvcc is here) is configured by the real cmake after the harness's
query is written; the reply gives the compilers and their versions and the mxnet target's flags and
defines. The build dir is the tree's CMake's to write, so a reply with a planted link, an oversized
file, malformed JSON or an index naming a file outside the reply dir is refused with one StepError
line, never a crash and never read through.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from build_steps.errors import StepError
from build_steps.readers import cmake_file_api as fapi

NVCC = shutil.which("nvcc")


def _project(src: Path, cuda: bool) -> None:
    src.mkdir(parents=True)
    langs = "C CUDA" if cuda else "C"
    cu = (
        "set(CMAKE_CUDA_ARCHITECTURES OFF)\n"
        'set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -gencode arch=compute_90,code=sm_90")\n'
    ) if cuda else ""
    (src / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.20)\nproject(tiny {langs})\n{cu}"
        f"add_library(mxnet SHARED a.c{' k.cu' if cuda else ''})\n"
        "target_compile_definitions(mxnet PRIVATE MXNET_USE_CUDNN=0 MXNET_USE_NCCL=1)\n"
        "add_library(other STATIC a.c)\n")
    (src / "a.c").write_text("int a(void) { return 1; }\n")
    if cuda:
        (src / "k.cu").write_text("__global__ void k() {}\n")


def _configure(tmp_path: Path, cuda: bool) -> Path:
    src, build = tmp_path / "src", tmp_path / "build"
    _project(src, cuda)
    fapi.write_query(build)
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), *gen], check=True, capture_output=True)
    return build


@pytest.fixture(scope="module")
def c_build(tmp_path_factory):
    return _configure(tmp_path_factory.mktemp("fapi-c"), cuda=False)


def test_a_real_configure_answers_the_query(c_build):
    reply = fapi.read_reply(c_build, ["mxnet"])
    cmake = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.split()[2]
    assert reply.cmake_version == cmake
    cc = reply.compilers["C"]
    assert cc.id == "GNU" and cc.version and cc.version.split(".")[0] in subprocess.run(
        [cc.path, "--version"], capture_output=True, text=True).stdout
    # only the targets asked for are read
    assert set(reply.targets) == {"mxnet"}
    mxnet = reply.targets["mxnet"]
    assert mxnet.type == "SHARED_LIBRARY"
    assert {"MXNET_USE_CUDNN=0", "MXNET_USE_NCCL=1"} <= mxnet.defines()
    assert "-fPIC" in " ".join(mxnet.fragments("C"))


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA 13) is needed for the CUDA reply")
def test_a_real_cuda_configure_gives_nvcc_and_the_arch_flags(tmp_path):
    reply = fapi.read_reply(_configure(tmp_path, cuda=True), ["mxnet"])
    nvcc = reply.compilers["CUDA"]
    assert nvcc.id == "NVIDIA"
    assert f"V{nvcc.version}" in subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    assert "-gencode arch=compute_90,code=sm_90" in " ".join(reply.targets["mxnet"].fragments("CUDA"))


def test_a_stale_reply_is_dropped_when_the_query_is_written(c_build, tmp_path):
    build = tmp_path / "b"
    shutil.copytree(c_build, build, symlinks=True)
    fapi.write_query(build)
    with pytest.raises(StepError, match="missing: CMake wrote no reply"):
        fapi.read_reply(build)


def test_no_reply_is_one_clear_error(tmp_path):
    with pytest.raises(StepError, match=r"CMake File API reply: .*missing"):
        fapi.read_reply(tmp_path)
    (fapi.api_dir(tmp_path) / "reply").mkdir(parents=True)
    with pytest.raises(StepError, match="no index"):
        fapi.read_reply(tmp_path)


def _copy(c_build: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    build = tmp_path / "b"
    shutil.copytree(c_build, build, symlinks=True)
    reply = fapi.api_dir(build) / "reply"
    index = max(reply.glob("index-*.json"))
    return build, reply, index


def _codemodel(index: Path) -> str:
    doc = json.loads(index.read_text())
    return next(r["jsonFile"] for r in doc["reply"][fapi.CLIENT]["query.json"]["responses"]
                if r["kind"] == "codemodel")


def test_a_link_in_the_reply_is_refused(c_build, tmp_path):
    build, reply, index = _copy(c_build, tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"configurations": [{"targets": []}]}))
    target = reply / _codemodel(index)
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(StepError, match="is a link"):
        fapi.read_reply(build, ["mxnet"])


def test_a_linked_reply_dir_is_refused(c_build, tmp_path):
    build, reply, _index = _copy(c_build, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    reply.rename(elsewhere)
    reply.symlink_to(elsewhere)
    with pytest.raises(StepError, match="link or not a directory"):
        fapi.read_reply(build)
    # and writing the query removes the link, never what it points to
    fapi.write_query(build)
    assert not os.path.lexists(reply) and any(elsewhere.iterdir())


def test_a_planted_link_for_the_query_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("operator's file\n")
    qdir = fapi.api_dir(tmp_path / "b") / "query" / fapi.CLIENT
    qdir.mkdir(parents=True)
    (qdir / "query.json").symlink_to(victim)
    with pytest.raises(StepError, match="cannot write the query"):
        fapi.write_query(tmp_path / "b")
    assert victim.read_text() == "operator's file\n"


def test_an_oversized_reply_file_is_refused(c_build, tmp_path, monkeypatch):
    build, reply, index = _copy(c_build, tmp_path)
    with open(reply / _codemodel(index), "ab") as fh:
        fh.truncate(fapi.MAX_FILE_BYTES + 1)
    with pytest.raises(StepError, match="over the"):
        fapi.read_reply(build, ["mxnet"])


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"cmake": {"version": {"string": 3}}}', "{" * 100000])
def test_malformed_json_is_refused(c_build, tmp_path, text):
    build, _reply, index = _copy(c_build, tmp_path)
    index.write_text(text)
    with pytest.raises(StepError, match="CMake File API reply: "):
        fapi.read_reply(build)


@pytest.mark.parametrize("name", ["../../../../etc/passwd", "/etc/passwd", "..", ".hidden.json", 7])
def test_an_index_naming_a_file_outside_the_reply_is_refused(c_build, tmp_path, name):
    build, _reply, index = _copy(c_build, tmp_path)
    doc = json.loads(index.read_text())
    for r in doc["reply"][fapi.CLIENT]["query.json"]["responses"]:
        if r["kind"] == "codemodel":
            r["jsonFile"] = name
    index.write_text(json.dumps(doc))
    with pytest.raises(StepError, match="not a file of|a string was expected"):
        fapi.read_reply(build, ["mxnet"])


# --- the configure step's facts come from the reply, not from what CMake printed ----------------

def _lying_tree(src: Path) -> None:
    """A tree whose configure message announces sm_90 while its CUDA sources compile for sm_80,
    and whose libmxnet drops cuDNN with a define (what the fork does when FindCUDNN fails)."""
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(tiny C CUDA)\n"
        "set(CMAKE_CUDA_ARCHITECTURES OFF)\n"
        'message(STATUS "CUDA: Using the following NVCC architecture flags -gencode;arch=compute_90,code=sm_90")\n'
        'string(APPEND CMAKE_CUDA_FLAGS " -gencode arch=compute_80,code=sm_80")\n'
        "add_definitions(-DMXNET_USE_CUDNN=0)\n"
        "add_library(mxnet SHARED a.c k.cu)\n")
    (src / "a.c").write_text("int a(void) { return 1; }\n")
    (src / "k.cu").write_text("__global__ void k() {}\n")


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA 13) is needed for the CUDA reply")
def test_configure_facts_are_what_cmake_compiles_with_not_what_it_printed(tmp_path):
    from build_steps import configure as configure_step
    src, build = tmp_path / "src", tmp_path / "build"
    _lying_tree(src)
    fapi.write_query(build)
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    out = subprocess.run(["cmake", "-S", str(src), "-B", str(build), *gen], check=True, capture_output=True, text=True)
    assert "compute_90" in out.stdout  # the message says one thing...
    facts = configure_step.read_facts(build)
    assert facts.gencode == ["-gencode=arch=compute_80,code=sm_80"]  # ...nvcc is given another
    assert "MXNET_USE_CUDNN=0" in facts.defines
    assert facts.compilers["CUDA"]["id"] == "NVIDIA" and facts.compilers["CUDA"]["version"]
    assert facts.cmake_version == subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.split()[2]
    # and the verification the chain runs reads them: the dropped cuDNN is refused, the arch is the one built
    from dataclasses import replace
    from build_steps.arch import parse_cuda_arch
    from build_steps.profile_data import PROFILES
    cuda = PROFILES["cuda"]
    cache = {**{k: "ON" if v else "OFF" for k, v in cuda.features.items()}, "MXNET_CUDA_ARCH": "8.0",
             **{e: "/found" for evidence, _pkg in configure_step.FOUND_EVIDENCE.values() for e in evidence}}
    result = configure_step.ConfigureResult(build_dir=build, first_time=True, seconds=0.0, log=tmp_path / "no.log",
                                            cache=cache, gencode=facts.gencode, defines=facts.defines,
                                            flags=facts.flags)
    with pytest.raises(StepError, match="compiles with -DMXNET_USE_CUDNN=0 although USE_CUDNN is wanted ON"):
        configure_step.verify_cache(result, cuda, parse_cuda_arch("8.0"))
    kept = replace(result, defines=[d for d in facts.defines if d != "MXNET_USE_CUDNN=0"])
    configure_step.verify_cache(kept, cuda, parse_cuda_arch("8.0"))
    with pytest.raises(StepError, match="expected -gencode=arch=compute_90,code=sm_90"):
        configure_step.verify_cache(replace(kept, cache={**cache, "MXNET_CUDA_ARCH": "9.0"}), cuda,
                                    parse_cuda_arch("9.0"))
