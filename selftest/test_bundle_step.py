"""build_steps.bundle puts each library in once, under the name the loader asks for (issue 12).

Against the host's real OpenCV 4.6 closure: no symlinks (a wheel stores each as a second full
copy), every file named for its SONAME, no two files with the same bytes, and the graphics
libraries OpenCV's closure reaches (libGLX, libGLdispatch) still bundled.
"""
from __future__ import annotations

import hashlib
import subprocess

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
    return bundle_closure(lib, lib_dir, PROFILES["cpu"]), lib_dir


def test_each_library_once_under_its_soname(bundled):
    bundle, lib_dir = bundled
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
    _bundle, lib_dir = bundled
    names = {f.name for f in lib_dir.iterdir()}
    assert set(OPENCV_LIBS) <= names
    # OpenCV's closure on Debian/Ubuntu reaches the GL dispatch stack, which slim images lack.
    assert {"libGLX.so.0", "libGLdispatch.so.0"} <= names
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
