"""build_steps.readers.loader: an object without DT_RUNPATH gets the DT_RPATH of libmxnet.so that loads it
(ld.so(8)), the layout of PyPI's mxnet 1.x wheels (libgfortran.so.3 beside an RPATH=$ORIGIN
libmxnet.so); with a DT_RUNPATH of its own it does not. Real libraries from gcc and patchelf."""
from __future__ import annotations

import subprocess
from pathlib import Path

from build_steps.bundle import patchelf_command
from build_steps.readers.loader import BUNDLED, UNRESOLVED, resolve_closure
from build_steps.profile_data import PROFILES


def _gcc(out: Path, *args):
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), *map(str, args)], check=True)


def _closure(tmp_path: Path, middle_runpath):
    pkg = tmp_path / "mxnet"
    pkg.mkdir()
    (tmp_path / "f.c").write_text("int f(void) { return 0; }\n")
    _gcc(pkg / "libleaf.so.1", "-Wl,-soname,libleaf.so.1", tmp_path / "f.c")
    _gcc(pkg / "libmiddle.so.1", "-Wl,-soname,libmiddle.so.1", tmp_path / "f.c", "-Wl,--no-as-needed",
         pkg / "libleaf.so.1")
    if middle_runpath:
        subprocess.run([*patchelf_command(), "--set-rpath", middle_runpath, str(pkg / "libmiddle.so.1")], check=True)
    # libmxnet.so with DT_RPATH (not RUNPATH) = $ORIGIN, as the 1.x wheels have it
    _gcc(pkg / "libmxnet.so", tmp_path / "f.c", "-Wl,--no-as-needed", "-Wl,--disable-new-dtags",
         "-Wl,-rpath,$ORIGIN", pkg / "libmiddle.so.1")
    closure = resolve_closure(tmp_path, "mxnet/libmxnet.so", ["mxnet/libmiddle.so.1", "mxnet/libleaf.so.1"],
                              PROFILES["cpu"], set())
    return {(r.by, r.needed): r.verdict for r in closure.resolutions}


def test_no_runpath_inherits_libmxnet_rpath(tmp_path):
    verdicts = _closure(tmp_path, None)
    assert verdicts[("mxnet/libmxnet.so", "libmiddle.so.1")] == BUNDLED
    assert verdicts[("mxnet/libmiddle.so.1", "libleaf.so.1")] == BUNDLED


def test_own_runpath_stops_the_inheritance(tmp_path):
    verdicts = _closure(tmp_path, "/nonexistent/lib")
    assert verdicts[("mxnet/libmiddle.so.1", "libleaf.so.1")] == UNRESOLVED
