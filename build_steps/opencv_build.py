"""A minimal OpenCV (core, imgproc, imgcodecs) built by the harness from pinned source (issue 46).

Why: the recipe's OpenCV is the host's (``libopencv-dev``), and its whole closure rides in the wheel:
on the real fork 133 libraries, 230 MB (GDAL, poppler, OpenSSL, X11, database clients ...). MXNet
uses OpenCV for image decode, encode and resize only. An OpenCV of three modules with its own
bundled codecs NEEDs nothing but glibc and the C++ runtime, as opencv-python-headless's does.

The source is OpenCV 4.6.0 (build_steps/opencv_source.lock.toml): the version of Debian 12's
libopencv-dev, so the SONAMEs (``libopencv_core.so.406`` ...) and ABI are the ones a libmxnet linked
against the system's expects. It comes from PyPI's opencv-python-headless sdist, checked against its
sha256 before a byte is unpacked, and unpacked as untrusted data (no absolute or ``..`` member, no
link, no device: only regular files and dirs of its opencv/ tree).

The build runs in the project's sandbox (build_steps.sandbox, as configure and compile do: the
archive's CMake code is untrusted), niced and with few jobs (a shared host), with reproducible flags:
``-ffile-prefix-map`` for the source and build dirs, a fixed install prefix text (the real one is given
at ``cmake --install --prefix``: OpenCVConfig.cmake is relocatable), SOURCE_DATE_EPOCH for the
build-info timestamp, no compiler cache and no precompiled headers. Its output is cached under the
harness cache (``<cache>/opencv/<key>/prefix``), the key being the sha256 of the source hash, the
CMake definitions, the epoch and the compiler's and CMake's versions: a second run reuses it as-is.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from . import processes, sandbox
from .atomic import write_json
from .checked_toml import load_checked_toml
from .errors import FAIL, NotReady, OpenCVBuildError, StepError, UsageError, log_excerpt
from .once import JsonRecord
from .own_files import open_log
from .venv import build_env

LOCK_FILE = Path(__file__).with_name("opencv_source.lock.toml")


class Progress(Protocol):
    """Where the step's progress lines go (a stream, or the harness's live stream)."""

    def write(self, text: str, /) -> Any: ...

    def flush(self) -> Any: ...

_LOCK_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["source"], "additionalProperties": False,
    "properties": {"source": {
        "type": "object", "additionalProperties": False,
        "required": ["version", "sdist", "url", "sha256", "size", "tree", "source_date_epoch"],
        "properties": {
            "version": {"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
            "sdist": {"type": "string", "pattern": r"^[A-Za-z0-9._-]+\.tar\.gz$"},
            "url": {"type": "string", "pattern": r"^https://"},
            "sha256": {"type": "string", "pattern": r"^[0-9a-f]{64}$"},
            "size": {"type": "integer", "minimum": 1},
            "tree": {"type": "string", "pattern": r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"},
            "source_date_epoch": {"type": "integer", "minimum": 0},
        }}},
}

#: The modules MXNet's image code uses (mx.image: imdecode/imencode/imresize, gluon vision transforms).
MODULES = ("core", "imgproc", "imgcodecs")

#: The CMake definitions of the build, each with why. ON: what MXNet's image I/O needs, from
#: OpenCV's own 3rdparty/ sources (static inside libopencv_imgcodecs, no host codec library).
#: OFF: everything that would pull a library (or a download) into the closure.
DEFINES: tuple[tuple[str, str, str], ...] = (
    ("CMAKE_BUILD_TYPE", "Release", "optimised, no debug info (the wheel's size)"),
    ("BUILD_SHARED_LIBS", "ON", "libopencv_*.so.406, the SONAMEs a libmxnet linked against Debian's OpenCV 4.6 NEEDs"),
    ("BUILD_LIST", ",".join(MODULES), "only the modules MXNet uses"),
    ("CMAKE_INSTALL_PREFIX", "/opt/opencv", "a fixed text in the build info; the real prefix is given at install"),
    ("CMAKE_INSTALL_LIBDIR", "lib", "one layout: <prefix>/lib, <prefix>/lib/cmake/opencv4"),
    ("CMAKE_SKIP_INSTALL_RPATH", "ON", "OpenCV would set RUNPATH <install prefix>/lib (/opt/opencv/lib, a dir "
     "anyone may create): none; the bundle step gives each library $ORIGIN"),
    ("OPENCV_TIMESTAMP", "", "filled from SOURCE_DATE_EPOCH: getBuildInformation()'s timestamp is fixed"),
    ("ENABLE_CCACHE", "OFF", "no compiler cache outside the sandbox's binds; the output is cached whole"),
    ("ENABLE_PRECOMPILED_HEADERS", "OFF", "precompiled headers are not byte-reproducible"),
    ("OPENCV_GENERATE_PKGCONFIG", "OFF", "the fork finds OpenCV through OpenCVConfig.cmake (OPENCV_ROOT)"),
    # codecs: OpenCV's bundled sources, built static into libopencv_imgcodecs
    ("BUILD_ZLIB", "ON", "zlib from 3rdparty/ (no host libz in the closure)"),
    ("BUILD_PNG", "ON", "PNG (mx.image.imdecode/imencode) from 3rdparty/libpng"),
    ("BUILD_JPEG", "ON", "JPEG from 3rdparty/libjpeg-turbo"),
    ("BUILD_TIFF", "ON", "TIFF from 3rdparty/libtiff"),
    ("BUILD_WEBP", "ON", "WebP from 3rdparty/libwebp"),
    ("WITH_PNG", "ON", "PNG codec"), ("WITH_JPEG", "ON", "JPEG codec"),
    ("WITH_TIFF", "ON", "TIFF codec"), ("WITH_WEBP", "ON", "WebP codec"),
    ("WITH_OPENJPEG", "OFF", "JPEG 2000: not used by MXNet, a codec CVE surface"),
    ("BUILD_OPENJPEG", "OFF", "JPEG 2000 (see WITH_OPENJPEG)"),
    ("WITH_JASPER", "OFF", "JPEG 2000 (old codec)"), ("BUILD_JASPER", "OFF", "JPEG 2000 (old codec)"),
    ("WITH_OPENEXR", "OFF", "OpenEXR: not used, a large library"), ("BUILD_OPENEXR", "OFF", "OpenEXR"),
    ("WITH_GDAL", "OFF", "GDAL pulls poppler, HDF5, PostgreSQL/MariaDB clients, curl, OpenSSL"),
    ("WITH_GDCM", "OFF", "DICOM"),
    # GUI, video, cameras: modules not built, and their backends off so nothing is probed or linked
    ("WITH_GTK", "OFF", "GUI (highgui not built)"), ("WITH_QT", "OFF", "GUI"),
    ("WITH_OPENGL", "OFF", "GL: the GLX dispatch in the system closure"), ("WITH_VTK", "OFF", "viz"),
    ("WITH_FFMPEG", "OFF", "video (videoio not built)"), ("WITH_GSTREAMER", "OFF", "video"),
    ("WITH_V4L", "OFF", "cameras"), ("WITH_1394", "OFF", "cameras"), ("WITH_GPHOTO2", "OFF", "cameras"),
    ("WITH_OPENNI", "OFF", "depth cameras"), ("WITH_OPENNI2", "OFF", "depth cameras"),
    ("WITH_PVAPI", "OFF", "cameras"), ("WITH_ARAVIS", "OFF", "cameras"), ("WITH_XIMEA", "OFF", "cameras"),
    ("WITH_XINE", "OFF", "video"), ("WITH_LIBREALSENSE", "OFF", "depth cameras"),
    # compute backends and helpers
    ("WITH_OPENCL", "OFF", "OpenCL loader probing at run time, not used by MXNet"),
    ("WITH_OPENCLAMDFFT", "OFF", "OpenCL"), ("WITH_OPENCLAMDBLAS", "OFF", "OpenCL"),
    ("WITH_VA", "OFF", "VA-API"), ("WITH_VA_INTEL", "OFF", "VA-API"), ("WITH_CUDA", "OFF", "MXNet has its own"),
    ("WITH_VULKAN", "OFF", "dnn backend"), ("WITH_HALIDE", "OFF", "dnn backend"),
    ("WITH_IPP", "OFF", "ippicv is downloaded at configure: refused offline, and an unpinned binary"),
    ("BUILD_IPP_IW", "OFF", "IPP (see WITH_IPP)"),
    ("WITH_ITT", "OFF", "Intel ITT tracing"), ("BUILD_ITT", "OFF", "Intel ITT tracing"),
    ("WITH_PROTOBUF", "OFF", "dnn only"), ("BUILD_PROTOBUF", "OFF", "dnn only"),
    ("WITH_ADE", "OFF", "G-API only (downloaded at configure)"),
    ("WITH_EIGEN", "OFF", "not needed by core/imgproc"), ("WITH_LAPACK", "OFF", "a host BLAS/LAPACK in the closure"),
    ("WITH_TBB", "OFF", "a host TBB in the closure"),
    ("WITH_OPENMP", "OFF", "a second OpenMP runtime beside MXNet's; OpenCV's pthreads pool is used"),
    ("WITH_QUIRC", "OFF", "QR codes (objdetect)"), ("WITH_IMGCODEC_HDR", "ON", "built-in, no library"),
    # nothing but the libraries
    ("BUILD_TESTS", "OFF", "no tests"), ("BUILD_PERF_TESTS", "OFF", "no perf tests"),
    ("BUILD_EXAMPLES", "OFF", "no samples"), ("BUILD_opencv_apps", "OFF", "no apps"),
    ("BUILD_DOCS", "OFF", "no docs"), ("BUILD_JAVA", "OFF", "no Java bindings"),
    ("BUILD_opencv_python2", "OFF", "no Python bindings"), ("BUILD_opencv_python3", "OFF", "no Python bindings"),
    ("INSTALL_PYTHON_EXAMPLES", "OFF", "no samples"), ("INSTALL_C_EXAMPLES", "OFF", "no samples"),
    ("INSTALL_TESTS", "OFF", "no tests"),
)

#: What a build of ``jobs`` jobs is run under: a shared host, so niced.
NICE = ("nice", "-n", "10")
#: ``python -m build_steps.opencv_build``'s exit status for a failed or refused build (its own, since
#: it was written; .ci/run and gpu/real_fork_run.sh pass it on), not the classes' exit_code
OPENCV_BUILD_FAILED = 2


@dataclass(frozen=True)
class Source:
    version: str
    sdist: str
    url: str
    sha256: str
    size: int
    tree: str
    source_date_epoch: int


def load_source(path: Path = LOCK_FILE) -> Source:
    """The pinned source (opencv_source.lock.toml), schema-checked."""
    return Source(**load_checked_toml(path, _LOCK_SCHEMA, UsageError)["source"])


def default_cache_root() -> Path:
    from .cuda_root import default_cache_dir  # the harness's one cache (MXNET_HARNESS_CACHE)
    return default_cache_dir() / "opencv"


def timestamp(epoch: int) -> str:
    """SOURCE_DATE_EPOCH as OpenCV writes its own timestamp (``string(TIMESTAMP ... UTC)``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def cmake_defines(source: Source) -> dict[str, str]:
    defs = {k: v for k, v, _why in DEFINES}
    defs["OPENCV_TIMESTAMP"] = timestamp(source.source_date_epoch)
    return defs


def _tool_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout
    except OSError as exc:
        raise OpenCVBuildError(f"{argv[0]}: {exc}; install it to build OpenCV") from None
    return out.splitlines()[0].strip() if out else ""


def toolchain() -> dict[str, str]:
    """The host tools the build's bytes depend on (the cache key's): the C++ compiler, CMake, Ninja."""
    return {"c++": _tool_version(["c++", "--version"]), "cc": _tool_version(["cc", "--version"]),
            "cmake": _tool_version(["cmake", "--version"]), "ninja": _tool_version(["ninja", "--version"])}


def cache_key(source: Source, tools: dict[str, str] | None = None) -> str:
    """sha256 of what the built bytes depend on: the source's hash, the definitions and flags, the
    epoch, the toolchain. Any change is a new key, built afresh beside the old."""
    data = {"source_sha256": source.sha256, "defines": cmake_defines(source), "flags": _flag_template(),
            "epoch": source.source_date_epoch, "toolchain": tools if tools is not None else toolchain()}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]


def _flag_template() -> str:
    return "-ffile-prefix-map={src}=/opencv-src -ffile-prefix-map={build}=/opencv-build"


# ----------------------------------------------------------------------------------------------
# The archive: fetched, hashed, unpacked as untrusted data
# ----------------------------------------------------------------------------------------------
def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_source(source: Source, cache_root: Path) -> Path:
    """The archive, in ``<cache_root>/sources/<sha256>.tar.gz``, verified. Downloaded from the
    pinned URL when missing (an offline host: put the sdist there, or pass it with ``fetch``)."""
    sources = cache_root / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    dest = sources / f"{source.sha256}.tar.gz"
    if dest.is_file() and not dest.is_symlink():
        got = sha256_of(dest)
        if got == source.sha256:
            return dest
        dest.unlink()  # a corrupt or swapped archive is never used: fetched again
    part = sources / f".{source.sha256}.{os.getpid()}.part"
    try:
        try:
            with urllib.request.urlopen(source.url, timeout=120) as resp, open(part, "wb") as out:
                shutil.copyfileobj(resp, out, 1 << 20)
        except OSError as exc:
            raise OpenCVBuildError(
                f"cannot download the OpenCV source {source.url}: {exc}. On an offline host, copy "
                f"{source.sdist} (sha256 {source.sha256}) to {dest}") from None
        got = sha256_of(part)
        if got != source.sha256:
            raise OpenCVBuildError(f"{source.url}: sha256 {got}, the lock file pins {source.sha256}: refused")
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return dest


def add_source(source: Source, archive: Path, cache_root: Path) -> Path:
    """Put a given archive (an offline host's copy) into the cache, after its hash is checked."""
    got = sha256_of(archive)
    if got != source.sha256:
        raise UsageError(f"{archive}: sha256 {got}, the lock file pins {source.sha256} ({source.sdist}): refused")
    dest = cache_root / "sources" / f"{source.sha256}.tar.gz"
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.parent / f".{source.sha256}.{os.getpid()}.part"
    try:  # whole or not at all: a copy cut short is never left under the source's name
        shutil.copyfile(archive, part)
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return dest


def readiness(source: Source, cache_root: Path) -> str:
    """Whether a run can have the minimal OpenCV without the network: this host's cache entry (its
    key: source, flags, toolchain) is complete, or the pinned source is in the cache, a regular file
    with the pinned sha256 (what fetch_source would take). An offline host's run (the GPU host's,
    gpu/real_fork_run.sh start-built) is checked with this before it starts, not after its venv."""
    key = cache_key(source)
    if (cache_root / key / "record.json").is_file():
        return f"OpenCV {source.version}: built for this host in {cache_root / key} (key {key})"
    dest = cache_root / "sources" / f"{source.sha256}.tar.gz"
    if dest.is_file() and not dest.is_symlink() and sha256_of(dest) == source.sha256:
        return f"OpenCV {source.version}: source in {dest}; the run builds it (key {key})"
    raise NotReady(f"OpenCV {source.version}: not built for this host (key {key}) and its source is not in "
                   f"{dest.parent} ({source.sdist}, sha256 {source.sha256}): an offline host needs it carried "
                   "(--add-source)")


def unpack_tree(archive: Path, tree: str, dest: Path) -> Path:
    """Unpack the members under ``tree/`` of ``archive`` into ``dest`` (made empty); returns
    ``dest/tree``. Fail closed: a member with an absolute path, a ``..`` part, or of any type but
    a regular file or a directory (a link, a device, a fifo) refuses the whole archive; tarfile's
    ``data`` filter checks again (no path out of ``dest``, no setuid bits)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    prefix = tree.rstrip("/") + "/"
    count = 0
    try:
        with tarfile.open(archive, "r:gz") as tf:
            for member in tf:
                name = member.name
                parts = Path(name).parts
                if name.startswith("/") or ".." in parts:
                    raise OpenCVBuildError(f"{archive}: member {name!r} points outside the archive: refused")
                if not (member.isfile() or member.isdir()):
                    raise OpenCVBuildError(f"{archive}: member {name!r} is not a regular file or a "
                                           "directory (a link or a device): refused")
                if not (name + "/").startswith(prefix):
                    continue
                tf.extract(member, dest, filter="data")
                count += 1
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, OpenCVBuildError):
            raise
        raise OpenCVBuildError(f"{archive}: not a readable tar.gz archive: {exc}") from None
    root = dest / tree
    if count == 0 or not (root / "CMakeLists.txt").is_file():
        raise OpenCVBuildError(f"{archive}: no OpenCV tree at {tree}/ (no CMakeLists.txt there)")
    return root


# ----------------------------------------------------------------------------------------------
# The build
# ----------------------------------------------------------------------------------------------
@dataclass
class OpenCVBuild(JsonRecord):
    #: the install prefix (lib/libopencv_*.so*, lib/cmake/opencv4/OpenCVConfig.cmake, include/)
    prefix: Path
    key: str
    version: str
    source_sha256: str
    #: seconds of this run's build (0 when the cache had it), and of the build that made the cache entry
    seconds: float
    build_seconds: float
    reused: bool
    #: installed size in bytes, and of the libraries alone
    installed_bytes: int
    library_bytes: int
    #: relative path -> sha256 of every installed regular file (two builds compare these)
    files: dict[str, str] = field(default_factory=dict)
    log: Path | None = None


def config_dir(prefix: Path) -> Path:
    return Path(prefix) / "lib" / "cmake" / "opencv4"


def _inventory(prefix: Path) -> tuple[dict[str, str], int, int]:
    files, total, libs = {}, 0, 0
    for p in sorted(prefix.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        rel = p.relative_to(prefix).as_posix()
        files[rel] = sha256_of(p)
        size = p.stat().st_size
        total += size
        if rel.startswith("lib/libopencv_"):
            libs += size
    return files, total, libs


def build_opencv(cache_root: Path | None = None, jobs: int = 2, source: Source | None = None,
                 log_dir: Path | None = None, progress: Progress | None = None) -> OpenCVBuild:
    """The minimal OpenCV's prefix: from the cache when its key is there, else built (fetch, check,
    unpack, configure, build, install: each CMake step sandboxed) and put there whole."""
    source = source or load_source()
    cache_root = Path(cache_root or default_cache_root())
    cache_root.mkdir(parents=True, exist_ok=True)
    key = cache_key(source)
    entry = cache_root / key
    with open(cache_root / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs of one key: the second waits, then reuses
        done = entry / "record.json"
        if done.is_file():
            # a whole OpenCVBuild's JSON, written by _build below: never empty, so never None
            rec = cast(OpenCVBuild, OpenCVBuild.from_json(json.loads(done.read_text())))
            rec.prefix, rec.reused, rec.seconds = entry / "prefix", True, 0.0
            return rec
        return _build(source, cache_root, key, jobs, log_dir, progress)


def _build(source: Source, cache_root: Path, key: str, jobs: int, log_dir: Path | None,
           progress: Progress | None) -> OpenCVBuild:
    start = time.monotonic()
    archive = fetch_source(source, cache_root)
    # always the same work path for a key: the build's own paths (mapped away by -ffile-prefix-map)
    # are the same in every build of it
    work = cache_root / f"{key}.work"
    if work.exists():
        shutil.rmtree(work)
    src = unpack_tree(archive, source.tree, work / "unpacked")
    build, prefix = work / "build", work / "prefix"
    build.mkdir(parents=True)
    prefix.mkdir(parents=True)
    log = (Path(log_dir) if log_dir else work) / "opencv-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    flags = _flag_template().format(src=src, build=build)
    # OpenCV's download cache defaults to <src>/.cache, which the sandbox shows read-only: in the
    # build dir instead. Nothing is downloaded (no network in the sandbox, every downloader OFF).
    defs = {**cmake_defines(source), "CMAKE_C_FLAGS": flags, "CMAKE_CXX_FLAGS": flags,
            "OPENCV_DOWNLOAD_PATH": str(build / "downloads")}
    env = build_env({"SOURCE_DATE_EPOCH": str(source.source_date_epoch), "LC_ALL": "C", "TZ": "UTC"})
    steps = [
        ("configure", [*NICE, "cmake", "-S", str(src), "-B", str(build), "-G", "Ninja",
                       *[f"-D{k}={v}" for k, v in defs.items()]]),
        ("build", [*NICE, "cmake", "--build", str(build), "--parallel", str(jobs)]),
        ("install", [*NICE, "cmake", "--install", str(build), "--prefix", str(prefix), "--strip"]),
    ]
    with open_log(log, "a") as fh:
        for what, cmd in steps:
            fh.write("$ " + " ".join(cmd) + "\n")
            fh.flush()
            if progress is not None:
                print(f"[opencv] {what} (log: {log})", file=progress, flush=True)
            # the archive's CMake code runs here: sandboxed, the source read-only, no network
            argv, child_env = sandbox.wrap(cmd, env, readable=[src], writable=[build, prefix], cwd=build)
            rc = sandbox.returncode(processes.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=child_env))
            if rc != 0:
                raise OpenCVBuildError(f"OpenCV {source.version} {what} failed (exit {rc})",
                                       log=log, tail=log_excerpt(log))
    seconds = time.monotonic() - start
    _take_back(prefix)
    files, total, libs = _inventory(prefix)
    if not (config_dir(prefix) / "OpenCVConfig.cmake").is_file():
        raise OpenCVBuildError(f"the OpenCV install has no lib/cmake/opencv4/OpenCVConfig.cmake in {prefix}", log=log)
    entry = cache_root / key
    if entry.exists():
        shutil.rmtree(entry)
    entry.mkdir()
    os.replace(prefix, entry / "prefix")
    shutil.copyfile(log, entry / "opencv-build.log")
    rec = OpenCVBuild(prefix=entry / "prefix", key=key, version=source.version, source_sha256=source.sha256,
                      seconds=round(seconds, 1), build_seconds=round(seconds, 1), reused=False,
                      installed_bytes=total, library_bytes=libs, files=files, log=entry / "opencv-build.log")
    write_json(entry / "record.json", rec.to_json())  # last: its presence is the entry's completeness
    shutil.rmtree(work, ignore_errors=True)
    return rec


def _take_back(prefix: Path) -> None:
    """As root the install was written by the sandbox uid: the cached prefix becomes root's again
    (read-only to every later step's uid), walked without following a link, its files made 0644/0755."""
    if not sandbox.as_root():
        return
    for dirpath, dirnames, filenames, dirfd in os.fwalk(prefix, follow_symlinks=False):
        os.chown(dirpath, 0, 0, follow_symlinks=False)
        for name in [*dirnames, *filenames]:
            os.chown(name, 0, 0, dir_fd=dirfd, follow_symlinks=False)
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            if not os.path.islink(os.path.join(dirpath, name)):
                os.chmod(name, (st.st_mode & 0o755) | 0o644, dir_fd=dirfd)


def check_reproducible(cache_root: Path | None = None, jobs: int = 2, source: Source | None = None,
                       progress: Progress | None = None) -> tuple[OpenCVBuild, list[str]]:
    """Build the cached entry's key once more, at the same paths, and compare every installed
    file's sha256 with the entry's: (the new build, the files that differ). The entry is set aside
    during the build and restored after it (the new build is dropped), so the cache stays the one
    the runs used."""
    source = source or load_source()
    cache_root = Path(cache_root or default_cache_root())
    first = build_opencv(cache_root, jobs, source, progress=progress)  # the entry (built if missing)
    entry = cache_root / first.key
    aside = cache_root / f".{first.key}.first"
    if aside.exists():
        shutil.rmtree(aside)
    os.replace(entry, aside)
    try:
        again = build_opencv(cache_root, jobs, source, progress=progress)
        differ = sorted(set(first.files) ^ set(again.files)
                        | {f for f in set(first.files) & set(again.files) if first.files[f] != again.files[f]})
    finally:
        if (cache_root / first.key).exists():
            shutil.rmtree(cache_root / first.key)
        os.replace(aside, entry)
    return again, differ


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m build_steps.opencv_build",
                                 description="build (or reuse) the harness's minimal OpenCV")
    ap.add_argument("--cache", type=Path, default=None, help="cache root (default: <harness cache>/opencv)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--add-source", type=Path, metavar="SDIST",
                    help="put this copy of the pinned sdist into the cache (an offline host), then build")
    ap.add_argument("--no-build", action="store_true",
                    help="with --add-source: only put the sdist into the cache (an offline host's carry, "
                         "gpu/real_fork_run.sh opencv-src-stash), the build left to the run")
    ap.add_argument("--ready", action="store_true",
                    help="exit 0 when this host's entry is built or the pinned source is in the cache (a run "
                         "can make it offline), else one line and exit 3; nothing is fetched or built")
    ap.add_argument("--check-reproducible", action="store_true",
                    help="build the cached entry once more at the same paths and compare every file's sha256")
    args = ap.parse_args(argv)
    if args.no_build and not args.add_source:
        ap.error("--no-build goes with --add-source")
    try:
        source = load_source()
        root = args.cache or default_cache_root()
        if args.ready:
            print(readiness(source, Path(root)))
            return 0
        if args.add_source:
            dest = add_source(source, args.add_source, root)
            if args.no_build:
                print(f"OpenCV {source.version} source in the cache: {dest}")
                return 0
        if args.check_reproducible:
            again, differ = check_reproducible(root, args.jobs, source, progress=sys.stderr)
            print(f"second build of {again.key}: {again.build_seconds:.0f}s, {len(again.files)} files; "
                  + (f"{len(differ)} differ: {', '.join(differ[:20])}" if differ else "every file has the same bytes"))
            return FAIL if differ else 0
        rec = build_opencv(root, args.jobs, source, progress=sys.stderr)
    except NotReady as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code  # 3: the host's fault (build_steps.errors.NOT_JUDGED_EXIT)
    except (StepError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return OPENCV_BUILD_FAILED
    print(json.dumps({k: v for k, v in rec.to_json().items() if k != "files"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
