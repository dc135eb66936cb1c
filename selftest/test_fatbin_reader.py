"""build_steps.readers.fatbin against libraries nvcc compiled for known -gencode sets.

Each case's expected archs come from the -gencode flags it was built with (FATBIN_CASES); where
cuobjdump is installed, NVIDIA's own listing is the second oracle.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from build_steps.readers.elf import section_span
from build_steps.errors import WheelError
from build_steps.readers.fatbin import FatbinError, FatbinReport, read_fatbin
from selftest.fixtures_readers import FATBIN_CASES, RELEASE_SASS

CASES = sorted(FATBIN_CASES)


@pytest.mark.parametrize("case", CASES)
def test_archs_match_gencode(fatbin_lib, case):
    _sources, _flags, sass, ptx, compressed = FATBIN_CASES[case]
    report = read_fatbin(fatbin_lib(case))
    assert report is not None
    assert report.sass_names == sass
    assert report.ptx_names == ptx
    assert report.ptx_versions == ({(9, 0)} if ptx else set())  # nvcc 13.0 writes PTX ISA 9.0
    if compressed is True:
        assert all(e.compressed and e.compression == "zstd" for e in report.entries)
    elif compressed is False:
        assert not any(e.compressed for e in report.entries)


def test_release_set(fatbin_lib):
    report = read_fatbin(fatbin_lib("release"))
    assert report.sass_archs == set(RELEASE_SASS)
    assert report.ptx_archs == {120}
    assert report.containers_missing(set(RELEASE_SASS)) == []
    # every entry's payload lies inside the section
    base, size = section_span(fatbin_lib("release"), ".nv_fatbin")
    assert all(base <= e.offset and e.offset + e.size <= base + size for e in report.entries)
    data = json.loads(json.dumps(report.to_json()))
    assert data["sass_archs"] == list(RELEASE_SASS) and data["ptx"] == ["compute_120"]
    assert data["ptx_versions"] == ["9.0"]


def test_payloads_are_what_the_headers_say(fatbin_lib):
    """Uncompressed SASS payloads are cubins whose e_flags carry the same SM number."""
    path = fatbin_lib("uncompressed")
    blob = Path(path).read_bytes()
    for e in read_fatbin(path).entries:
        payload = blob[e.offset:e.offset + e.size]
        if e.kind == "sass":
            assert payload[:4] == b"\x7fELF"
            e_flags = struct.unpack_from("<I", payload, 0x30)[0]
            assert (e_flags >> 8) & 0xFF == e.arch
        else:
            assert payload.startswith(b"//") or b".version 9.0" in payload


def test_missing_sm100_is_detected(fatbin_lib):
    report = read_fatbin(fatbin_lib("no_sm100"))
    assert 100 not in report.sass_archs
    assert report.containers_missing(set(RELEASE_SASS)) == sorted(report.container_sass())


def test_two_units_two_sets_of_containers(fatbin_lib):
    one = read_fatbin(fatbin_lib("release"))
    two = read_fatbin(fatbin_lib("two_units"))
    assert two.containers > one.containers
    per = two.container_sass()
    assert len(per) >= 2 and all(archs == set(RELEASE_SASS) for archs in per.values())
    hist = two.histogram()
    assert hist["sm_100"] == len(per)


def test_variants(fatbin_lib):
    report = read_fatbin(fatbin_lib("variants"))
    assert report.sass_names == ["sm_80", "sm_90a", "sm_100f", "sm_120f"]
    assert report.sass_archs == {80, 90, 100, 120}  # variants fold onto their number
    assert {e.variant for e in report.entries if e.arch == 90} == {"a"}
    assert report.ptx_names == ["compute_120f"]


@pytest.mark.parametrize("case, wanted, kept", [
    ("release", 100, True),
    ("arch_specific", 100, False),   # sm_100a: compute capability 10.0 only, not B300 (10.3)
    ("variants", 90, False),         # sm_90a: no later GPU runs it
    ("variants", 100, True),         # sm_100f: its family is every GPU sm_100 promises (10.0, 10.3)
    ("variants", 120, True),         # sm_120f: 12.0 and 12.1
])
def test_variant_rules_on_real_nvcc_output(fatbin_lib, case, wanted, kept):
    """arch.SASS_VARIANTS judged on what nvcc 13 really writes (the same entries cuobjdump
    lists in test_cross_check_with_cuobjdump)."""
    from build_steps.arch import sass_keeps_promise
    report = read_fatbin(fatbin_lib(case))
    entries = [e for e in report.entries if e.kind == "sass" and e.arch == wanted]
    assert entries, report.sass_names
    assert any(sass_keeps_promise(e.arch, e.variant, wanted) for e in entries) is kept, report.sass_names


def test_no_fatbin_section(elf_libs):
    assert read_fatbin(elf_libs["runpath"]) is None


def _cuobjdump_names(cuobjdump, path, flag):
    out = subprocess.run([cuobjdump, flag, str(path)], capture_output=True, text=True)
    # cuobjdump exits non-zero with "does not contain device code" when the list is empty
    return re.findall(r"\.(sm_\d+[af]?)\.(?:cubin|ptx)\s*$", out.stdout, re.M)


@pytest.mark.parametrize("case", CASES)
def test_cross_check_with_cuobjdump(fatbin_lib, cuobjdump, case):
    path = fatbin_lib(case)
    report = read_fatbin(path)
    elf_names = _cuobjdump_names(cuobjdump, path, "--list-elf")
    ptx_names = _cuobjdump_names(cuobjdump, path, "--list-ptx")
    # cuobjdump lists an sm_100f cubin as sm_100 (the variant is only in the fatbin flags)
    # and a compute_120f PTX as sm_120f.
    ours_sass = sorted(f"sm_{e.arch}{e.variant if e.variant == 'a' else ''}"
                       for e in report.entries if e.kind == "sass")
    assert ours_sass == sorted(elf_names)
    ours_ptx = sorted(f"sm_{e.arch}{e.variant}" for e in report.entries if e.kind == "ptx")
    assert ours_ptx == sorted(ptx_names)


# ---------------------------------------------------------------------------------------------
# malformed sections: copy a real library and damage its .nv_fatbin

def _damaged(fatbin_lib, tmp_path, edit) -> Path:
    src = fatbin_lib("release")
    dst = tmp_path / "libdamaged.so"
    shutil.copyfile(src, dst)
    base, size = section_span(dst, ".nv_fatbin")
    with open(dst, "r+b") as fh:
        edit(fh, base, size)
    return dst


def test_container_overrunning_section(fatbin_lib, tmp_path):
    def edit(fh, base, size):
        fh.seek(base + 8)
        fh.write(struct.pack("<Q", size * 4))
    with pytest.raises(FatbinError, match=r"container 0 at section offset 0x0 .*past the section's end"):
        read_fatbin(_damaged(fatbin_lib, tmp_path, edit))


def test_entry_overrunning_container(fatbin_lib, tmp_path):
    def edit(fh, base, size):
        fh.seek(base + 16 + 8)   # first entry's padded payload size
        fh.write(struct.pack("<Q", 1 << 40))
    with pytest.raises(FatbinError, match=r"entry at section offset 0x10: .*runs past"):
        read_fatbin(_damaged(fatbin_lib, tmp_path, edit))


def test_section_without_any_container(fatbin_lib, tmp_path):
    def edit(fh, base, size):
        fh.seek(base)
        fh.write(b"\xAB" * size)
    with pytest.raises(FatbinError, match="holds no fatbin container") as info:
        read_fatbin(_damaged(fatbin_lib, tmp_path, edit))
    assert isinstance(info.value, WheelError)


def test_zeroed_first_container_is_skipped_as_padding(fatbin_lib, tmp_path):
    """Zero bytes between containers are padding: the walker steps over them."""
    whole = read_fatbin(fatbin_lib("release"))

    def edit(fh, base, size):
        fh.seek(base + 8)
        first_size = struct.unpack("<Q", fh.read(8))[0]
        fh.seek(base)
        fh.write(b"\0" * (16 + first_size))
    report = read_fatbin(_damaged(fatbin_lib, tmp_path, edit))
    assert report.containers == whole.containers - 1
    assert report.skipped_bytes == 0


def test_report_from_no_entries():
    empty = FatbinReport(containers=0, entries=[])
    assert empty.sass_archs == set() and empty.sass_names == [] and empty.containers_missing({80}) == []
    assert empty.to_json()["entries"] == 0
