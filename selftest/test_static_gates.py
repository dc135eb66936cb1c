"""The static (provenance) gates against real wheels: good ones pass, each regression fails its gate.

Every case runs the real gates in a child pytest (the ``gates`` fixture) on a wheel from
fixtures_wheels.py and asserts exactly which gates failed and what they said.
"""
from __future__ import annotations

import json
import re

import pytest

from build_steps import gpu_reports
from build_steps.profile_data import PROFILES

from selftest.gate_sets import gates_by_file

pytestmark = pytest.mark.slow

#: file -> the provenance gates of the release set (the same for both Linux flavors), derived from
#: the committed manifests and the gate modules' markers (selftest/gate_sets.py), never hand-kept.
ALL_GATES = gates_by_file("cuda", "provenance")
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
        # the arch built, as data, read from the tree's CMake cache (issue 35)
        assert gpu_reports.report_arch(doc).built == PROFILES["cuda"].release_arch
        assert doc["expected"]["cuda_arch_built_from"].startswith("the CMake cache "), doc["expected"]
    assert selftest_wheels["head"] in doc["facts"]["stamps"]["binary"]
    result.stdout.fnmatch_lines(["*Provenance report:*", "*graphics libraries bundled: *libGLX-*.so.0*",
                                 "*commit stamp read from: binary*",
                                 f"*provenance verdict: {N_GATES} passed*"])
    # The loadability facts a CI job reads (issue 12): each library once, all resolved, all clean.
    ld = doc["facts"]["loadability"]
    assert ld["unresolved"] == [] and ld["bad_runpath"] == [] and ld["refused"] == [], ld
    assert ld["stale"] == [] and ld["soname_conflicts"] == {} and ld["duplicates"] == [], ld
    lib = ld["objects"]["mxnet/libmxnet.so"]
    assert (lib["runpath_tag"], lib["runpath"], lib["stack"], lib["textrel"]) == (
        "RUNPATH", list(PROFILES[flavor].runpath), "rw", False)
    assert ld["floor"] == {"GLIBC": "2.39", "GLIBCXX": "3.4.33", "CXXABI": "1.3.15"}
    assert ld["symbol_max"]["GLIBC"]["member"] in ld["objects"]
    assert "libc.so.6" in ld["host_needed"]["glibc"] and "libGLX" not in str(ld["host_needed"])
    assert selftest_wheels["glx"] in ld["graphics"]
    bundled = [m for m in ld["objects"] if m.startswith("mxnet/lib/")]
    assert bundled and all(ld["objects"][m]["runpath"] == ["$ORIGIN"] for m in bundled)


def test_loadability_facts_in_json(gates, selftest_wheels, tmp_path):
    out = tmp_path / "prov.json"
    _audit(gates, selftest_wheels["variants"]["exec_stack"], f"--mxnet-src={selftest_wheels['src']}",
           f"--provenance-json={out}")
    doc = json.loads(out.read_text())
    ld = doc["facts"]["loadability"]
    assert ld["objects"]["mxnet/libmxnet.so"]["stack"] == "rwx"
    assert [r["member"] for r in ld["refused"]] == ["mxnet/libmxnet.so"]
    assert [n.split("::")[-1] for n, g in doc["gates"].items() if g["verdict"] != "passed"] == [
        "test_no_executable_stack"], doc["gates"]


# variant -> (flavor, failing gate (or gates), message fragment)
REGRESSIONS = {
    "opencv_off": ("cuda", "test_opencv_linked_as_profile_says", "OpenCV compiled out"),
    "closure_not_bundled": ("cuda", "test_needed_opencv_sonames_bundled", "does not bundle mxnet/lib/libopencv_*"),
    # A missing library also leaves what only it needed unneeded: the stale gate says so too.
    "soname_missing": ("cuda", ("test_needed_opencv_sonames_bundled", "test_no_unneeded_bundled_libraries"),
                       "needs {imgcodecs_name} but does not bundle that SONAME"),
    "closure_incomplete": ("cuda", ("test_every_needed_resolves", "test_no_unneeded_bundled_libraries"),
                           "{inner} is not bundled"),
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
    # ... and the CPU profile's host baseline has no CUDA toolkit: libcudart.so.13 does not resolve.
    "cpu_links_cuda": ("cpu", ("test_cuda_driver_linkage", "test_every_needed_resolves"), "libcudart.so.13"),
    "cpu_onnx_hard": ("cpu", "test_forbidden_hard_absent", "onnx"),
    # Loadability (issue 12): loads on the build host, not on a user's machine.
    "needs_host_only_lib": ("cuda", "test_every_needed_resolves",
                            "mxnet/libmxnet.so needs libmxnet_selftest_hostonly.so.1: "
                            "libmxnet_selftest_hostonly.so.1 is not bundled, not in the cuda profile's host baseline"),
    "build_tree_runpath": ("cuda", "test_runpaths_are_origin_relative",
                           "mxnet/libmxnet.so RUNPATH entry '/home/builder/mxnet/build': an absolute path"),
    "bundled_absolute_runpath": ("cuda", "test_runpaths_are_origin_relative",
                                 "{leaf} RUNPATH entry '/usr/local/lib': an absolute path"),
    "exec_stack": ("cuda", "test_no_executable_stack",
                   "mxnet/libmxnet.so: PT_GNU_STACK asks for an executable stack (RWX)"),
    "text_relocations": ("cuda", "test_no_text_relocations", "mxnet/libmxnet.so: has text relocations (DT_TEXTREL)"),
    "wrong_class": ("cuda", "test_elf_matches_platform_tag",
                    "{leaf}: is ELF32 EM_386 little-endian, but the wheel's platform tag says x86_64 "
                    "(ELF64 EM_X86_64 little-endian)"),
    "stale_lib": ("cuda", "test_no_unneeded_bundled_libraries", "mxnet/lib/libmxnet_selftest_stale.so.1"),
    "soname_conflict": ("cuda", "test_one_content_per_soname",
                        "{core_name}: {core}, mxnet/lib/libopencv_core.so.4.6.0 differ"),
    "glibc_too_new": ("cuda", "test_symbol_versions_within_floor",
                      "mxnet/libmxnet.so needs GLIBC_2.40 (from libc.so.6); the floor is GLIBC_2.39"),
    "duplicate_copy": ("cuda", "test_no_duplicate_libraries",
                       "{core} = mxnet/lib/libopencv_core.so.4.6.0"),
    "unstripped": ("cuda", "test_libraries_carry_no_debug_info",
                   "1 library is not stripped of debug information:\n  mxnet/libmxnet.so: .debug_abbrev, "),
    # Issue 20: the loader's, pip's and the driver's rules.
    "cuda11_majors": ("cuda", "test_every_needed_resolves",
                      "libcudart.so.11.0 has major 11, but the cuda profile accepts only libcudart.so.13"),
    "needed_with_slash": ("cuda", "test_every_needed_resolves",
                          "NEEDED entry 'deps/libmxnet_selftest_nosoname.so' contains a slash"),
    # ... and nvidia/ is the nvidia-* dependencies' top-level name (issue 32: the ownership gate).
    "libcuda_in_runpath_dir": ("cuda", ("test_nothing_forbidden_bundled", "test_top_level_names_are_own"),
                               "nvidia/cu13/lib/libcuda.so.1: libcuda.so.1 is the NVIDIA driver's"),
    "soname_conflict_in_runpath_dir": ("cuda", ("test_one_content_per_soname", "test_top_level_names_are_own"),
                                       "{core_name}: {core}, nvidia/cu13/lib/{core_name} differ"),
    "sm100a_only": ("cuda", "test_sass_for_every_requested_arch",
                    "mxnet/libmxnet.so has no SASS for sm_100 (it carries sm_80 sm_86 sm_89 sm_90 sm_100a sm_120): "
                    "these GPUs lose native code (sm_100: Blackwell datacenter (B200, GB200) (sm_100a runs on "
                    "compute capability 10.0 only (this compute capability only), sm_100 promises 10.0, 10.3"),
    "second_lib_narrow": ("cuda", "test_sass_for_every_requested_arch",
                          "mxnet/lib/libmxnet_selftest_kernels.so.1 has no SASS for sm_100"),
    "requires_dist_conflict": ("cuda", "test_requires_dist_unambiguous",
                               "Requires-Dist: 'nvidia-cublas<14,>=13.5' and Requires-Dist: 'nvidia-cublas<13.5,>=13.1' "
                               "name nvidia-cublas: conflicting specifiers"),
    # Issue 32: the wheel as pip installs it (build_steps.readers.install_map).
    "root_is_purelib": ("cuda", "test_platform_wheel_is_platlib",
                        "WHEEL says Root-Is-Purelib: true, but its platform tag says linux_x86_64 and it carries "
                        "native code"),
    "unknown_scheme": ("cuda", "test_members_land_in_their_schemes",
                       "mxnet-2.0.0+cu13.bw.20260614.1.data/share/doc/mxnet/LICENSE: "
                       "mxnet-2.0.0+cu13.bw.20260614.1.data/share/ is no install scheme"),
    "startup_pth": ("cuda", "test_no_startup_code",
                    "mxnet-selftest-init.pth (installs as mxnet-selftest-init.pth), first line: "
                    "\"import os; os.environ.setdefault('MXNET_SELFTEST_PTH', '1')\""),
    "owns_onnx": ("cuda", "test_top_level_names_are_own",
                  "onnx/ (onnx/__init__.py) belongs to onnx, which this wheel declares in Requires-Dist"),
    "shadows_tests": ("cuda", "test_top_level_names_are_own", "tests/ (tests/__init__.py) is a well-known name (tests)"),
    "platlib_collision": ("cuda", "test_members_land_in_their_schemes",
                          "mxnet/__init__.py and mxnet-2.0.0+cu13.bw.20260614.1.data/platlib/mxnet/__init__.py: all "
                          "install to mxnet/__init__.py in site-packages"),
    "runpath_from_data_scheme": ("cuda", "test_runpaths_are_origin_relative",
                                 "mxnet-2.0.0+cu13.bw.20260614.1.data/data/lib/libmxnet_selftest_data.so.1 RUNPATH "
                                 "entry '$ORIGIN/../../../mxnet/lib': the library installs to the data scheme"),
    "not_elf_bundled": ("cuda", "test_every_needed_resolves",
                        "{imgcodecs} is bundled under the library's name but is not an "
                        "ELF file (it starts with b'/* GNU l'"),
    # Issue 43: what pip and the interpreter decide from METADATA, entry points and file names.
    "requires_python_excludes_tag": ("cuda", "test_requires_python_admits_the_tags",
                                     "the tag's interpreter cp311 is Python 3.11, but Requires-Python '>=3.12' "
                                     "excludes it"),
    "extension_other_python": ("cuda", "test_extension_modules_match_the_tags",
                               "mxnet/_ffi/_cy3/core.cpython-310-x86_64-linux-gnu.so: its suffix "
                               ".cpython-310-x86_64-linux-gnu.so is not one the tag cp311-cp311-linux_x86_64 imports"),
    "script_replaces_pip": ("cuda", "test_scripts_replace_nothing_in_the_venv",
                            "console_scripts pip = mxnet.tools.pip_shim:main: pip belongs to the venv"),
    "ptx_isa_too_new": ("cuda", "test_ptx_isa_within_driver_floor",
                        "mxnet/libmxnet.so: PTX ISA 9.2 needs a CUDA release newer than any in "
                        "build_steps/profiles.toml [ptx_isa_drivers]; the profile's driver floor is R580, and the "
                        "newest it runs is ISA 9.0 (CUDA 13.0)"),
    "version_no_date": ("cuda", "test_version_follows_release_scheme", "but 20261314 is no calendar date"),
    "version_cu12_local": ("cuda", "test_version_follows_release_scheme",
                           "version '2.0.0+cu12.bw.20260614.1' does not follow the cuda release scheme "
                           "2.0.0+cu13.bw.<YYYYMMDD>[.<N>]"),
}


@pytest.mark.parametrize("variant", sorted(REGRESSIONS))
def test_regression_fails_exactly_its_gate(gates, selftest_wheels, variant):
    flavor, gate, fragment = REGRESSIONS[variant]
    expected = {gate} if isinstance(gate, str) else set(gate)
    names = {k: selftest_wheels[k] for k in ("inner", "leaf", "core", "imgcodecs")}
    fragment = fragment.format(**names, core_name=names["core"].rsplit("/", 1)[-1],
                               imgcodecs_name=names["imgcodecs"].rsplit("/", 1)[-1])
    result = _audit(gates, selftest_wheels["variants"][variant], f"--flavor={flavor}",
                    f"--mxnet-src={selftest_wheels['src']}")
    text = result.stdout.str()
    assert result.ret == 1, text
    assert _failed(result) == expected, text
    assert fragment in text, text
    assert "Traceback" not in text
    result.assert_outcomes(passed=N_GATES - len(expected), failed=len(expected))
    # One message per fault: said by its gate, not again by another one ("not bundled", "stale").
    if variant in ONE_MESSAGE:
        assert text.count(ONE_MESSAGE[variant]) == 1, text


#: variant -> the words of its fault, which must come once (issue 20)
ONE_MESSAGE = {"not_elf_bundled": "not an ELF file", "cuda11_majors": "libcudnn.so.8 has major 8"}


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


def test_glibc_floor_option_lowers_the_floor(gates, selftest_wheels):
    # The good wheel, built on Debian 12 (glibc 2.36), promised to a glibc 2.30 host: it is not.
    result = _audit(gates, selftest_wheels["good_cuda"], f"--mxnet-src={selftest_wheels['src']}",
                    "--glibc-floor=2.30")
    text = result.stdout.str()
    assert _failed(result) == {"test_symbol_versions_within_floor"}, text
    assert re.search(r"needs GLIBC_2\.3[1-9] \(from libc\.so\.6\); the floor is GLIBC_2\.30", text), text
    assert "GLIBC_2.30 (--glibc-floor)" in text, text
    # ... and promised to its own glibc it passes, the report naming the highest versions and who needs them.
    result = _audit(gates, selftest_wheels["good_cuda"], f"--mxnet-src={selftest_wheels['src']}",
                    "--glibc-floor=GLIBC_2.36,GLIBCXX_3.4.30,CXXABI_1.3.13")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*highest symbol versions: GLIBC_2.36 (mxnet/lib/*), GLIBCXX_3.4.30 (*)*"])


def test_glibc_floor_option_refuses_nonsense(gates, selftest_wheels):
    result = _audit(gates, selftest_wheels["good_cuda"], "--glibc-floor=GLIBC_two")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "--glibc-floor GLIBC_two" in text and "Traceback" not in text, text


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


def test_good_wheel_reports_every_library_with_gpu_code(gates, selftest_wheels, tmp_path):
    # The per-library arch table, in the report and the JSON: the second CUDA library is read too.
    out = tmp_path / "prov.json"
    result = _audit(gates, selftest_wheels["variants"]["second_lib_narrow"], f"--provenance-json={out}")
    doc = json.loads(out.read_text())
    lib = f"mxnet/lib/{selftest_wheels['second_lib_soname']}"
    assert sorted(doc["facts"]["fatbins"]) == sorted(["mxnet/libmxnet.so", lib]), doc["facts"]["fatbins"].keys()
    assert doc["facts"]["fatbins"][lib]["sass"] == ["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"]
    assert doc["facts"]["fatbins"]["mxnet/libmxnet.so"]["sass"] == ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
    result.stdout.fnmatch_lines(["*GPU code by library (2 with a .nv_fatbin):*",
                                 "*mxnet/libmxnet.so: SASS sm_80 sm_86 sm_89 sm_90 sm_100 sm_120; PTX compute_120;*",
                                 f"*{lib}: SASS sm_80 sm_86 sm_89 sm_90 sm_120; PTX compute_120;*"])


def test_brace_origin_is_origin(gates, selftest_wheels):
    # ${ORIGIN} is the loader's $ORIGIN: every gate passes and no entry is called a build-host path.
    result = _audit(gates, selftest_wheels["variants"]["brace_origin"], f"--mxnet-src={selftest_wheels['src']}")
    text = result.stdout.str()
    assert result.ret == 0, text
    result.assert_outcomes(passed=N_GATES)
    assert "build-host paths" not in text and "${ORIGIN}/lib" in text, text


@pytest.mark.parametrize("case, fragment", [
    ("crc_wrong", "member 'mxnet/__init__.py' is corrupt (CRC-32 mismatch: the zip says"),
    ("zip_bomb", "member 'mxnet/zeros.bin' declares 67108864 bytes stored in"),
])
def test_unextractable_wheel_is_bad_input(gates, selftest_wheels, case, fragment):
    # pip refuses both; the audit says so once, as bad input (exit 4), before any gate runs (issue 43;
    # every kind on a small wheel: selftest/test_wheel_refusals.py).
    result = _audit(gates, selftest_wheels["variants"][case], "--flavor=cpu")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, text
    assert text.count(fragment) == 1, text
    assert _failed(result) == set(), text
    assert "Traceback" not in text


def test_local_header_disagreeing_with_central_directory_is_bad_input(gates, selftest_wheels):
    # The local header says ../../../evil.pyc, the central directory (and RECORD) mxnet/__init__.py:
    # a usage error (exit 4) naming the member and both names, before any gate runs.
    result = _audit(gates, selftest_wheels["header_mismatch"], "--flavor=cpu")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, text
    assert ("member 'mxnet/__init__.py': its local file header and the central directory disagree (the local "
            "header names it '../../../evil.pyc', the central directory 'mxnet/__init__.py')") in text, text
    assert "Traceback" not in text, text


def test_bundle_under_data_platlib_is_judged_where_it_installs(gates, selftest_wheels):
    # mxnet/lib/* shipped as <name>.data/platlib/mxnet/lib/*: pip installs it to mxnet/lib/, where
    # libmxnet.so's $ORIGIN/lib finds it. Judged by member names it would be "not bundled".
    result = _audit(gates, selftest_wheels["variants"]["bundle_in_data_platlib"],
                    f"--mxnet-src={selftest_wheels['src']}")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=N_GATES)
    result.stdout.fnmatch_lines(["*installs as: platlib root (Root-Is-Purelib: false); top-level mxnet; platlib *"])
