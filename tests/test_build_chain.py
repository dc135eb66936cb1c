"""Build gates: what the chain itself promises (configure cache, compile, bundle, wheel).

Each gate reads a product of the build fixtures and names the regression it exists for. The
fixtures already stop on a broken step; these gates state the promises explicitly so a run's
report lists them, and so a cache or staging dir altered between steps cannot slip through.
"""
from __future__ import annotations


import pytest
from build_steps.readers.wheel_name import parse_wheel_name
from packaging.version import Version

from build_steps import source
from build_steps.readers.cmake_cache import to_bool
from build_steps.configure import FOUND_EVIDENCE
from build_steps.readers.elf import is_elf, read_dynamic
from build_steps.profile_data import CMAKE_FEATURES
from build_steps.arch import missing_release_archs

# The chain builds the Linux (ELF) wheel: a macOS wheel is built on a Mac, so these are not its gates.
pytestmark = [pytest.mark.release, pytest.mark.build, pytest.mark.elf]


def test_source_tree_has_every_submodule(mxnet_source, options):
    needs = source.needed_submodules(mxnet_source.root,
                                     {**options.profile.configure_flags, **options.cmake_defines})
    empty = {s: why for s, why in needs.items()
             if source.submodule_state(mxnet_source.root, s).kind == "empty"}
    assert not empty, (f"{mxnet_source.root} has empty submodules the build needs {empty}; "
                       f"run `{source.FIX}`")


def test_cmake_cache_toggles_match_profile(configured_tree, profile):
    wrong = {k: configured_tree.cache.get(k) for k in CMAKE_FEATURES
             if to_bool(configured_tree.cache.get(k)) != bool(profile.features.get(k))}
    assert not wrong, (f"CMake cache toggles {wrong} disagree with the {profile.name} profile: the wheel "
                       f"would ship with features missing or extra; reconfigure {configured_tree.build_dir}")


def test_cmake_found_every_wanted_library(configured_tree, profile):
    lost = [key for key, (evidence, _pkg) in FOUND_EVIDENCE.items()
            if profile.features.get(key)
            and not all(configured_tree.cache.get(e) and "NOTFOUND" not in configured_tree.cache.get(e, "")
                        for e in evidence)]
    assert not lost, ("CMake did not find " + ", ".join(
        f"{k} (install {FOUND_EVIDENCE[k][1]})" for k in lost)
        + ": the feature is silently compiled out while the cache still says ON")


def test_nvcc_gencode_flags_match_requested_arch(configured_tree, options, profile):
    if not profile.is_cuda:
        assert not configured_tree.gencode, f"a CPU build emitted -gencode flags {configured_tree.gencode}"
        return
    want = set(options.cuda_arch.requested.gencode_flags)
    have = set(configured_tree.gencode)
    assert have == want, (f"CMake emitted -gencode {sorted(have)} but MXNET_CUDA_ARCH={options.cuda_arch.requested.text} "
                          f"asks for {sorted(want)}: missing {sorted(want - have)}; check that "
                          "CMAKE_CUDA_ARCHITECTURES is OFF and reconfigure")


def test_compile_produced_an_elf_libmxnet(libmxnet):
    assert is_elf(libmxnet.library), (f"{libmxnet.library} is not an ELF shared library: the compile "
                                      f"step's output is broken (log: {libmxnet.log})")


def test_bundled_libraries_carry_origin_runpath(staged_package):
    assert staged_package.bundled, ("nothing was bundled into python/mxnet/lib: libmxnet.so has no "
                                       "libopencv_* NEEDED; install libopencv-dev and reconfigure with USE_OPENCV=ON")
    bad = {}
    for b in staged_package.bundled:
        info = read_dynamic(b["path"])
        if info.runpath != ["$ORIGIN"]:
            bad[b["soname"]] = info.runpath
    assert not bad, (f"bundled libraries without their own $ORIGIN RUNPATH: {bad}; their own "
                     "dependencies would not resolve inside the wheel (RUNPATH is not inherited)")


def test_bundled_sonames_are_linked(staged_package):
    from pathlib import Path
    lib_dir = Path(staged_package.package_dir) / "lib"
    missing = [b["soname"] for b in staged_package.bundled if not (lib_dir / b["soname"]).exists()]
    assert not missing, f"SONAME entries missing in {lib_dir}: {missing}; the loader looks them up by SONAME"


def test_libmxnet_runpath_is_the_profiles(staged_package, profile):
    info = read_dynamic(staged_package.libmxnet)
    assert list(info.runpath or []) == list(profile.runpath), (
        f"libmxnet.so RUNPATH is {info.runpath}, the {profile.name} profile wants {list(profile.runpath)}: "
        "bundled OpenCV or the pip CUDA libraries would not be found from inside the wheel")


def test_libcuda_needed_policy(staged_package, profile):
    needed = read_dynamic(staged_package.libmxnet).needed
    if profile.needs_libcuda:
        assert "libcuda.so.1" in needed, ("libmxnet.so has no DT_NEEDED libcuda.so.1: link "
                                          "CUDA::cuda_driver in CMakeLists.txt and rebuild")
    else:
        assert not [n for n in needed if n.startswith("libcuda")], (
            f"the CPU libmxnet.so NEEDs {needed}: it links the CUDA driver; reconfigure with USE_CUDA=OFF")


def test_wheel_has_requested_version_and_binary_tag(built_wheel, options, profile):
    parsed = parse_wheel_name(built_wheel)
    version, tags = parsed.version, parsed.tags
    want = Version(options.wheel_version) if options.wheel_version else None
    if want is not None:
        assert version == want, f"{built_wheel.name} has version {version}, --wheel-version asked {want}"
    else:
        assert str(version).startswith(profile.version_prefix), (
            f"{built_wheel.name}: version {version} does not follow {profile.version_prefix}.<date>")
    assert all(t.platform.startswith("linux") and t.interpreter.startswith("cp") for t in tags), (
        f"{built_wheel.name} is tagged {sorted(map(str, tags))}, not cpXY-cpXY-linux_x86_64: setup.py "
        "lost its has_ext_modules() Distribution")


def test_requested_arch_covers_the_release_arch_list(configured_tree, options, profile):
    """A narrower --cuda-arch builds fine and passes a coverage check against itself; the release
    promises the profile's list, so every GPU family of it must be in the build."""
    if not profile.is_cuda:
        return
    missing = missing_release_archs(profile, options.cuda_arch.requested)
    assert not missing, (
        "this build leaves out " + ", ".join(missing) + f" of the {profile.name} release list {profile.cuda_arch}: those GPUs would get no kernel "
        f"image; rebuild with --cuda-arch '{profile.cuda_arch}'")
