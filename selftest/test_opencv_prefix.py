"""Bundling OpenCV from a prefix outside ``/`` (issue 30): Debian's own OpenCV 4.6 packages, unpacked
with ``dpkg -x`` (tools.opencv_prefix), are what a GPU host without OpenCV dev files builds against.

This host has the same OpenCV installed under /usr as well, so "the closure came from the prefix" is
a real distinction: without ``--opencv-prefix`` every file comes from /usr, with it every file comes
from the prefix. The .debs are fetched by scripts/setup.sh (``apt-get download``); without them the
module skips with one reason, never reaching the network at test time.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from selftest.fixtures_build import default_build

from build_steps.bundle import bundle_closure, opencv_config_dir
from build_steps.profile_data import PROFILES
from build_steps.readers.elf import read_dynamic
from selftest.fixtures_realtree import assert_fork_compiles_against
from selftest.fixtures_wheels import OPENCV_LIBS
from tools.opencv_prefix import DEFAULT_DEBS, unpack

if not list(DEFAULT_DEBS.glob("*.deb")):
    pytest.skip(f"OpenCV .debs absent in {DEFAULT_DEBS}: run `python -m tools.opencv_prefix download` "
                "(scripts/setup.sh does)", allow_module_level=True)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("opencv-prefix") / "root"
    unpack(DEFAULT_DEBS, root)
    return root


def _libmxnet(d: Path, libdir: Path) -> Path:
    """A libmxnet.so NEEDing the three OpenCV libraries, linked against ``libdir``'s copies."""
    (d / "f.c").write_text("int mxnet_selftest(void) { return 0; }\n")
    lib = d / "libmxnet.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(d / "f.c"), "-Wl,--no-as-needed",
                    *[str(libdir / n) for n in OPENCV_LIBS]], check=True)
    return lib


def test_closure_resolves_from_the_prefix_not_the_host(prefix, tmp_path):
    libdir = prefix / "usr/lib/x86_64-linux-gnu"
    lib = _libmxnet(tmp_path, libdir)
    shutil.copy2(lib, tmp_path / "libmxnet-2.so")  # bundling rewrites the NEEDED entries of its libmxnet
    from_host = bundle_closure(lib, tmp_path / "host", PROFILES["cpu"])
    from_prefix = bundle_closure(tmp_path / "libmxnet-2.so", tmp_path / "prefix", PROFILES["cpu"], prefix=prefix)
    # The same closure either way (same packages), but only one of them came from the prefix.
    assert sorted(b.original for b in from_prefix) == sorted(b.original for b in from_host)
    assert not [b for b in from_host if b.source.is_relative_to(prefix)]
    outside = [f"{b.soname} <- {b.source}" for b in from_prefix if not b.source.is_relative_to(prefix.resolve())]
    assert not outside, outside
    assert not from_prefix.unresolved
    # libblas.so.3/liblapack.so.3 (NEEDED by libopencv_core) exist only through the alternative links
    # unpack() makes: the OpenBLAS behind them was found in the prefix too.
    assert {"libblas.so.3", "liblapack.so.3"} <= {b.original for b in from_prefix}
    assert all(read_dynamic(b.path).runpath == ["$ORIGIN"] for b in from_prefix)


def test_a_prefix_without_the_library_is_named(prefix, tmp_path):
    from build_steps.errors import StepError
    lib = _libmxnet(tmp_path, prefix / "usr/lib/x86_64-linux-gnu")
    empty = tmp_path / "empty"
    (empty / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    bundle = bundle_closure(lib, tmp_path / "b", PROFILES["cpu"], prefix=empty)
    assert not [b for b in bundle if b.source.is_relative_to(empty)]  # fell through to the host
    with pytest.raises(StepError, match="no library directory in it"):
        bundle_closure(lib, tmp_path / "c", PROFILES["cpu"], prefix=tmp_path / "nothing-here")


@pytest.mark.slow
def test_sample_tree_built_against_the_prefix_bundles_it_and_round_trips(
        gates, sample_tree, prefix, mxnet191_wheelhouse, tmp_path):
    """The sample tree configured with the fork's OPENCV_ROOT, bundled from the prefix, the wheel
    installed and its PNG round trips run: the closure, RUNPATH and OpenCV gates pass (the sample
    has no gluon package, so its transforms gate is left out)."""
    src = sample_tree()
    report = tmp_path / "report.json"
    r = gates("-m", "release and (build or provenance or opencv)", "-k", "not development_override and not gluon",
              f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2", f"--opencv-prefix={prefix}",
              f"--find-links={mxnet191_wheelhouse}", "--no-deps", "--extra-requirement=numpy<2",
              f"--provenance-json={report}")
    out = r.stdout.str() + r.stderr.str()
    assert r.ret == 0, out[-6000:]
    cache = (default_build(src, 'cpu') / "CMakeCache.txt").read_text()
    assert f"OPENCV_ROOT:PATH={opencv_config_dir(prefix)}" in cache
    assert f"OpenCV_DIR:PATH={opencv_config_dir(prefix)}" in cache, "configure must take OpenCV from the prefix"
    assert f"resolved from --opencv-prefix {prefix}" in out
    for gate in ("test_png_rgb_roundtrip", "test_png_grayscale_roundtrip"):
        assert f"PASSED   tests/test_opencv_roundtrip.py::{gate}" in out, out[-4000:]
    lib_dir = default_build(src, 'cpu') / "harness-package" / "python" / "mxnet" / "lib"  # staged in the build dir
    names = {f.name for f in lib_dir.iterdir()}
    stems = {re.sub(r"-[0-9a-f]{8}\.so.*$", "", n) for n in names}  # grafted: <stem>-<hash8>.so.N
    assert {n.split(".so")[0] for n in OPENCV_LIBS} | {"libblas"} <= stems, sorted(names)
    assert all(read_dynamic(lib_dir / n).runpath == ["$ORIGIN"] for n in names)




@pytest.mark.slow
def test_every_fork_source_that_includes_opencv_compiles_against_the_prefix(fork_tree, prefix, tmp_path):
    """Issue 40, defect 3: the real fork's compile stopped at step 148, src/initialize.cc ->
    opencv2/opencv.hpp -> opencv2/calib3d.hpp, absent from the prefix (it held only the core, imgproc
    and imgcodecs headers, and had only ever been proven at configure). Here the fork is configured
    against the prefix as the release build is (cpu profile, OPENCV_ROOT), and every source that
    reaches an OpenCV header is run through the compiler's dependency pass (-M: every #include must
    resolve, as in the real compile) with its own command line; each OpenCV header must come from the
    prefix, never from this host's /usr/include/opencv4."""
    assert_fork_compiles_against(fork_tree, prefix, opencv_config_dir(prefix), tmp_path)
