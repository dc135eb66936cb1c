"""build_steps.bundle puts each library in once, under the name the loader asks for (issue 12),
grafted under a name of its own (issue 40, defect 5).

Against the host's real OpenCV 4.6 closure: no symlinks (a wheel stores each as a second full
copy), every file named for its SONAME, no two files with the same bytes, and the graphics
libraries OpenCV's closure reaches (libGLX, libGLdispatch) still bundled. Each library is grafted
as auditwheel does: ``<stem>-<sha256 of its content, 8 hex>.so.N``, its SONAME set to that, and
every NEEDED of libmxnet and of the bundled libraries rewritten, so a process that already has the
host's libcrypto.so.3 loaded cannot hand that copy to the wheel's libraries.
"""
from __future__ import annotations

import hashlib
import subprocess
import zlib

import pytest

from build_steps.bundle import bundle_closure
from build_steps.readers.elf import read_dynamic
from build_steps.profile_data import PROFILES
from selftest.fixtures_wheels import OPENCV_DIR, OPENCV_LIBS


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundle")
    (d / "f.c").write_text("int mxnet_selftest(void) { return 0; }\n")
    lib = d / "libmxnet.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(d / "f.c"), "-Wl,--no-as-needed",
                    *[str(OPENCV_DIR / n) for n in OPENCV_LIBS]], check=True)
    lib_dir = d / "lib"
    return bundle_closure(lib, lib_dir, PROFILES["cpu"]), lib_dir, lib


def test_each_library_once_under_its_soname(bundled):
    bundle, lib_dir, _lib = bundled
    files = sorted(lib_dir.iterdir())
    assert files and not [f.name for f in files if f.is_symlink()]
    assert sorted(f.name for f in files) == sorted(b.soname for b in bundle)
    named_otherwise = [(f.name, read_dynamic(f).soname) for f in files
                       if read_dynamic(f).soname not in (None, f.name)]
    assert not named_otherwise
    digests = {}
    for f in files:
        digests.setdefault(hashlib.sha256(f.read_bytes()).hexdigest(), []).append(f.name)
    assert not [names for names in digests.values() if len(names) > 1]


def test_seeds_and_graphics_stack_bundled(bundled):
    bundle, lib_dir, _lib = bundled
    names = {f.name for f in lib_dir.iterdir()}
    originals = {b.original for b in bundle}
    assert set(OPENCV_LIBS) <= originals
    # OpenCV's closure on Debian/Ubuntu reaches the GL dispatch stack, which slim images lack.
    assert {"libGLX.so.0", "libGLdispatch.so.0"} <= originals
    assert all(read_dynamic(lib_dir / n).runpath == ["$ORIGIN"] for n in names)


def test_a_build_configured_without_opencv_stages_without_its_closure(tmp_path):
    """The real fork on the GPU host (docs/gpu_runs/real_fork_2026-12-03.md) was configured with
    --cmake-define=USE_OPENCV=OFF: staging follows that toggle instead of stopping the run, and
    still refuses a library without OpenCV when the build was meant to have it."""
    from build_steps.errors import StepError
    (tmp_path / "f.c").write_text("int mxnet_selftest(void) { return 0; }\n")
    lib = tmp_path / "libmxnet.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "f.c")], check=True)
    with pytest.raises(StepError, match="has no libopencv_\\* NEEDED entries"):
        bundle_closure(lib, tmp_path / "lib-release", PROFILES["cpu"])
    staged = bundle_closure(lib, tmp_path / "lib-dev", PROFILES["cpu"], wants_opencv=False)
    assert list(staged) == []
    assert not any((tmp_path / "lib-dev").iterdir()), "nothing to bundle without OpenCV"


def test_each_library_is_grafted_under_a_name_of_its_own(bundled):
    bundle, lib_dir, lib = bundled
    by_original = {b.original: b for b in bundle}
    assert {"libcrypto.so.3", "libz.so.1"} <= set(by_original), "the host closure reaches OpenSSL and zlib"
    for b in bundle:
        digest = hashlib.sha256(b.source.read_bytes()).hexdigest()[:8]
        stem, dot_so, rest = b.original.partition(".so")
        assert b.soname == f"{stem}-{digest}{dot_so}{rest}", (b.original, b.soname)
        assert b.path == lib_dir / b.soname and read_dynamic(b.path).soname == b.soname
    assert by_original["libopencv_core.so.406"].soname.startswith("libopencv_core-")
    assert all(b.soname.startswith("libopencv_") for b in bundle if b.original.startswith("libopencv_"))
    # No ELF names a bundled library by its plain SONAME any more: the loader can only pick the graft.
    plain = set(by_original) - {b.soname for b in bundle}
    grafted = {b.soname for b in bundle}
    for elf in [lib, *(b.path for b in bundle)]:
        needed = read_dynamic(elf).needed
        assert not plain & set(needed), (elf.name, sorted(plain & set(needed)))
    assert {by_original[n].soname for n in OPENCV_LIBS} <= set(read_dynamic(lib).needed)
    assert len(grafted) == len(bundle)


def test_grafting_adds_no_padding(bundled):
    """patchelf 0.18+ puts each moved section in a segment aligned to the library's largest p_align:
    2 MiB of zeros per change on older libraries (libXdmcp: 23 kB became 6.3 MB, which the wheel
    reader refuses as a zip bomb). A grafted library compresses like a library."""
    bundle, _lib_dir, _lib = bundled
    padded = []
    for b in bundle:
        data = b.path.read_bytes()
        if len(data) > 20 * len(zlib.compress(data, 1)) and len(data) > 2 * b.source.stat().st_size:
            padded.append(f"{b.soname}: {b.source.stat().st_size} -> {len(data)} bytes")
    assert not padded, padded


# --- libmxnet's own non-host NEEDED (real-fork defect 10, GPU hold 5, 2026-12-06) ---------------------

def _stub_opencv_prefix(root):
    """A prefix holding three libopencv_* that need only libc, as the minimal built OpenCV's do
    (build_steps.opencv_build): their closure brings no libgfortran along."""
    lib = root / "lib"
    lib.mkdir(parents=True)
    (root / "cv.c").write_text("int cv_selftest(void) { return 1; }\n")
    for name in OPENCV_LIBS:
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{name}", "-o", str(lib / name),
                        str(root / "cv.c")], check=True)
    return root


def _libmxnet_needing(d, *libs):
    (d / "f.c").write_text("int mxnet_selftest(void) { return 0; }\n")
    lib = d / "libmxnet.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(d / "f.c"), "-Wl,--no-as-needed",
                    *map(str, libs)], check=True)
    return lib


GFORTRAN = OPENCV_DIR / "libgfortran.so.5"


@pytest.mark.skipif(not GFORTRAN.exists(), reason="libgfortran5 is not installed (scripts/setup.sh installs it)")
def test_libmxnets_own_gfortran_is_bundled_when_the_opencv_closure_lacks_it(tmp_path):
    """The real fork's libmxnet NEEDs libgfortran.so.5 itself (LAPACK ON: static OpenBLAS's LAPACK is
    Fortran). Bundled with a minimal OpenCV, whose closure does not reach it, the wheel shipped
    without it and test_every_needed_resolves failed it on the GPU host. It is bundled and grafted,
    with its own closure (libquadmath stays the host's, by policy), and libmxnet asks for the copy."""
    prefix = _stub_opencv_prefix(tmp_path / "opencv")
    lib = _libmxnet_needing(tmp_path, *[prefix / "lib" / n for n in OPENCV_LIBS], GFORTRAN)
    assert "libgfortran.so.5" in read_dynamic(lib).needed
    bundle = bundle_closure(lib, tmp_path / "lib", PROFILES["cuda"], prefix=prefix)
    by_original = {b.original: b for b in bundle}
    assert "libgfortran.so.5" in by_original, sorted(by_original)
    gf = by_original["libgfortran.so.5"]
    assert gf.soname.startswith("libgfortran-") and (tmp_path / "lib" / gf.soname).is_file()
    assert gf.needed_by == "libmxnet.so" and not gf.seed
    assert not [b for b in bundle if b.original.startswith("libquadmath")], "GPL: never bundled"
    assert gf.soname in read_dynamic(lib).needed and "libgfortran.so.5" not in read_dynamic(lib).needed
    assert not bundle.unresolved


@pytest.mark.skipif(not GFORTRAN.exists(), reason="libgfortran5 is not installed (scripts/setup.sh installs it)")
def test_libmxnets_own_gfortran_is_bundled_without_opencv(tmp_path):
    lib = _libmxnet_needing(tmp_path, GFORTRAN)
    bundle = bundle_closure(lib, tmp_path / "lib", PROFILES["cpu"], wants_opencv=False)
    assert [b.original for b in bundle] == ["libgfortran.so.5"]


def test_an_opencv_closure_that_has_gfortran_bundles_in_the_same_order(bundled, tmp_path):
    """The system-OpenCV build (#44's holds compare its bytes) reaches libgfortran through OpenCV's
    closure: libmxnet's own NEEDED of it changes neither what is bundled nor the order."""
    bundle, _lib_dir, _lib = bundled
    originals = [b.original for b in bundle]
    if "libgfortran.so.5" not in originals:
        pytest.skip("this host's OpenCV closure does not reach libgfortran")
    lib = _libmxnet_needing(tmp_path, *[OPENCV_DIR / n for n in OPENCV_LIBS], GFORTRAN)
    again = bundle_closure(lib, tmp_path / "lib", PROFILES["cpu"])
    assert [b.original for b in again] == originals
