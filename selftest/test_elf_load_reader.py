"""build_steps.readers.elf_load (what the loader checks) and build_steps.readers.symbol_floor, on libraries built
here by gcc/ld and on the host's own libraries, cross-checked with binutils' readelf."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from build_steps.readers.elf import NotElfError
from build_steps.readers.elf_load import platform_arch, read_load_facts
from build_steps.errors import UsageError
from build_steps.readers.symbol_floor import effective_floor, parse_floor, split_version, tag_glibc
from selftest.fixtures_wheels import build_newer_glibc, build_plain_lib, compile_textrel

HOST_LIBS = ("/usr/lib/x86_64-linux-gnu/libopencv_core.so.406", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6")


def _run(*cmd) -> str:
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True).stdout


def _drop_gnu_stack(src: Path, dest: Path) -> Path:
    """A copy whose PT_GNU_STACK header is PT_NULL: what an old toolchain's library looks like."""
    data = bytearray(src.read_bytes())
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for n in range(phnum):
        at = phoff + n * phentsize
        if struct.unpack_from("<I", data, at)[0] == 0x6474E551:  # PT_GNU_STACK
            struct.pack_into("<I", data, at, 0)
    dest.write_bytes(bytes(data))
    return dest


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("elf_load")
    out = {"plain": build_plain_lib(d / "plain", "libplain.so.1"),
           "m32": build_plain_lib(d / "m32", "libm32.so.1", m32=True)}
    (d / "f.c").write_text("int f(void) { return 1; }\n")
    out["execstack"] = d / "libexecstack.so"
    _run("gcc", "-shared", "-fPIC", "-Wl,-z,execstack", "-o", out["execstack"], d / "f.c")
    out["textrel"] = d / "libtextrel.so"
    _run("gcc", "-shared", "-Wl,-z,notext", "-o", out["textrel"], compile_textrel(d / "tr"))
    obj, stub = build_newer_glibc(d / "glibc")
    out["glibc240"] = d / "libnew.so"
    _run("gcc", "-shared", "-o", out["glibc240"], obj, stub)
    out["nostack"] = _drop_gnu_stack(out["plain"], d / "libnostack.so")
    return out


def test_plain_library(libs):
    f = read_load_facts(libs["plain"])
    assert (f.elf_class, f.little_endian, f.machine, f.elf_type) == (64, True, "EM_X86_64", "ET_DYN")
    assert f.stack == "rw" and not f.exec_stack and not f.textrel


def test_execstack_textrel_and_class_are_seen(libs):
    assert read_load_facts(libs["execstack"]).stack == "rwx"
    assert read_load_facts(libs["execstack"]).exec_stack
    assert read_load_facts(libs["textrel"]).textrel
    m32 = read_load_facts(libs["m32"])
    assert (m32.elf_class, m32.machine) == (32, "EM_386")


def test_missing_gnu_stack_means_executable(libs):
    f = read_load_facts(libs["nostack"])
    assert f.stack is None and f.exec_stack
    assert "GNU_STACK" not in _run("readelf", "-lW", libs["nostack"])


def test_version_needs_of_a_newer_host(libs):
    needs = [(n.library, n.version) for n in read_load_facts(libs["glibc240"]).version_needs]
    assert ("libc.so.6", "GLIBC_2.40") in needs


@pytest.mark.parametrize("path", HOST_LIBS)
def test_matches_readelf_on_host_libraries(path):
    if shutil.which("readelf") is None or not Path(path).exists():
        pytest.skip("readelf or the host library is missing")
    f = read_load_facts(path)
    text = _run("readelf", "-VW", path)
    part = text.split("Version needs section", 1)[1] if "Version needs section" in text else ""
    lib, want = None, []
    for line in part.splitlines():
        m = re.search(r"File: (\S+)", line)
        if m:
            lib = m.group(1)
        m = re.search(r"Name: (\S+)\s+Flags: (\S+)", line)
        if m:
            want.append((lib, m.group(1), m.group(2) == "WEAK"))
    assert [(n.library, n.version, n.weak) for n in f.version_needs] == want
    stack = re.search(r"GNU_STACK.*\s(RWE?)\s", _run("readelf", "-lW", path)).group(1)
    assert f.stack == ("rwx" if stack == "RWE" else "rw")
    assert f.textrel == ("TEXTREL" in _run("readelf", "-dW", path))


def test_truncated_is_not_elf(libs, tmp_path):
    cut = tmp_path / "cut.so"
    cut.write_bytes(libs["plain"].read_bytes()[:200])
    with pytest.raises(NotElfError, match="truncated"):
        read_load_facts(cut)


def test_platform_arch():
    assert platform_arch("linux_x86_64") == "x86_64"
    assert platform_arch("manylinux_2_28_aarch64") == "aarch64"
    assert platform_arch("manylinux2014_i686") == "i686"
    assert platform_arch("any") is None and platform_arch("macosx_11_0_arm64") is None


def test_symbol_floor_parsing():
    assert split_version("GLIBC_2.34") == ("GLIBC", (2, 34))
    assert split_version("GLIBC_PRIVATE") is None and split_version("GCC_3.0") is None
    assert parse_floor("2.28") == {"GLIBC": "2.28"}
    assert parse_floor("GLIBC_2.28, GLIBCXX_3.4.25,CXXABI_1.3.11") == {
        "GLIBC": "2.28", "GLIBCXX": "3.4.25", "CXXABI": "1.3.11"}
    for bad in ("GLIBC_two", "", "LIBFOO_1.0"):
        with pytest.raises(UsageError, match="--glibc-floor"):
            parse_floor(bad)


def test_effective_floor_takes_the_lowest_promise():
    profile = {"GLIBC": "2.39", "GLIBCXX": "3.4.33"}
    assert tag_glibc(["cp311-cp311-linux_x86_64"]) == (None, None)
    assert tag_glibc(["py3-none-manylinux2014_x86_64"]) == ("2.17", "manylinux2014_x86_64")
    floor, source = effective_floor(profile, None, ["cp312-cp312-manylinux_2_28_x86_64"])
    assert floor == {"GLIBC": "2.28", "GLIBCXX": "3.4.33"}
    assert source["GLIBC"] == "platform tag manylinux_2_28_x86_64" and source["GLIBCXX"] == "profile"
    floor, source = effective_floor(profile, {"GLIBC": "2.35"}, ["cp311-cp311-linux_x86_64"])
    assert floor["GLIBC"] == "2.35" and source["GLIBC"] == "--glibc-floor"
