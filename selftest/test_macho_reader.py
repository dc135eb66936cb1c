"""build_steps.readers.macho on real Mach-O files (clang + ld64.lld), the dyld-style resolution of
build_steps.readers.macho_audit, and how a macosx_* wheel picks the macOS flavor."""
from __future__ import annotations

import pytest

from build_steps.errors import UsageError
from build_steps.readers.macho import NotMachOError, is_macho, read_macho, signature_problem, version_text
from build_steps.readers.macho_audit import collect_macho, parse_platform_tags, tag_warnings
from build_steps.profile_data import MACOS_POLICY
from build_steps.options import make_options
from selftest.fixtures_macos import _SYSTEM_C, _run, link_dylib, llvm_tool, rewrite_reference


@pytest.fixture(scope="module")
def dylibs(tmp_path_factory):
    d = tmp_path_factory.mktemp("macho")
    arm = link_dylib(d / "libSystem.B.dylib", _SYSTEM_C, install_name="/usr/lib/libSystem.B.dylib")
    lib = link_dylib(d / "libfoo.dylib", "extern int macos_selftest_system(void);\n"
                     "int foo(void) { return macos_selftest_system(); }", install_name="@rpath/libfoo.dylib",
                     libs=("libSystem.B.dylib",), lib_dir=d, rpaths=("@loader_path/lib", "/opt/homebrew/lib"),
                     target="arm64-apple-macos13.4")
    (d / "x86").mkdir()
    x86 = link_dylib(d / "x86" / "libSystem.B.dylib", _SYSTEM_C, install_name="/usr/lib/libSystem.B.dylib",
                     target="x86_64-apple-macos10.13")
    fat = d / "fat.dylib"
    _run([llvm_tool("lipo"), "-create", arm, x86, "-output", fat])
    return {"arm": arm, "lib": lib, "x86": x86, "fat": fat, "dir": d}


def test_thin_dylib_facts(dylibs):
    info = read_macho(dylibs["lib"])
    assert not info.fat and info.archs == ["arm64"]
    sl = info.slices[0]
    assert sl.filetype == "dylib" and sl.install_id == "@rpath/libfoo.dylib"
    assert sl.loads == [("LC_LOAD_DYLIB", "/usr/lib/libSystem.B.dylib")]
    assert sl.rpaths == ["@loader_path/lib", "/opt/homebrew/lib"]
    assert (sl.platform, sl.min_os, sl.version_command) == ("macOS", "13.4", "LC_BUILD_VERSION")
    assert sl.signed  # ld64.lld signs arm64 output ad hoc, as Apple's ld does


def test_fat_dylib_lists_its_slices(dylibs):
    info = read_macho(dylibs["fat"])
    assert info.fat and info.archs == ["x86_64", "arm64"]
    # x86_64 for macOS 10.13 gets the old command, arm64 the new one
    assert info.slice_for("x86_64").version_command == "LC_VERSION_MIN_MACOSX"
    assert info.slice_for("x86_64").min_os == "10.13"
    assert info.slice_for("arm64").min_os == "11.0"  # no arm64 Mac runs anything older


def test_not_macho_is_named(dylibs, tmp_path):
    with pytest.raises(NotMachOError, match=r"libc\.so\.6 is not a Mach-O file \(an ELF file\)"):
        read_macho("/lib/x86_64-linux-gnu/libc.so.6")
    cut = tmp_path / "cut.dylib"
    cut.write_bytes(dylibs["lib"].read_bytes()[:200])
    assert is_macho(cut)
    with pytest.raises(NotMachOError, match="truncated or corrupt"):
        read_macho(cut)
    java = tmp_path / "A.class"
    java.write_bytes(bytes.fromhex("cafebabe00000034") + b"\0" * 32)  # same magic as a fat header
    assert not is_macho(java)


def test_version_text():
    assert version_text(0x000A0D00) == "10.13"
    assert version_text(0x000D0401) == "13.4.1"


def test_platform_tags():
    mac, other = parse_platform_tags(["cp312-cp312-macosx_11_0_arm64", "py3-none-macosx_10_9_universal2",
                                      "py3-none-linux_x86_64"])
    assert [(t.tag, t.min_os, t.archs) for t in mac] == [
        ("macosx_10_9_universal2", "10.9", ("arm64", "x86_64")), ("macosx_11_0_arm64", "11.0", ("arm64",))]
    assert other == ["linux_x86_64"]


def _wheel(tmp_path, name):
    import zipfile
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    return str(path)


def test_flavor_from_the_wheel_tag(tmp_path):
    mac = _wheel(tmp_path, "mxnet-2.0.0+cpu.macos.20260614-cp312-cp312-macosx_11_0_arm64.whl")
    linux = _wheel(tmp_path, "mxnet-2.0.0+cpu.linux.20260614-cp312-cp312-linux_x86_64.whl")
    assert make_options({"wheel": mac}).profile.name == "macos"
    assert make_options({"wheel": linux}).profile.name == "cuda"  # unchanged default
    assert make_options({"wheel": mac, "flavor": "cpu"}).profile.name == "cpu"  # an explicit flavor wins
    with pytest.raises(UsageError, match="--flavor macos audits an existing wheel"):
        make_options({"flavor": "macos"})


def test_tag_above_every_binary_is_a_warning(dylibs, tmp_path):
    import shutil
    (tmp_path / "mxnet").mkdir()
    shutil.copyfile(dylibs["lib"], tmp_path / "mxnet" / "libmxnet.dylib")  # needs macOS 13.4
    members = ["mxnet/libmxnet.dylib"]
    high = collect_macho(tmp_path, members, ["cp312-cp312-macosx_14_0_arm64"], MACOS_POLICY)
    assert tag_warnings(high) == ["the wheel is tagged macosx_14_0_arm64, but its binaries need only "
                                  "macOS 13.4: pip refuses it on the macOS versions in between"]
    assert tag_warnings(collect_macho(tmp_path, members, ["cp312-cp312-macosx_13_0_arm64"], MACOS_POLICY)) == []
    # its @rpath-less system reference resolves; the build-host LC_RPATH is in the image's facts
    assert [r.verdict for r in high.references] == ["system"]
    assert high.image_slice("mxnet/libmxnet.dylib").rpaths == ["@loader_path/lib", "/opt/homebrew/lib"]


def test_code_signature_checked_page_by_page(dylibs, tmp_path):
    import shutil
    lib = tmp_path / "libfoo.dylib"
    shutil.copyfile(dylibs["lib"], lib)
    assert signature_problem(lib, read_macho(lib).slices[0]) is None  # ld64.lld's ad-hoc signature
    # llvm-install-name-tool re-signs what it edits, as Apple's does for linker-signed files
    _run([llvm_tool("install-name-tool"), "-id", "@rpath/libbar.dylib", lib])
    assert signature_problem(lib, read_macho(lib).slices[0]) is None
    rewrite_reference(lib, "/usr/lib/libSystem.B.dylib", "/usr/lib/libSystem.dylib")  # macholib does not
    assert "do not match 1 of its" in signature_problem(lib, read_macho(lib).slices[0])
    x86 = read_macho(dylibs["fat"]).slice_for("x86_64")
    assert signature_problem(dylibs["fat"], x86) == "has no code signature (LC_CODE_SIGNATURE)"
