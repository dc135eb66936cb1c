"""build_steps.readers.wheel against real wheels: written with zipfile (RECORD correct or broken on
purpose) and one built by ``python -m build`` from a tiny project."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from build_steps.errors import WheelError
from build_steps.readers.wheel import extract_wheel
from selftest.fixtures_readers import minimal_files, record_hash, symlink_info, write_wheel

VERSION = "2.0.0+cu13.bw.20260614.1"
NAME = f"mxnet-{VERSION}-cp311-cp311-linux_x86_64.whl"
DIST_INFO = f"mxnet-{VERSION}.dist-info"


@pytest.fixture(autouse=True, params=["as-configured", "largest-member-in-background"])
def extraction_mode(request, monkeypatch):
    """Every test twice: as this machine extracts, and with the largest member (here a few MB)
    in a thread of its own beside the rest, the path a 900 MB libmxnet.so takes."""
    started = []  # members that got the background thread
    if request.param == "largest-member-in-background":
        from build_steps.readers import wheel as wheel_mod
        monkeypatch.setattr(wheel_mod, "_PIPELINE", True)
        monkeypatch.setattr(wheel_mod, "_BACKGROUND_MIN", 1 << 20)
        real_start = wheel_mod._Background.start.__func__

        def start(cls, zf, wheel, info, tmp, record_rows):
            started.extend([info.filename] if info is not None else [])
            return real_start(cls, zf, wheel, info, tmp, record_rows)
        monkeypatch.setattr(wheel_mod._Background, "start", classmethod(start))
    return started


def _leftovers(tmp_path: Path) -> list:
    """Anything the extraction left beside the wheel (the destination or a partial temp dir)."""
    return sorted(p.name for p in tmp_path.iterdir() if p.name != "in")


@pytest.fixture
def good(tmp_path):
    files = minimal_files()
    files["mxnet/lib/libopencv_core.so.406"] = os.urandom(9 << 20)  # big enough for the threaded path
    return write_wheel(tmp_path / "in" / NAME, files), files


def test_good_wheel(good, tmp_path, extraction_mode, request):
    wheel, files = good
    ew = extract_wheel(wheel, tmp_path / "x")
    if "background" in request.node.callspec.id:
        assert extraction_mode == ["mxnet/lib/libopencv_core.so.406"]
    assert ew.record_problems == [] and ew.metadata_problems == []
    assert ew.distribution == "mxnet" and ew.version == Version(VERSION)
    assert ew.tags == frozenset({"cp311-cp311-linux_x86_64"}) and ew.build_tag == ()
    assert ew.dist_info == DIST_INFO
    assert ew.metadata["Name"] == "mxnet"
    assert [str(r) for r in ew.requires_dist] == ["onnx<1.22,>=1.7.0"]
    assert ew.wheel_info["Root-Is-Purelib"] == "false"
    assert set(ew.members) == set(files) | {f"{DIST_INFO}/RECORD"}
    for name, data in files.items():
        assert ew.file(name).read_bytes() == data
        assert ew.hashes[name] == record_hash(data) and ew.sizes[name] == len(data)
    assert ew.has("mxnet/libmxnet.so") and not ew.has("mxnet/lib")
    assert ew.members_under("mxnet/lib") == ["mxnet/lib/libopencv_core.so.406"]
    assert ew.members_under("mxnet/lib/") == ["mxnet/lib/libopencv_core.so.406"]
    with pytest.raises(WheelError, match="has no member 'mxnet/nope.so'"):
        ew.file("mxnet/nope.so")
    assert _leftovers(tmp_path) == ["x"]


def test_stored_members_and_exec_bits(tmp_path):
    files = minimal_files()
    wheel = tmp_path / "in" / NAME
    write_wheel(wheel, files, compression=zipfile.ZIP_STORED)
    ew = extract_wheel(wheel, tmp_path / "x")
    assert ew.record_problems == []
    assert ew.file("mxnet/libmxnet.so").read_bytes() == files["mxnet/libmxnet.so"]


def test_dest_must_be_empty(good, tmp_path):
    wheel, _ = good
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep").write_text("mine")
    with pytest.raises(WheelError, match="already exists and is not empty"):
        extract_wheel(wheel, tmp_path / "x")
    assert (tmp_path / "x" / "keep").read_text() == "mine"


# ---------------------------------------------------------------------------------------------
# RECORD problems are collected, not raised

def _bad_hash(rows):
    rows[1][1] = record_hash(b"something else")


def _drop_member(rows):
    del rows[0]


def _phantom(rows):
    rows.insert(0, ["mxnet/ghost.so", record_hash(b"x"), "1"])


def _record_self_hash(rows):
    rows[-1][1] = record_hash(b"whatever")


def _no_hash(rows):
    rows[0][1] = ""


def _md5(rows):
    rows[0][1] = "md5=abc"


def _wrong_size(rows):
    rows[1][2] = "3"


@pytest.mark.parametrize("edit, expect", [
    (_bad_hash, r"mxnet/libmxnet.so: content does not match RECORD"),
    (_drop_member, r"mxnet/__init__.py is in the wheel but not listed in RECORD"),
    (_phantom, r"RECORD lists 'mxnet/ghost.so', which is not in the wheel"),
    (_record_self_hash, r"RECORD lists itself with a hash"),
    (_no_hash, r"mxnet/__init__.py is listed in RECORD without a hash"),
    (_md5, r"RECORD hash 'md5=abc' is not sha256"),
    (_wrong_size, r"mxnet/libmxnet.so: RECORD says 3 bytes"),
])
def test_record_problems(tmp_path, edit, expect):
    wheel = write_wheel(tmp_path / "in" / NAME, minimal_files(), record_edit=edit)
    ew = extract_wheel(wheel, tmp_path / "x")
    assert len(ew.record_problems) == 1, ew.record_problems

    assert re.search(expect, ew.record_problems[0]), ew.record_problems


def test_wheel_without_record(tmp_path):
    wheel = tmp_path / "in" / NAME
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in minimal_files().items():
            zf.writestr(name, data)
    ew = extract_wheel(wheel, tmp_path / "x")
    assert ew.record_problems == ["the wheel has no <name>-<version>.dist-info/RECORD: nothing can be verified"]


def test_metadata_problems(tmp_path):
    files = minimal_files(requires=("onnx>=1.7.0,<1.22", "not a ( requirement"))
    files[f"{DIST_INFO}/METADATA"] = files[f"{DIST_INFO}/METADATA"].replace(
        f"Version: {VERSION}".encode(), b"Version: 2.0.0+cu13.bw.20260101")
    ew = extract_wheel(write_wheel(tmp_path / "in" / NAME, files), tmp_path / "x")
    assert [str(r) for r in ew.requires_dist] == ["onnx<1.22,>=1.7.0"]
    text = "\n".join(ew.metadata_problems)
    assert "'not a ( requirement' is not a valid requirement" in text
    assert "METADATA Version '2.0.0+cu13.bw.20260101' does not match the file name" in text


# ---------------------------------------------------------------------------------------------
# refused archives: a clear WheelError and nothing left behind

@pytest.mark.parametrize("entry, expect", [
    (("../../evil.txt", b"x"), r"'\.\./\.\./evil.txt' has a '\.\.' component"),
    (("mxnet/../../evil.txt", b"x"), r"has a '\.\.' component"),
    (("/etc/evil.txt", b"x"), r"'/etc/evil.txt' has an absolute path"),
    (("C:/evil.txt", b"x"), r"drive-letter"),
    (("mxnet\\..\\..\\evil.txt", b"x"), r"has a backslash"),
    ((symlink_info("mxnet/lib/libcuda.so.1"), b"/usr/lib/libcuda.so.1"), r"'mxnet/lib/libcuda.so.1' is a symbolic link"),
    (("mxnet/__init__.py", b"shadow"), r"'mxnet/__init__.py' appears twice"),
])
def test_unsafe_members_refused(tmp_path, entry, expect):
    wheel = write_wheel(tmp_path / "in" / NAME, minimal_files(), raw_entries=[entry])
    with pytest.raises(WheelError, match=expect) as info:
        extract_wheel(wheel, tmp_path / "x")
    assert "nothing was written" in str(info.value).lower()
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "evil.txt").exists() and not Path("/etc/evil.txt").exists()


def test_truncated_zip(good, tmp_path):
    wheel, _ = good
    cut = tmp_path / "in" / "cut" / NAME
    cut.parent.mkdir()
    cut.write_bytes(wheel.read_bytes()[: wheel.stat().st_size // 2])
    with pytest.raises(WheelError, match=r"is not a readable zip archive .*truncated or corrupt.*download it again"):
        extract_wheel(cut, tmp_path / "x")
    assert _leftovers(tmp_path) == []


def test_corrupt_member_data(good, tmp_path):
    """Central directory intact, one member's deflate data damaged: named, nothing left."""
    wheel, _ = good
    blob = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("mxnet/lib/libopencv_core.so.406")
    middle = info.header_offset + 100 + info.compress_size // 2
    blob[middle:middle + 64] = bytes(64)
    wheel.write_bytes(bytes(blob))
    with pytest.raises(WheelError, match=r"member 'mxnet/lib/libopencv_core.so.406' is corrupt"):
        extract_wheel(wheel, tmp_path / "x")
    assert _leftovers(tmp_path) == []


def test_crc_mismatch(tmp_path):
    """A stored member whose bytes changed but whose size did not: only the CRC tells."""
    wheel = write_wheel(tmp_path / "in" / NAME, minimal_files(), compression=zipfile.ZIP_STORED)
    blob = bytearray(wheel.read_bytes())
    at = blob.find(bytes(range(256)))
    blob[at] ^= 0xFF
    wheel.write_bytes(bytes(blob))
    with pytest.raises(WheelError, match=r"'mxnet/libmxnet.so' is corrupt \(CRC-32 mismatch"):
        extract_wheel(wheel, tmp_path / "x")
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("inflater", ["isal", "stdlib-zlib"])
@pytest.mark.parametrize("member", ["mxnet/__init__.py", "mxnet/lib/libopencv_core.so.406"])
def test_wrong_crc_with_matching_record_is_refused(good, tmp_path, member, inflater, monkeypatch):
    """Bytes and RECORD's sha256 intact, the zip's CRC-32 wrong: pip refuses it ("Bad CRC-32"),
    so does the audit, small member or big (threaded) alike, with ISA-L's inflater (which computes
    the CRC itself) or stdlib zlib's (CRC computed beside the hash)."""
    import zlib
    from build_steps.readers import wheel as wheel_mod
    from selftest.fixtures_wheels import wrong_crc
    if inflater == "stdlib-zlib":
        monkeypatch.setattr(wheel_mod, "_igzip", None)
        monkeypatch.setattr(wheel_mod, "_inflate_lib", zlib)
    elif wheel_mod._igzip is None:
        pytest.skip("isal is not installed")
    wheel, _ = good
    bad = wrong_crc(wheel, tmp_path / "in" / "crc" / NAME, member)
    with zipfile.ZipFile(bad) as zf, pytest.raises(zipfile.BadZipFile, match="Bad CRC-32"):
        zf.read(member)  # what pip's unpacking meets
    with pytest.raises(WheelError, match=rf"member '{re.escape(member)}' is corrupt \(CRC-32 mismatch: the zip says"):
        extract_wheel(bad, tmp_path / "x")
    assert _leftovers(tmp_path) == []
    extract_wheel(wheel, tmp_path / "ok")  # the same bytes with their CRC pass


def test_zip_bomb_refused_before_writing(tmp_path):
    from build_steps.readers.wheel import MAX_COMPRESSION_RATIO
    files = minimal_files()
    files["mxnet/zeros.bin"] = bytes(64 << 20)  # ~1000x with deflate
    wheel = write_wheel(tmp_path / "in" / NAME, files)
    with pytest.raises(WheelError, match=rf"'mxnet/zeros.bin' declares 67108864 bytes stored in \d+ \(\d+x, "
                                         rf"above the limit of {MAX_COMPRESSION_RATIO}x\): a zip bomb"):
        extract_wheel(wheel, tmp_path / "x")
    assert _leftovers(tmp_path) == []
    # A small file of zeros is no bomb, whatever its ratio.
    files["mxnet/zeros.bin"] = bytes(512 << 10)
    extract_wheel(write_wheel(tmp_path / "in2" / NAME, files), tmp_path / "ok")


@pytest.fixture
def small_fs(tmp_path):
    """A real 8 MiB filesystem (tmpfs), mounted for the test; skipped where mounting is not allowed."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_not_enough_space_refused_once_with_both_figures(good, small_fs):
    wheel, files = good  # ~9.4 MB declared, 8 MiB free
    with pytest.raises(WheelError) as err:
        extract_wheel(wheel, small_fs / "x")
    with zipfile.ZipFile(wheel) as zf:
        declared = sum(i.file_size for i in zf.infolist())
    assert str(err.value) == (
        f"{NAME} needs {declared} bytes ({declared / 1e6:.1f} MB) to extract, but {small_fs} has 8388608 bytes "
        "(8.4 MB) free: nothing was extracted. Free space there, or run with --basetemp on a larger filesystem")
    assert list(small_fs.iterdir()) == []  # nothing written, not even the partial directory


def test_not_a_zip(tmp_path):
    fake = tmp_path / "in" / NAME
    fake.parent.mkdir()
    fake.write_text("<html>404 Not Found</html>")
    with pytest.raises(WheelError, match="is not a readable zip archive"):
        extract_wheel(fake, tmp_path / "x")
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["mxnet.whl", "mxnet-2.0.0.whl", "mxnet-not_a_version-cp311-cp311-linux_x86_64.whl"])
def test_invalid_filename(tmp_path, name):
    wheel = write_wheel(tmp_path / "in" / name, minimal_files())
    with pytest.raises(WheelError, match=r"is not a valid wheel file name"):
        extract_wheel(wheel, tmp_path / "x")
    assert _leftovers(tmp_path) == []


def test_dist_info_disagrees_with_filename(tmp_path):
    wheel = write_wheel(tmp_path / "in" / "mxnet-2.0.0+cu13.bw.20260615-cp311-cp311-linux_x86_64.whl",
                        minimal_files())
    ew = extract_wheel(wheel, tmp_path / "x")
    assert any("has version 2.0.0+cu13.bw.20260614.1, the file name 2.0.0+cu13.bw.20260615" in p
               for p in ew.metadata_problems)


# ---------------------------------------------------------------------------------------------
# a wheel made by the real build frontend

def test_wheel_built_by_python_build(tmp_path):
    proj = tmp_path / "proj"
    (proj / "tinypkg").mkdir(parents=True)
    (proj / "tinypkg" / "__init__.py").write_text("VALUE = 1\n")
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tiny-pkg"\nversion = "1.2.3"\ndependencies = ["packaging>=20"]\n'
        '[tool.setuptools]\npackages = ["tinypkg"]\n')
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                           "--outdir", str(tmp_path / "dist"), str(proj)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheel = next((tmp_path / "dist").glob("*.whl"))
    ew = extract_wheel(wheel, tmp_path / "x")
    assert ew.record_problems == [] and ew.metadata_problems == []
    assert ew.distribution == "tiny-pkg" and ew.version == Version("1.2.3")
    assert [str(r) for r in ew.requires_dist] == ["packaging>=20"]
    assert ew.file("tinypkg/__init__.py").read_text() == "VALUE = 1\n"


# ---------------------------------------------------------------------------------------------
# SONAME twins: setuptools stores a bundled library and its SONAME link as two full copies

def _twin_files() -> dict:
    files = minimal_files()
    blob = os.urandom(3 << 20)  # incompressible, so the stored member is >= 1 MB like a real library
    files["mxnet/lib/libopencv_core.so.4.6.0"] = blob
    files["mxnet/lib/libopencv_core.so.406"] = blob
    return files


def test_identical_twins_are_extracted_once_and_both_verified(tmp_path):
    files = _twin_files()
    wheel = write_wheel(tmp_path / "in" / NAME, files)
    ew = extract_wheel(wheel, tmp_path / "out")
    assert ew.record_problems == []
    real, twin = (ew.file("mxnet/lib/libopencv_core.so.4.6.0"), ew.file("mxnet/lib/libopencv_core.so.406"))
    assert real.read_bytes() == twin.read_bytes() == files["mxnet/lib/libopencv_core.so.4.6.0"]
    assert real.stat().st_ino == twin.stat().st_ino  # linked, not inflated twice
    assert ew.hashes["mxnet/lib/libopencv_core.so.406"] == record_hash(files["mxnet/lib/libopencv_core.so.406"])


def test_twin_with_a_wrong_record_hash_is_still_reported(tmp_path):
    def edit(rows):
        for row in rows:
            if row[0] == "mxnet/lib/libopencv_core.so.406":
                row[1] = "sha256=" + "A" * 43
    wheel = write_wheel(tmp_path / "in" / NAME, _twin_files(), record_edit=edit)
    ew = extract_wheel(wheel, tmp_path / "out")
    assert any("libopencv_core.so.406" in p for p in ew.record_problems), ew.record_problems
    assert not any("libopencv_core.so.4.6.0" in p for p in ew.record_problems)
