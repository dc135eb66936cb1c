"""Issue 31, point 2: the report and the review page list the toolchain (nvcc, the host compiler,
cmake, ninja and the CUDA wheels): the tools the build's CMake cache says it used, each asked of
the harness's own copy (issue 41: the cache's paths are never run)."""
from __future__ import annotations

import shutil
import subprocess

from build_steps import review_page, toolchain


def test_versions_are_the_tools_own(tmp_path):
    cache = {"CMAKE_CXX_COMPILER": shutil.which("g++"), "CMAKE_COMMAND": shutil.which("cmake"),
             "CMAKE_MAKE_PROGRAM": shutil.which("ninja")}
    if shutil.which("nvcc"):
        cache["CMAKE_CUDA_COMPILER"] = shutil.which("nvcc")
    got = toolchain.versions(cache)
    cmake = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.split()[2]
    assert got["cmake"] == cmake
    assert got["ninja"] == subprocess.run(["ninja", "--version"], capture_output=True, text=True).stdout.strip()
    assert got["c++"] and got["c++"] != "unknown"
    if "nvcc" in got:
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
