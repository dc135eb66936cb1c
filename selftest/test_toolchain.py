"""Issue 31, point 2: the report and the review page list the toolchain (nvcc, the host compiler,
cmake, ninja and the CUDA wheels), read from the tools the build's CMake cache names."""
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
    assert toolchain.versions({"CMAKE_COMMAND": str(tmp_path / "no-cmake")}) == {"cmake": "unknown"}


def test_the_review_page_lists_the_toolchain():
    doc = {"profile": "cuda", "build": {"toolchain": {"nvcc": "13.0.88", "nvidia-cudnn-cu13": "9.28.1.4"},
                                        "reproducible": "reproducible compile: yes (...)"}}
    html = review_page.render(review_page.page_view(doc))
    assert "toolchain: nvcc 13.0.88; nvidia-cudnn-cu13 9.28.1.4; reproducible yes" in html
    assert "toolchain:" not in review_page.render(review_page.page_view({"profile": "cuda"}))
