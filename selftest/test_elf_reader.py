"""build_steps.readers.elf against gcc-built libraries (see selftest/fixtures_readers.py)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import build_steps.readers.elf as elf
from build_steps.readers.elf import (NotElfError, expand_origin, find_strings, is_elf, read_dynamic,
                             section_span, uses_origin)
from build_steps.errors import WheelError

COMMIT = "4f2a9c0d1e3b5a7968f0c2d4e6a8b0c1d3e5f7a9"
STAMP = rb"[0-9a-f]{40}|Unavailable"


def test_runpath_needed_soname(elf_libs):
    info = read_dynamic(elf_libs["runpath"])
    assert info.needed == ["libdep.so.1", "libm.so.6", "libc.so.6"]
    assert info.soname == "librunpath.so.2"
    assert info.rpath is None
    assert info.runpath == ["$ORIGIN/lib", "$ORIGIN/../nvidia/cudnn/lib"]
    assert info.search_tag == "RUNPATH"
    assert info.search_path == ["$ORIGIN/lib", "$ORIGIN/../nvidia/cudnn/lib"]


def test_rpath_is_reported_as_rpath(elf_libs):
    info = read_dynamic(elf_libs["rpath"])
    assert info.runpath is None
    assert info.rpath == ["/opt/old/lib", "$ORIGIN"]
    assert info.search_tag == "RPATH"
    assert info.search_path == ["/opt/old/lib", "$ORIGIN"]
    assert info.soname is None


def test_runpath_wins_over_rpath(elf_libs):
    """Both tags present: glibc ignores DT_RPATH, so must we."""
    info = read_dynamic(elf_libs["both"])
    assert info.rpath == ["/opt/old/lib"]
    assert info.runpath == ["$ORIGIN/lib"]
    assert info.search_tag == "RUNPATH"
    assert info.search_path == ["$ORIGIN/lib"]


def test_no_search_path(elf_libs):
    info = read_dynamic(elf_libs["none"])
    assert info.search_tag is None and info.search_path == []
    assert info.soname == "libnone.so"


def test_matches_readelf(elf_libs):
    """An independent reader (binutils) sees the same entries."""
    out = subprocess.run(["readelf", "-d", str(elf_libs["both"])], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("readelf not available")
    assert "(RPATH)" in out.stdout and "(RUNPATH)" in out.stdout and "/opt/old/lib" in out.stdout
    needed = [line.split("[", 1)[1].rstrip("]") for line in out.stdout.splitlines() if "(NEEDED)" in line]
    assert read_dynamic(elf_libs["both"]).needed == needed


def test_without_section_headers_the_dynamic_segment_is_read(elf_libs, tmp_path):
    """A library whose section header table is gone (sstrip, some packers): the loader needs
    only PT_DYNAMIC, and so does read_dynamic. The ELF header is edited to say "no sections"."""
    import struct
    stripped = tmp_path / "libstripped.so"
    blob = bytearray(elf_libs["runpath"].read_bytes())
    assert blob[4] == 2, "64-bit ELF expected"
    struct.pack_into("<Q", blob, 0x28, 0)            # e_shoff
    struct.pack_into("<HHH", blob, 0x3A, 0, 0, 0)    # e_shentsize, e_shnum, e_shstrndx
    stripped.write_bytes(bytes(blob))
    out = subprocess.run(["readelf", "-S", str(stripped)], capture_output=True, text=True)
    assert "There are no sections" in out.stdout, out.stdout
    assert read_dynamic(stripped) == read_dynamic(elf_libs["runpath"])


@pytest.mark.parametrize("spelling", ["$ORIGIN/lib", "${ORIGIN}/lib"])
def test_origin_spellings(spelling, tmp_path):
    assert uses_origin(spelling)
    assert expand_origin(spelling, tmp_path / "mxnet") == tmp_path / "mxnet" / "lib"
    assert expand_origin(spelling.replace("/lib", "/../nvidia/cudnn/lib"), tmp_path / "mxnet") \
        == tmp_path / "nvidia" / "cudnn" / "lib"


def test_brace_origin_from_a_real_library(elf_libs, tmp_path):
    info = read_dynamic(elf_libs["brace"])
    assert info.runpath == ["${ORIGIN}/lib"]
    assert expand_origin(info.runpath[0], tmp_path) == tmp_path / "lib"


def test_not_origin():
    assert not uses_origin("/usr/local/cuda/lib64")
    assert not uses_origin("$ORIGINAL/lib")
    assert expand_origin("/opt/x/../lib", Path("/ignored")) == Path("/opt/lib")


def test_not_elf(elf_libs):
    assert not is_elf(elf_libs["not_elf"])
    with pytest.raises(NotElfError, match=r"not_elf.so is not an ELF file \(it starts with"):
        read_dynamic(elf_libs["not_elf"])


def test_not_elf_is_a_wheel_error(elf_libs):
    """Gates catch WheelError; a non-ELF libmxnet.so must land there, not as a traceback."""
    with pytest.raises(WheelError):
        read_dynamic(elf_libs["not_elf"])


@pytest.mark.parametrize("which", ["truncated", "header_only"])
def test_truncated_elf(elf_libs, which):
    assert is_elf(elf_libs[which])  # the magic is there; only the rest is missing
    with pytest.raises(NotElfError, match="is not an ELF file .*(truncated|malformed)"):
        read_dynamic(elf_libs[which])


def test_missing_file(tmp_path):
    assert not is_elf(tmp_path / "nope.so")
    with pytest.raises(NotElfError, match="cannot open"):
        read_dynamic(tmp_path / "nope.so")


def test_section_span(elf_libs):
    span = section_span(elf_libs["runpath"], ".rodata")
    assert span is not None
    offset, size = span
    data = Path(elf_libs["runpath"]).read_bytes()[offset:offset + size]
    assert COMMIT.encode() in data
    assert section_span(elf_libs["runpath"], ".nv_fatbin") is None
    assert section_span(elf_libs["runpath"], ".bss") is None  # NOBITS: no bytes in the file


def test_find_strings_commit_stamp(elf_libs):
    found = find_strings(elf_libs["runpath"], STAMP)
    assert found == [COMMIT, "Unavailable"]
    assert find_strings(elf_libs["runpath"], rb"[0-9a-f]{40}") == [COMMIT]
    # whole strings only: a prefix of a string is not a match
    assert find_strings(elf_libs["runpath"], rb"4f2a9c0d") == []
    assert find_strings(elf_libs["runpath"], STAMP, sections=(".nosuch",)) == []


@pytest.mark.parametrize("chunk", [1, 7, 41, 64])
def test_find_strings_across_chunk_boundaries(elf_libs, monkeypatch, chunk):
    """The scan reads in chunks; a string cut by a chunk boundary must still be found once."""
    monkeypatch.setattr(elf, "_CHUNK", chunk)
    assert find_strings(elf_libs["runpath"], STAMP) == [COMMIT, "Unavailable"]
