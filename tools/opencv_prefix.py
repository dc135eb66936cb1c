"""OpenCV 4.6 in a prefix outside ``/``, made from the distribution's own packages (issue 30).

A GPU host without OpenCV dev files gets this prefix carried in; the fork's configure finds it
through its own ``OPENCV_ROOT`` and the bundle step resolves the closure from it
(``--opencv-prefix``). Three commands:

  python -m tools.opencv_prefix download [DEBS]    apt-get download the packages (needs apt's network)
  python -m tools.opencv_prefix download-gfortran DEBS   the gfortran toolchain LAPACK needs (below)
  python -m tools.opencv_prefix unpack DEBS PREFIX [MORE_DEBS...]   dpkg -x each into PREFIX (no network)
  python -m tools.opencv_prefix measure DEBS PREFIX  packages, MB of .deb, MB unpacked

The package list is the closure of libopencv_imgcodecs/imgproc/core as this host's loader resolves
it (build_steps.bundle, the same walk the wheel's bundle makes), each file's package from
``dpkg -S``, at the version installed here; plus the files the fork's configure reads: the headers
and ``.so`` links of the three modules (their -dev packages) and OpenCV's CMake package
(libopencv-dev), whose export set checks that every module's library exists, hence every
``libopencv-*406`` runtime package, without their dependencies.

LAPACK: with Debian's static OpenBLAS (LAPACK compiled by gfortran) the fork's cmake/ChooseBlas.cmake
links the gfortran runtime only after probing a Fortran compiler; a host without gfortran needs
CMAKE_NM=/bin/true to skip the probe, and libmxnet.so is then left with an undefined
``_gfortran_concat_string`` (measured: docs/gpu_runs/real_fork_features_plan.md). The gfortran
toolchain (GFORTRAN_PACKAGES) unpacked into the same prefix is relocatable (the driver finds f951,
collect2 and its libraries relative to itself) and lets the probe run instead.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from build_steps.bundle import ld_cache, resolve_soname
from build_steps.library_policy import is_host_library
from build_steps.readers.elf import read_dynamic

ROOT = Path(__file__).resolve().parent.parent
#: where setup.sh puts the .debs and the selftest looks for them (ignored by git)
DEFAULT_DEBS = ROOT / ".opencv" / "debs"
SEEDS = ("libopencv_imgcodecs.so.406", "libopencv_imgproc.so.406", "libopencv_core.so.406")
CONFIG_PACKAGES = ("libopencv-dev", "libopencv-core-dev", "libopencv-imgproc-dev", "libopencv-imgcodecs-dev")
#: the headers the fork includes (src/initialize.cc, src/io/*, src/operator/image/*: opencv2/opencv.hpp,
#: and opencv2/core/version.hpp). opencv.hpp includes the header of every module opencv_modules.hpp
#: declares (calib3d, dnn, features2d, flann, highgui, ml, objdetect, photo, stitching, video, videoio
#: in Debian's build), so the prefix carries the -dev package of each header it reaches (issue 40: a
#: prefix of the three linked modules' headers stopped the real fork's compile at step 148).
FORK_INCLUDES = ("opencv2/opencv.hpp", "opencv2/core/version.hpp")
HOST_INCLUDE_DIR = Path("/usr/include/opencv4")
#: Debian installs these libraries through update-alternatives in the package's postinst, which
#: ``dpkg -x`` does not run: unpack() makes the links the alternative would (libblas.so.3 and
#: liblapack.so.3 of OpenBLAS, NEEDED by libopencv_core).
ALTERNATIVE_DIRS = ("usr/lib/x86_64-linux-gnu/openblas-pthread",)
MULTIARCH = "usr/lib/x86_64-linux-gnu"
#: gfortran 12 (Debian bookworm's) without its dependencies on what any host with a C compiler has
#: (binutils, libc6-dev, libisl/mpc/mpfr/gmp): the driver, f951, collect2, crt files, libgcc, libgfortran
GFORTRAN_PACKAGES = ("gfortran-12", "gcc-12", "cpp-12", "libgcc-12-dev", "libgfortran-12-dev")


def _run(cmd, **kw) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} ... failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
    return proc.stdout


def _owners(paths: list[Path]) -> set[str]:
    """The installed packages owning ``paths`` (one dpkg-query for all; a usr-merged path is
    looked up as the package lists it, by its resolved name)."""
    names = sorted({str(p.resolve()) for p in paths} | {str(p) for p in paths})
    proc = subprocess.run(["dpkg-query", "-S", *names], capture_output=True, text=True)
    owned = {line.rsplit(": ", 1)[1]: line.split(":", 1)[0] for line in proc.stdout.splitlines() if ": " in line}
    missing = [p for p in paths if str(p) not in owned and str(p.resolve()) not in owned]
    if missing:
        sys.exit(f"{missing[0]}: no installed package owns it; install libopencv-dev (scripts/setup.sh) first")
    return set(owned.values())


def reached_headers(include_dir: Path = HOST_INCLUDE_DIR) -> list[Path]:
    """Every header the fork's OpenCV includes reach, as the host's C++ compiler resolves them (-M)."""
    source = "".join(f"#include <{h}>\n" for h in FORK_INCLUDES)
    proc = subprocess.run(["c++", "-M", "-x", "c++", f"-I{include_dir}", "-"], input=source,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the OpenCV headers in {include_dir} do not preprocess: {proc.stderr.strip()[-600:]}; "
                 "install libopencv-dev (scripts/setup.sh) first")
    deps = proc.stdout.replace("\\\n", " ").split()
    return sorted({Path(d) for d in deps if Path(d).is_relative_to(include_dir)})


def packages() -> list[str]:
    """Every package the prefix needs (the archive's candidate version: an installed version the
    archive no longer carries cannot be downloaded)."""
    cache = ld_cache()
    todo, seen, pkgs, paths = list(SEEDS), set(SEEDS), set(CONFIG_PACKAGES), []
    while todo:
        soname = todo.pop()
        path = resolve_soname(soname, cache)
        if path is None:
            sys.exit(f"{soname} does not resolve on this host: install libopencv-dev (scripts/setup.sh)")
        paths.append(path)
        for dep in read_dynamic(path).needed:
            if dep not in seen and not is_host_library(dep):
                seen.add(dep)
                todo.append(dep)
    pkgs |= {name.split(":")[0] for name in _owners(paths + reached_headers())}
    listed = _run(["dpkg-query", "-W", "-f", "${Package}\n", "libopencv-*406"])
    pkgs.update(line.strip() for line in listed.splitlines() if line.strip())
    return sorted(pkgs)


def download(debs: Path, names=None) -> list[Path]:
    debs.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", "download", "-q", *(names or packages())], cwd=debs)
    return sorted(debs.glob("*.deb"))


def unpack(debs: Path, prefix: Path, *more: Path) -> Path:
    """dpkg -x every .deb of ``debs`` (and of ``more``) into ``prefix`` (made anew); the prefix's ``usr``."""
    found = sorted(debs.glob("*.deb")) + [d for m in more for d in sorted(Path(m).glob("*.deb"))]
    if not found:
        sys.exit(f"{debs}: no .deb files; run `python -m tools.opencv_prefix download {debs}` first")
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    for deb in found:
        _run(["dpkg-deb", "-x", str(deb), str(prefix)])
    for rel in ALTERNATIVE_DIRS:
        alt = prefix / rel
        for lib in sorted(alt.glob("lib*.so.*")) if alt.is_dir() else ():
            link = prefix / MULTIARCH / lib.name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(os.path.relpath(lib, link.parent))
    # what the `gfortran` package would add: the unversioned name CMake's probe calls
    gfortran = prefix / "usr/bin/gfortran"
    if (prefix / "usr/bin/gfortran-12").exists() and not gfortran.exists():
        gfortran.symlink_to("gfortran-12")
    return prefix / "usr"


def _size(path: Path) -> int:
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def measure(debs: Path, prefix: Path) -> dict:
    found = sorted(debs.glob("*.deb"))
    return {"packages": len(found), "deb_mb": round(sum(f.stat().st_size for f in found) / 1e6, 1),
            "unpacked_mb": round(_size(prefix) / 1e6, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.opencv_prefix", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("download")
    d.add_argument("debs", nargs="?", type=Path, default=DEFAULT_DEBS)
    g = sub.add_parser("download-gfortran")
    g.add_argument("debs", type=Path)
    sub.add_parser("list")
    for name in ("unpack", "measure"):
        p = sub.add_parser(name)
        p.add_argument("debs", type=Path)
        p.add_argument("prefix", type=Path)
        p.add_argument("more", type=Path, nargs="*")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        print("\n".join(packages()))
    elif args.cmd == "download":
        print(f"{len(download(args.debs))} .deb files in {args.debs}")
    elif args.cmd == "download-gfortran":
        print(f"{len(download(args.debs, GFORTRAN_PACKAGES))} .deb files in {args.debs}")
    elif args.cmd == "unpack":
        print(unpack(args.debs, args.prefix, *args.more))
    else:
        print(measure(args.debs, args.prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
