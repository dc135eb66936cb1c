"""The static (provenance) gates against real wheels: good ones pass, each regression fails its gate.

Every case runs the real gates in a child pytest (the ``gates`` fixture) on a wheel from
fixtures_wheels.py and asserts exactly which gates failed and what they said.
"""
from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.slow

# The gates fixture runs child pytests through pytester (CI runs `pytest selftest` without -p pytester).
pytest_plugins = ["pytester"]

ALL_GATES = {
    "test_wheel_integrity.py": ("test_wheel_name_and_version", "test_record_hashes", "test_libmxnet_is_elf"),
    "test_opencv_bundle.py": ("test_opencv_linked_as_profile_says", "test_needed_opencv_sonames_bundled",
                              "test_bundled_closure_resolves", "test_bundled_libs_have_origin_runpath",
                              "test_nothing_forbidden_bundled"),
    "test_cuda_linkage.py": ("test_cuda_driver_linkage", "test_cudnn_nccl_needed", "test_libmxnet_runpath"),
    "test_arch_coverage.py": ("test_sass_for_every_requested_arch", "test_ptx_for_ptx_archs",
                              "test_fatbin_containers_consistent"),
    "test_metadata.py": ("test_onnx_dependency_policy", "test_hard_requirements_pinned",
                         "test_forbidden_hard_absent"),
    "test_build_provenance.py": ("test_cmake_features", "test_cmake_cuda_arch", "test_commit_stamp",
                                 "test_clean_tracked_tree"),
}
N_GATES = sum(len(v) for v in ALL_GATES.values())


def _failed(result) -> set:
    out = set()
    for line in result.outlines:
        m = re.match(r"^(FAILED|ERROR) \S*tests/\S+::(\w+)", line)
        if m:
            out.add(m.group(2))
    return out


def _audit(gates, wheel, *args):
    return gates("-m", "provenance", f"--wheel={wheel}", *args)


@pytest.mark.parametrize("flavor", ["cuda", "cpu"])
def test_good_wheel_passes_every_gate(gates, selftest_wheels, flavor, tmp_path):
    out = tmp_path / "prov.json"
    result = _audit(gates, selftest_wheels[f"good_{flavor}"], f"--flavor={flavor}",
                    f"--mxnet-src={selftest_wheels['src']}", f"--provenance-json={out}")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=N_GATES)
    doc = json.loads(out.read_text())
    assert doc["passed"] is True and len(doc["gates"]) == N_GATES
    assert doc["facts"]["profile"] == flavor
    if flavor == "cuda":
        assert doc["facts"]["fatbin"]["sass_archs"] == [80, 86, 89, 90, 100, 120]
        assert doc["facts"]["fatbin"]["ptx_archs"] == [120]
    assert selftest_wheels["head"] in doc["facts"]["stamps"]["binary"]
    result.stdout.fnmatch_lines(["*Provenance report:*", "*commit stamp read from: binary*",
                                 f"*provenance verdict: {N_GATES} passed*"])


# variant -> (flavor, failing gate, message fragment)
REGRESSIONS = {
    "opencv_off": ("cuda", "test_opencv_linked_as_profile_says", "OpenCV compiled out"),
    "closure_not_bundled": ("cuda", "test_needed_opencv_sonames_bundled", "does not bundle mxnet/lib/libopencv_*"),
    "soname_missing": ("cuda", "test_needed_opencv_sonames_bundled",
                       "needs libopencv_imgcodecs.so.406 but does not bundle that SONAME"),
    "closure_incomplete": ("cuda", "test_bundled_closure_resolves", "{inner} is not bundled"),
    "no_origin": ("cuda", "test_bundled_libs_have_origin_runpath", "{leaf}"),
    "libcuda_bundled": ("cuda", "test_nothing_forbidden_bundled", "libcuda.so.1 is the NVIDIA driver's"),
    "no_libcuda_needed": ("cuda", "test_cuda_driver_linkage", "no DT_NEEDED for libcuda.so.1"),
    "no_nccl_needed": ("cuda", "test_cudnn_nccl_needed", "no libnccl NEEDED entries"),
    "cudnn_runpath_missing": ("cuda", "test_libmxnet_runpath", "lacks $ORIGIN/../nvidia/cudnn/lib"),
    "sm100_dropped": ("cuda", "test_sass_for_every_requested_arch", "no SASS for sm_100"),
    "ptx_missing": ("cuda", "test_ptx_for_ptx_archs", "no PTX for compute_120"),
    "container_partial": ("cuda", "test_fatbin_containers_consistent", "lacks sm_89"),
    "onnx_extra_only": ("cuda", "test_onnx_dependency_policy", "only as the [onnx] extra"),
    "no_onnx_package": ("cuda", "test_onnx_dependency_policy", "does not ship the mxnet/onnx package"),
    "cublas_pin_wrong": ("cuda", "test_hard_requirements_pinned", "nvidia-cublas"),
    "bad_record": ("cuda", "test_record_hashes", "mxnet/__init__.py"),
    "cpu_links_cuda": ("cpu", "test_cuda_driver_linkage", "libcudart.so.13"),
    "cpu_onnx_hard": ("cpu", "test_forbidden_hard_absent", "onnx"),
}


@pytest.mark.parametrize("variant", sorted(REGRESSIONS))
def test_regression_fails_exactly_its_gate(gates, selftest_wheels, variant):
    flavor, gate, fragment = REGRESSIONS[variant]
    fragment = fragment.format(inner=selftest_wheels["inner"], leaf=selftest_wheels["leaf"])
    result = _audit(gates, selftest_wheels["variants"][variant], f"--flavor={flavor}",
                    f"--mxnet-src={selftest_wheels['src']}")
    text = result.stdout.str()
    assert result.ret == 1, text
    assert _failed(result) == {gate}, text
    assert fragment in text, text
    assert "Traceback" not in text
    result.assert_outcomes(passed=N_GATES - 1, failed=1)


# (option builder, failing gate, fragment) for the build-provenance regressions
PROVENANCE = {
    "version_mismatch": (lambda w: ["--package-version=2.0.0+cu13.bw.20260614.2", f"--mxnet-src={w['src']}"],
                         "test_wheel_name_and_version", "does not match the expected --package-version"),
    "cache_opencv_off": (lambda w: [f"--cmake-cache={w['cache_opencv_off']}", f"--mxnet-src={w['src']}"],
                         "test_cmake_features", "USE_OPENCV expected ON, found OFF"),
    "cache_openmp_off": (lambda w: [f"--cmake-cache={w['cache_openmp_off']}", f"--mxnet-src={w['src']}"],
                         "test_cmake_features", "USE_OPENMP expected ON, found OFF"),
    "cache_arch_old": (lambda w: [f"--cmake-cache={w['cache_arch_old']}", f"--mxnet-src={w['src']}"],
                       "test_cmake_cuda_arch", "MXNET_CUDA_ARCH='8.0;8.6;8.9;9.0;12.0+PTX'"),
    "dirty_tree": (lambda w: [f"--mxnet-src={w['src_dirty']}"], "test_clean_tracked_tree",
                   "tracked working tree is dirty (1 changed path"),
    "stamp_mismatch": (lambda w: [f"--mxnet-src={w['src_moved']}"], "test_commit_stamp",
                       "but git HEAD is {moved}"),
}


@pytest.mark.parametrize("case", sorted(PROVENANCE))
def test_build_provenance_regression(gates, selftest_wheels, case):
    opts, gate, fragment = PROVENANCE[case]
    fragment = fragment.format(moved=selftest_wheels["moved_head"][:12])
    result = _audit(gates, selftest_wheels["good_cuda"], *opts(selftest_wheels))
    text = result.stdout.str()
    assert _failed(result) == {gate}, text
    assert fragment in text, text
    assert result.ret == 1


def test_stamp_fallback_to_build_files_is_reported(gates, selftest_wheels):
    # No stamp in the binary: the build files' define decides, and the report says so.
    result = _audit(gates, selftest_wheels["variants"]["nostamp"], f"--mxnet-src={selftest_wheels['src']}")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*commit stamp read from: build files (fallback)*"])


def test_stamp_unavailable_fails(gates, selftest_wheels):
    result = _audit(gates, selftest_wheels["variants"]["nostamp"], f"--mxnet-src={selftest_wheels['src']}",
                    f"--cmake-cache={selftest_wheels['cache_unavailable']}")
    assert _failed(result) == {"test_commit_stamp"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*MXNET_COMMIT_HASH=Unavailable*"])


def test_build_tree_runpath_is_a_warning(gates, selftest_wheels):
    result = _audit(gates, selftest_wheels["variants"]["build_tree_runpath"])
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*WARNING: mxnet/libmxnet.so RUNPATH carries entries beyond the profile's: "
                                 "/home/builder/mxnet/build*"])


def test_release_run_without_source_fails_provenance_gates(gates, selftest_wheels):
    result = gates("-m", "release and provenance", f"--wheel={selftest_wheels['good_cuda']}")
    assert _failed(result) == set(ALL_GATES["test_build_provenance.py"]), result.stdout.str()
    result.stdout.fnmatch_lines(["*gate skipped, which counts as a failure*"])


# Bad input: a clear message, a non-zero exit, no traceback.
BAD_INPUTS = {
    "missing": (lambda w: "/nonexistent/mxnet.whl", "no such file"),
    "not_a_wheel": (lambda w: w["not_a_wheel"], "not a valid zip archive"),
    "truncated": (lambda w: w["truncated"], "not a valid zip archive"),
    "no_libmxnet": (lambda w: w["variants"]["no_libmxnet"], "does not contain mxnet/libmxnet.so"),
    "libmxnet_not_elf": (lambda w: w["variants"]["libmxnet_not_elf"], "is not an ELF file"),
    "zip_slip": (lambda w: w["zip_slip"], "../../evil.txt"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_gets_a_clear_message(gates, selftest_wheels, case):
    path, fragment = BAD_INPUTS[case]
    result = _audit(gates, path(selftest_wheels))
    text = result.stdout.str() + result.stderr.str()
    assert result.ret != 0, text
    assert fragment in text, text
    assert "Traceback" not in text, text
