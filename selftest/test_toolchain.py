"""Issue 31, point 2: the report and the review page list the toolchain (nvcc, the host compiler,
cmake, ninja and the CUDA wheels): the tools the build's CMake cache says it used, each asked of
the harness's own copy (issue 41: the cache's paths are never run)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from build_steps import configure, toolchain
from build_steps.report import review_page
from build_steps.readers import cmake_file_api


def test_versions_are_the_tools_own(tmp_path):
    # the compilers as a real configure's File API reply gives them (what the configure step reads)
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    langs = "CXX CUDA" if shutil.which("nvcc") else "CXX"
    (src / "CMakeLists.txt").write_text(f"cmake_minimum_required(VERSION 3.20)\nproject(t {langs})\n")
    cmake_file_api.write_query(build)
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja"], check=True, capture_output=True)
    facts = configure.read_facts(build)
    cache = {"CMAKE_COMMAND": shutil.which("cmake"), "CMAKE_MAKE_PROGRAM": shutil.which("ninja")}
    got = toolchain.versions(cache, facts.compilers)
    cmake = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.split()[2]
    assert got["cmake"] == cmake
    assert got["ninja"] == subprocess.run(["ninja", "--version"], capture_output=True, text=True).stdout.strip()
    assert got["c++"] and got["c++"] != "unknown"
    assert got["c++"] in subprocess.run([facts.compilers["CXX"]["path"], "--version"], capture_output=True,
                                        text=True).stdout
    if shutil.which("nvcc"):
        assert got["nvcc"] in subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    # a tool that cannot say is "unknown", not a crash
    no_cmake = {"cmake": str(tmp_path / "no-cmake")}
    assert toolchain.versions({"CMAKE_COMMAND": no_cmake["cmake"]}, tools=no_cmake) == {"cmake": "unknown"}


def test_the_cache_names_tools_but_the_harness_runs_its_own(tmp_path):
    # issue 41: CMakeCache.txt is the tree's CMake's to write; what it names is reported, not run
    fake = tmp_path / "cmake"
    fake.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\necho cmake version 99.9\n")
    fake.chmod(0o755)
    got = toolchain.versions({"CMAKE_COMMAND": str(fake)})
    assert not (tmp_path / "ran").exists()
    assert got["cmake"] == subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.split()[2]
    assert got["not the harness's"] == f"cmake: {fake}"
    # the cache naming the harness's own tool (through a link, as CMake may resolve it) is no note
    link = tmp_path / "cmake-link"
    link.symlink_to(shutil.which("cmake"))
    assert "not the harness's" not in toolchain.versions({"CMAKE_COMMAND": str(link)})


def test_the_review_page_lists_the_toolchain():
    doc = {"profile": "cuda", "build": {"toolchain": {"nvcc": "13.0.88", "nvidia-cudnn-cu13": "9.28.1.4"},
                                        "reproducible": "reproducible compile: yes (...)"}}
    html = review_page.render(review_page.page_view(doc))
    assert "toolchain: nvcc 13.0.88; nvidia-cudnn-cu13 9.28.1.4; reproducible yes" in html
    assert "toolchain:" not in review_page.render(review_page.page_view({"profile": "cuda"}))


def test_compiler_versions_are_the_configures_file_api_facts_and_nothing_is_run(tmp_path):
    # issue 47 item 3: compiler versions are found one way, CMake's File API reply that configure
    # read (ConfigureResult.compilers), never a second time by running a compiler or reading CMakeFiles/
    ran = tmp_path / "ran"
    own = tmp_path / "c++"
    own.write_text(f"#!/bin/sh\ntouch {ran}\necho 'c++ (GCC) 99.9.9'\n")
    own.chmod(0o755)
    compilers = {"CXX": {"id": "GNU", "version": "12.2.0", "path": str(own)},
                 "C": {"id": "GNU", "version": "12.2.0", "path": "/usr/bin/cc"}}
    got = toolchain.versions({"CMAKE_CXX_COMPILER": str(own)}, compilers, tools={"c++": str(own)})
    assert got == {"c++": "12.2.0"} and not ran.exists()
    # a compiler the configure did not use is not in the report; one CMake found elsewhere is named
    got = toolchain.versions({}, {"CUDA": {"id": "NVIDIA", "version": "13.0.88", "path": "/elsewhere/nvcc"}},
                             tools={"nvcc": str(own)})
    assert got == {"nvcc": "13.0.88", "not the harness's": "nvcc: /elsewhere/nvcc"}


def test_the_reports_provenance_reads_the_configure_product_not_cmakefiles(tmp_path):
    from pathlib import Path

    from build_steps.configure import ConfigureResult
    from build_steps.source import SourceInfo
    from build_steps.report.document import _provenance
    from build_steps.report.record import ChainProducts
    build = tmp_path / "build"
    lying = build / "CMakeFiles" / "9.9.9"
    lying.mkdir(parents=True)  # what the tree's CMake could write there
    (lying / "CMakeCUDACompiler.cmake").write_text('set(CMAKE_CUDA_COMPILER_VERSION "1.0")\n'
                                                   'set(CMAKE_CUDA_COMPILER_ID "Fake")\n')
    conf = ConfigureResult(build_dir=build, first_time=True, seconds=1.0, log=build / "configure.log", cache={},
                           cmake_version="3.25.1",
                           compilers={"CUDA": {"id": "NVIDIA", "version": "13.0.88", "path": "/usr/local/bin/nvcc"},
                                      "CXX": {"id": "GNU", "version": "12.2.0", "path": "/usr/bin/c++"}})
    got = _provenance(ChainProducts(configure=conf, source=SourceInfo(root=Path("/src"), commit=None, branch=None)),
                      None)
    assert (got["nvcc"], got["c++"], got["cmake"]) == ("NVIDIA 13.0.88", "GNU 12.2.0", "3.25.1")


@pytest.mark.slow
def test_a_chain_run_reports_the_toolchain_its_configure_computed(gates, sample_tree, tmp_path):
    # the report's toolchain and provenance come from the configure step's record, once
    import json
    src = sample_tree()
    report = tmp_path / "report.json"
    result = gates("-m", "release and (build or provenance)", "-k", "not install", f"--mxnet-src={src}",
                   "--flavor=cpu", "--jobs=2", f"--provenance-json={report}")
    assert result.ret == 0, (result.stdout.str() + result.stderr.str())[-4000:]
    doc = json.loads(report.read_text())
    gxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout
    cmake = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.split()[2]
    tools = doc["build"]["toolchain"]
    assert tools["c++"] in gxx and tools["cmake"] == cmake and "nvcc" not in tools, tools
    prov = doc["review"]["provenance"]
    assert prov["c++"] == f"GNU {tools['c++']}" and prov["cmake"] == cmake, prov
