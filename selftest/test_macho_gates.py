"""The macOS flavor's gates against real Mach-O wheels: the good one passes every gate, each
regression fails its gate (and only the gates it really breaks), and the real mxnet 1.9.1 macOS
wheel from PyPI is read and judged under the macOS profile.
"""
from __future__ import annotations

import json
import re

import pytest

from selftest.gate_sets import gates_by_file

pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

# Derived from the macOS manifest and the gate modules' markers (selftest/gate_sets.py), never hand-kept.
MACHO_GATES = gates_by_file("macos", "macho")
#: without --mxnet-src / --cmake-cache the build-provenance gates skip, as for the Linux flavors
BUILD_PROVENANCE = "test_build_provenance.py"
#: the format-neutral static gates that also judge the macOS wheel
COMMON_GATES = {f: names for f, names in gates_by_file("macos", "provenance", without=("macho",)).items()
                if f != BUILD_PROVENANCE}
N_SKIPPED = len(gates_by_file("macos", "provenance")[BUILD_PROVENANCE])
N_GATES = sum(len(v) for d in (MACHO_GATES, COMMON_GATES) for v in d.values())
#: gates that read ELF and must not be in a macOS run at all
ELF_GATES = ("test_cuda_linkage.py", "test_arch_coverage.py", "test_opencv_bundle.py", "test_libmxnet_is_elf")


def _outcomes(result) -> dict:
    """gate name -> PASSED/FAILED/SKIPPED from the gate table."""
    out = {}
    for line in result.outlines:
        m = re.match(r"^(PASSED|FAILED|SKIPPED)\s+tests/\S+::(\w+)", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


def _failed(result) -> set:
    return {g for g, v in _outcomes(result).items() if v == "FAILED"}


def test_good_macos_wheel_passes_every_gate(gates, macos_wheels, tmp_path):
    out = tmp_path / "prov.json"
    # no --flavor: the macosx_11_0_arm64 tag picks the macOS profile
    result = gates("-m", "provenance", f"--wheel={macos_wheels['good']}", f"--provenance-json={out}")
    text = result.stdout.str()
    assert result.ret == 0, text
    result.assert_outcomes(passed=N_GATES, skipped=N_SKIPPED)
    assert not any(g in text for g in ELF_GATES), text
    doc = json.loads(out.read_text())
    assert doc["profile"] == "macos" and doc["passed"] is False  # the skips: a release run needs the source
    verdicts = {k.rsplit("::", 1)[1]: v["verdict"] for k, v in doc["gates"].items()}
    assert all(verdicts[g] == "passed" for names in MACHO_GATES.values() for g in names), verdicts
    macho = doc["facts"]["macho"]
    assert macho["images"]["mxnet/lib/libomp.dylib"]["fat"] is True
    assert sorted(s["arch"] for s in macho["images"]["mxnet/lib/libomp.dylib"]["slices"]) == ["arm64", "x86_64"]
    lib = macho["images"]["mxnet/libmxnet.dylib"]["slices"][0]
    assert lib["install_id"] == "@rpath/libmxnet.dylib" and lib["rpaths"] == ["@loader_path/lib"]
    assert lib["min_os"] == "11.0"
    png = next(r for r in macho["references"] if r["path"] == "@rpath/libpng16.16.dylib")
    assert png["target"] == "mxnet/lib/libpng16.16.dylib" and "@loader_path/lib of mxnet/libmxnet.dylib" in png["detail"]
    result.stdout.fnmatch_lines(["*Provenance report:*", "*platform tag: macosx_11_0_arm64*",
                                 "*libmxnet.dylib: arm64, minimum macOS 11.0 (LC_BUILD_VERSION)*",
                                 "*bundled Mach-O images: 5:*", "*dylib references: * bundled, * system*",
                                 "*arm64 code signatures: 6 checked, 0 invalid or missing*"])


# variant -> (gates that must fail, fragment of the first one's message)
REGRESSIONS = {
    "x86_64_bundled": ({"test_arch_is_the_profiles"}, "mxnet/lib/libpng16.16.dylib is x86_64 only: no arm64 slice"),
    "minos_too_new": ({"test_minimum_macos_matches_tag"},
                      "libopencv_core.410.dylib (arm64) needs macOS 15.0 (LC_BUILD_VERSION)"),
    "homebrew_reference": ({"test_no_build_host_paths"},
                           "LC_LOAD_DYLIB /opt/homebrew/opt/libpng/lib/libpng16.16.dylib"),
    "homebrew_rpath": ({"test_no_build_host_paths"}, "mxnet/libmxnet.dylib: LC_RPATH /opt/homebrew/lib"),
    "closure_incomplete": ({"test_dylib_references_resolve"},
                           "libopencv_imgcodecs.410.dylib: @rpath/libpng16.16.dylib does not resolve inside the wheel"),
    "openmp_off": ({"test_openmp_runtime_bundled"}, "has no OpenMP runtime dependency (libomp) despite USE_OPENMP=ON"),
    "openmp_not_bundled": ({"test_openmp_runtime_bundled"}, "does not bundle the OpenMP runtime (mxnet/lib/libomp*)"),
    # an absolute reference is both a build-host path and a non-loader-relative OpenMP runtime
    "openmp_absolute": ({"test_openmp_runtime_bundled", "test_no_build_host_paths"},
                        "OpenMP reference /opt/homebrew/opt/libomp/lib/libomp.dylib is not loader-relative"),
    "opencv_off": ({"test_opencv_closure_bundled"}, "has no libopencv_* dependencies despite USE_OPENCV=ON"),
    "opencv_not_bundled": ({"test_opencv_closure_bundled"},
                           "loads @loader_path/lib/libopencv_core.410.dylib, which is not bundled in mxnet/lib"),
    "install_name_stale": ({"test_install_names_consistent"},
                           "has install name /opt/homebrew/opt/opencv/lib/libopencv_imgproc.410.dylib, "
                           "not @rpath/libopencv_imgproc.410.dylib"),
    "onnx_extra_only": ({"test_onnx_dependency_policy"}, "only as the [onnx] extra"),
    "signature_stale": ({"test_arm64_code_signatures_valid"},
                        "mxnet/lib/libopencv_imgproc.410.dylib (arm64) has a code signature whose hashes do not "
                        "match 1 of its"),
    "unsigned": ({"test_arm64_code_signatures_valid"},
                 "mxnet/lib/libpng16.16.dylib (arm64) has no code signature (LC_CODE_SIGNATURE)"),
}


def test_build_provenance_of_the_macos_wheel(gates, macos_wheels):
    # With its source tree, the format-neutral provenance gates judge the macOS wheel too; the
    # stamp is read from libmxnet.dylib's __TEXT,__cstring.
    result = gates("-m", "provenance", f"--wheel={macos_wheels['good']}", f"--mxnet-src={macos_wheels['src']}")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=N_GATES + N_SKIPPED)
    result.stdout.fnmatch_lines(["*commit stamp read from: binary; binary candidates: " + macos_wheels["head"] + "*"])


# case -> (options, failing gate, fragment)
PROVENANCE = {
    "stamp_mismatch": (lambda w: [f"--mxnet-src={w['src_moved']}"], "test_commit_stamp",
                       "but git HEAD is {moved}"),
    "cache_openmp_off": (lambda w: [f"--mxnet-src={w['src']}", f"--cmake-cache={w['cache_openmp_off']}"],
                         "test_cmake_features", "USE_OPENMP expected ON, found OFF"),
}


@pytest.mark.parametrize("case", sorted(PROVENANCE))
def test_build_provenance_regression(gates, macos_wheels, case):
    opts, gate, fragment = PROVENANCE[case]
    result = gates("-m", "provenance", f"--wheel={macos_wheels['good']}", *opts(macos_wheels))
    text = result.stdout.str()
    assert result.ret == 1 and _failed(result) == {gate}, text
    assert fragment.format(moved=macos_wheels["moved_head"][:12]) in text, text


@pytest.mark.parametrize("variant", sorted(REGRESSIONS))
def test_regression_fails_its_gate(gates, macos_wheels, variant):
    want, fragment = REGRESSIONS[variant]
    result = gates("-m", "provenance", f"--wheel={macos_wheels[variant]}", "--flavor=macos")
    text = result.stdout.str()
    assert result.ret == 1, text
    assert _failed(result) == want, text
    assert fragment in text, text
    assert "Traceback" not in text, text
    result.assert_outcomes(passed=N_GATES - len(want), failed=len(want), skipped=N_SKIPPED)


def test_libmxnet_not_macho_is_named(gates, macos_wheels):
    # Bad input: libmxnet.dylib is an ELF file. Its gate names it; the gates that need it say they
    # cannot check rather than guessing a cause.
    result = gates("-m", "provenance", f"--wheel={macos_wheels['libmxnet_elf']}")
    text = result.stdout.str()
    assert result.ret == 1 and "Traceback" not in text, text
    assert {"test_libmxnet_is_macho_dylib", "test_openmp_runtime_bundled", "test_opencv_closure_bundled"} <= _failed(result)
    assert "libmxnet.dylib is not a Mach-O file (an ELF file)" in text, text
    assert text.count("cannot check: libmxnet.dylib is missing or unreadable") >= 2, text


def test_macos_flavor_needs_a_wheel(gates):
    result = gates("-m", "provenance", "--flavor=macos")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "--flavor macos audits an existing wheel: pass --wheel=PATH" in text, text
    assert "Traceback" not in text, text


#: what the real 1.9.1 macOS wheel is judged to be under the macOS profile
MXNET_191_VERDICTS = {
    "test_libmxnet_is_macho_dylib": "PASSED",
    "test_arch_is_the_profiles": "FAILED",         # x86_64, tagged macosx_10_13_x86_64
    "test_minimum_macos_matches_tag": "PASSED",    # LC_VERSION_MIN_MACOSX 10.13 = the tag's 10.13
    "test_no_build_host_paths": "PASSED",          # only /usr/lib and /System references
    "test_dylib_references_resolve": "PASSED",
    "test_openmp_runtime_bundled": "FAILED",       # no libomp reference, nothing bundled
    "test_opencv_closure_bundled": "FAILED",       # OpenCV linked statically: no libopencv_* reference
    "test_install_names_consistent": "PASSED",     # @rpath/libmxnet.dylib
    "test_arm64_code_signatures_valid": "PASSED",  # no arm64 slice to run unsigned (the arch gate's failure)
    "test_wheel_name_and_version": "PASSED",
    "test_record_hashes": "PASSED",
    "test_onnx_dependency_policy": "FAILED",       # onnx not a dependency at all
    "test_hard_requirements_pinned": "FAILED",     # 1.x pins, no opencv-python/onnx/packaging
    "test_forbidden_hard_absent": "PASSED",
    "test_requires_dist_unambiguous": "PASSED",
}


def test_real_mxnet191_macos_wheel(gates, mxnet191_macos_wheel, tmp_path):
    out = tmp_path / "prov.json"
    result = gates("-m", "provenance", f"--wheel={mxnet191_macos_wheel}", f"--provenance-json={out}")
    text = result.stdout.str()
    assert "Traceback" not in text, text
    outcomes = _outcomes(result)
    assert {g: outcomes.get(g) for g in MXNET_191_VERDICTS} == MXNET_191_VERDICTS, text
    for fragment in ("the wheel is tagged macosx_10_13_x86_64 (x86_64), but the macos profile ships arm64",
                     "mxnet/libmxnet.dylib is x86_64 only: no arm64 slice",
                     "libmxnet.dylib has no OpenMP runtime dependency",
                     "libmxnet.dylib has no libopencv_* dependencies despite USE_OPENCV=ON",
                     "libmxnet.dylib: x86_64, minimum macOS 10.13 (LC_VERSION_MIN_MACOSX)"):
        assert fragment in text, text
    doc = json.loads(out.read_text())
    assert doc["profile"] == "macos" and doc["passed"] is False
    assert doc["facts"]["macho"]["platform_tags"] == [
        {"tag": "macosx_10_13_x86_64", "min_os": "10.13", "archs": ["x86_64"]}]


def test_runtime_gates_skip_off_macos(gates, macos_wheels):
    # Installing a macosx_* wheel here is impossible: the runtime and install gates say so (a
    # release run counts that as failed), instead of failing inside pip.
    result = gates("-m", "runtime or build", f"--wheel={macos_wheels['good']}")
    text = result.stdout.str()
    assert "a macOS wheel cannot be installed on this linux host" in text, text
    assert "test_build_chain.py" not in text, text  # the Linux build chain's gates are ELF gates
    outcomes = _outcomes(result)
    assert outcomes and set(outcomes.values()) == {"SKIPPED"}, text
    assert "test_mxnet_resolves_inside_venv" in outcomes, text
