"""Selftest fixtures: the macOS (Mach-O) area.

Real Mach-O dylibs made here without a macOS SDK: ``clang -target arm64-apple-macos11`` compiles,
lld's Mach-O linker (``-fuse-ld=lld`` runs ld64.lld) links with ``-nostdlib`` against a libSystem
built here (it exports ``dyld_stub_binder``, which ld64.lld needs for lazy binding, under the
install name /usr/lib/libSystem.B.dylib; it is never bundled). The good wheel is laid out as the
fork's build script lays out the macOS wheel: libmxnet.dylib (id @rpath/libmxnet.dylib, LC_RPATH
@loader_path/lib, references @loader_path/lib/<name>), and in mxnet/lib/ libomp (a fat arm64+x86_64
file, as LLVM's universal builds are) and an OpenCV closure (libopencv_core/imgproc/imgcodecs and
the libpng that imgcodecs loads through @rpath, found via libmxnet's LC_RPATH), each with id
@rpath/<name>; references rewritten with llvm-install-name-tool as the fork rewrites them with
install_name_tool. Each regression variant is that wheel with one real defect made by the same
tools (a relink, a -change / -id / -add_rpath, a library built for another arch or macOS).

The real public macOS wheel ``mxnet==1.9.1`` (macosx_10_13_x86_64) is downloaded once into the
selftest cache, as fixtures_runtime caches the Linux one.
"""
from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from build_steps.once import run_once
from selftest.fixtures_readers import write_wheel
from selftest.fixtures_runtime import selftest_cache
from selftest.fixtures_wheels import commit_again, make_source_tree, metadata_text, write_build_dir

MACOS_VERSION = "2.0.0+cpu.macos.20260614.1"
MACOS_TAG = "cp312-cp312-macosx_11_0_arm64"
TARGET = "arm64-apple-macos11"
MXNET_191_MACOS = "mxnet-1.9.1-py3-none-macosx_10_13_x86_64.whl"

# name -> (C source, libraries it links, the references the fork's bundling rewrites to @loader_path)
_SYSTEM_C = """
int macos_selftest_system(void) { return 0; }
void macos_selftest_stub_binder(void) __asm__("dyld_stub_binder");
void macos_selftest_stub_binder(void) {}
"""
_LIBS = {
    "libomp.dylib": ("int omp_get_max_threads(void) { return 1 + macos_selftest_system(); }", ()),
    "libpng16.16.dylib": ("int png_access_version_number(void) { return 10643 + macos_selftest_system(); }", ()),
    "libopencv_core.410.dylib": ("int cv_core(void) { return macos_selftest_system(); }", ()),
    "libopencv_imgproc.410.dylib": ("extern int cv_core(void);\nint cv_imgproc(void) { return cv_core(); }",
                                    ("libopencv_core.410.dylib",)),
    "libopencv_imgcodecs.410.dylib": (
        "extern int cv_core(void); extern int cv_imgproc(void); extern int png_access_version_number(void);\n"
        "int cv_imgcodecs(void) { return cv_core() + cv_imgproc() + png_access_version_number(); }",
        ("libopencv_core.410.dylib", "libopencv_imgproc.410.dylib", "libpng16.16.dylib")),
}
_PROTOS = "extern int macos_selftest_system(void);\n"
OPENCV = ("libopencv_core.410.dylib", "libopencv_imgproc.410.dylib", "libopencv_imgcodecs.410.dylib")
_MXNET_C = """
extern int omp_get_max_threads(void);
extern int cv_imgcodecs(void);
int MXGetVersion(int *out) { *out = omp_get_max_threads() + cv_imgcodecs(); return 0; }
const char *MXGetCommitHash(void) { return "%(commit)s"; }
"""
_MXNET_NO_OMP_C = "extern int cv_imgcodecs(void);\nint MXGetVersion(int *out) { *out = cv_imgcodecs(); return 0; }\n"
_MXNET_NO_CV_C = "extern int omp_get_max_threads(void);\nint MXGetVersion(int *out) { *out = omp_get_max_threads(); return 0; }\n"


def llvm_tool(name: str) -> str:
    """``llvm-<name>`` (Debian ships it versioned, as llvm-<name>-14, or in /usr/lib/llvm-*/bin)."""
    found = shutil.which(f"llvm-{name}") or next(iter(sorted(glob.glob(f"/usr/bin/llvm-{name}-*"), reverse=True)), None) \
        or next(iter(sorted(glob.glob(f"/usr/lib/llvm-*/bin/llvm-{name}"), reverse=True)), None)
    if not found:
        pytest.fail(f"llvm-{name} not found: install the llvm package (scripts/setup.sh does)", pytrace=False)
    return found


def _run(cmd) -> None:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


def link_dylib(out: Path, source: str, *, install_name: str, libs=(), lib_dir: Path | None = None,
               rpaths=(), target: str = TARGET, extra=()) -> Path:
    """Compile ``source`` and link it into a Mach-O dylib with ld64.lld."""
    if shutil.which("clang") is None:
        pytest.fail("clang not found: install clang and lld (scripts/setup.sh does)", pytrace=False)
    src = out.with_suffix(".c")
    src.write_text(source)
    cmd = ["clang", "-target", target, "-fuse-ld=lld", "-nostdlib", "-shared", "-O1", "-o", out, src,
           f"-Wl,-install_name,{install_name}", "-Wl,-headerpad_max_install_names"]  # room for -change/-add_rpath, as CMake links on macOS
    cmd += [lib_dir / name for name in libs]  # linked by path: the reference is the dylib's install name
    cmd += [f"-Wl,-rpath,{r}" for r in rpaths] + list(extra)
    _run(cmd)
    src.unlink()
    return out


def install_name_tool(path: Path, *args) -> None:
    _run([llvm_tool("install-name-tool"), *args, path])


def _libs(work: Path, *, target: str = TARGET, only=None) -> dict:
    """The bundled libraries, laid out and rewritten as the fork bundles them (member name -> path)."""
    work.mkdir(parents=True, exist_ok=True)
    system = link_dylib(work / "libSystem.B.dylib", _SYSTEM_C, install_name="/usr/lib/libSystem.B.dylib",
                        target=target)
    out = {}
    for name, (body, deps) in _LIBS.items():
        if only is not None and name not in only:
            continue
        path = link_dylib(work / name, _PROTOS + body, install_name=f"@rpath/{name}",
                          libs=(*deps, system.name), lib_dir=work, target=target)
        for dep in deps:
            if dep != "libpng16.16.dylib":  # imgcodecs keeps @rpath for libpng: libmxnet's rpath serves it
                install_name_tool(path, "-change", f"@rpath/{dep}", f"@loader_path/{dep}")
        out[name] = path
    return out


def _libmxnet(work: Path, lib_dir: Path, source: str, libs=("libomp.dylib", *OPENCV)) -> Path:
    path = link_dylib(work / "libmxnet.dylib", source, install_name="@rpath/libmxnet.dylib",
                      libs=(*libs, "libSystem.B.dylib"), lib_dir=lib_dir, rpaths=("@loader_path/lib",))
    for name in libs:
        install_name_tool(path, "-change", f"@rpath/{name}", f"@loader_path/lib/{name}")
    return path


def rewrite_reference(path: Path, old: str, new: str) -> None:
    """Change a load command with macholib, which (like any editor but Apple's and LLVM's
    install_name_tool) leaves the code signature as it was: stale."""
    from macholib.MachO import MachO
    parsed = MachO(str(path))
    assert parsed.rewriteLoadCommands(lambda name: new if name == old else None), f"{old} not in {path}"
    with open(path, "rb+") as fh:
        parsed.write(fh)


def _fat(out: Path, *slices: Path) -> Path:
    _run([llvm_tool("lipo"), "-create", *slices, "-output", out])
    return out


def _package(dest: Path, libmxnet: Path, lib_files: dict, *, requires=None, tag: str = MACOS_TAG) -> str:
    dist_info = f"mxnet-{MACOS_VERSION}.dist-info"
    files = {
        "mxnet/__init__.py": b"__version__ = '2.0.0'\n",
        "mxnet/onnx/__init__.py": b"",
        "mxnet/libmxnet.dylib": Path(libmxnet).read_bytes(),
    }
    for name, path in sorted(lib_files.items()):
        files[f"mxnet/lib/{name}"] = Path(path).read_bytes()
    files[f"{dist_info}/METADATA"] = metadata_text("macos", MACOS_VERSION, requires).encode()
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: mxnet-selftest\nRoot-Is-Purelib: false\n"
                                   f"Tag: {tag}\n\n").encode()
    return str(write_wheel(dest / f"mxnet-{MACOS_VERSION}-{tag}.whl", files))


def build_macos_wheels(work: Path) -> dict:
    """The good macOS wheel and one wheel per regression (variant name -> wheel path)."""
    from build_steps.profile_data import PROFILES
    base = _libs(work / "arm64")
    x86 = _libs(work / "x86_64", target="x86_64-apple-macos11", only=("libomp.dylib", "libpng16.16.dylib"))
    good = dict(base)
    good["libomp.dylib"] = _fat(work / "libomp-fat.dylib", base["libomp.dylib"], x86["libomp.dylib"])
    # The tree the wheel says it was built from: its HEAD is the stamp in libmxnet's __cstring.
    src = work / "src"
    head = make_source_tree(src)
    write_build_dir(src / "build", "macos", head)
    mxnet = _libmxnet(work / "arm64", work / "arm64", _MXNET_C % {"commit": head})
    out = {"good": _package(work / "good", mxnet, good), "src": str(src), "head": head}
    moved = work / "src-moved"
    shutil.copytree(src, moved, symlinks=True)
    out["src_moved"], out["moved_head"] = str(moved), commit_again(moved)
    out["cache_openmp_off"] = str(write_build_dir(work / "openmp_off", "macos", head, features={"USE_OPENMP": False}))

    def variant(name, lib_files=None, libmxnet=None, **kw):
        out[name] = _package(work / name, libmxnet or mxnet, good if lib_files is None else lib_files, **kw)

    def edited(name, member, *args, source=None):
        path = work / name / "edit" / Path(member).name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source or (mxnet if member == "libmxnet.dylib" else good[member]), path)
        install_name_tool(path, *args)
        return path

    # arch: a bundled library built for Intel only
    variant("x86_64_bundled", {**good, "libpng16.16.dylib": x86["libpng16.16.dylib"]})
    # minimum macOS: OpenCV from a Homebrew bottle, built for the runner's macOS 15
    core15 = work / "macos15" / "libopencv_core.410.dylib"
    (work / "macos15").mkdir(exist_ok=True)
    shutil.copyfile(work / "arm64" / "libSystem.B.dylib", work / "macos15" / "libSystem.B.dylib")
    link_dylib(core15, _PROTOS + _LIBS["libopencv_core.410.dylib"][0],
               install_name="@rpath/libopencv_core.410.dylib", libs=("libSystem.B.dylib",),
               lib_dir=work / "macos15", target="arm64-apple-macos15")
    variant("minos_too_new", {**good, "libopencv_core.410.dylib": core15})
    # build-host paths: a Homebrew reference left in the closure; a Homebrew LC_RPATH on libmxnet
    variant("homebrew_reference", {**good, "libopencv_imgcodecs.410.dylib": edited(
        "homebrew_reference", "libopencv_imgcodecs.410.dylib", "-change", "@rpath/libpng16.16.dylib",
        "/opt/homebrew/opt/libpng/lib/libpng16.16.dylib")})
    variant("homebrew_rpath", libmxnet=edited("homebrew_rpath", "libmxnet.dylib", "-add_rpath", "/opt/homebrew/lib"))
    # closure: libpng (imgcodecs' dependency) left out of the bundle
    variant("closure_incomplete", {k: v for k, v in good.items() if k != "libpng16.16.dylib"})
    # OpenMP: built without it; runtime not bundled; referenced at its Homebrew path
    (work / "no_omp").mkdir()
    variant("openmp_off", libmxnet=_libmxnet(work / "no_omp", work / "arm64", _MXNET_NO_OMP_C, libs=OPENCV))
    variant("openmp_not_bundled", {k: v for k, v in good.items() if k != "libomp.dylib"})
    variant("openmp_absolute", libmxnet=edited("openmp_absolute", "libmxnet.dylib", "-change",
                                               "@loader_path/lib/libomp.dylib", "/opt/homebrew/opt/libomp/lib/libomp.dylib"))
    # OpenCV: compiled out; not bundled
    (work / "no_cv").mkdir()
    variant("opencv_off", libmxnet=_libmxnet(work / "no_cv", work / "arm64", _MXNET_NO_CV_C, libs=("libomp.dylib",)))
    variant("opencv_not_bundled", {k: v for k, v in good.items() if not k.startswith("libopencv_")})
    # install names: a bundled library that kept its Homebrew id
    variant("install_name_stale", {**good, "libopencv_imgproc.410.dylib": edited(
        "install_name_stale", "libopencv_imgproc.410.dylib", "-id",
        "/opt/homebrew/opt/opencv/lib/libopencv_imgproc.410.dylib")})
    # code signature: a reference rewritten with macholib (as delocate does) and not re-signed; and
    # a library linked without the linker's ad-hoc signature
    stale = work / "signature_stale" / "libopencv_imgproc.410.dylib"
    stale.parent.mkdir(parents=True)
    shutil.copyfile(good["libopencv_imgproc.410.dylib"], stale)
    rewrite_reference(stale, "@loader_path/libopencv_core.410.dylib", "@rpath/libopencv_core.410.dylib")
    variant("signature_stale", {**good, "libopencv_imgproc.410.dylib": stale})
    unsigned = work / "unsigned" / "libpng16.16.dylib"
    unsigned.parent.mkdir(parents=True)
    shutil.copyfile(work / "arm64" / "libSystem.B.dylib", unsigned.parent / "libSystem.B.dylib")
    link_dylib(unsigned, _PROTOS + _LIBS["libpng16.16.dylib"][0], install_name="@rpath/libpng16.16.dylib",
               libs=("libSystem.B.dylib",), lib_dir=unsigned.parent, extra=("-Wl,-no_adhoc_codesign",))
    variant("unsigned", {**good, "libpng16.16.dylib": unsigned})
    # not Mach-O at all: an ELF library under the dylib's name
    variant("libmxnet_elf", libmxnet=Path(shutil.which("true")).resolve())
    # metadata: onnx only as the extra on a macOS wheel
    variant("onnx_extra_only", requires=[r for r in PROFILES["macos"].hard_requirements if not r.startswith("onnx")])
    return out


@pytest.fixture(scope="session")
def macos_wheels(shared_dir) -> dict:
    """The good macOS wheel and its regression variants (built once per run, a few seconds)."""
    return run_once(shared_dir, "macos-wheels", lambda: build_macos_wheels(shared_dir / "macos-wheels"))


@pytest.fixture(scope="session")
def mxnet191_macos_wheel() -> Path:
    """The real mxnet 1.9.1 macOS wheel from PyPI (macosx_10_13_x86_64), downloaded once."""
    dest = selftest_cache() / "macos"
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / MXNET_191_MACOS
    with FileLock(str(dest) + ".lock"):
        if not wheel.is_file():
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
                 "--platform", "macosx_10_13_x86_64", "--only-binary=:all:", "-d", str(dest), "mxnet==1.9.1"],
                capture_output=True, text=True)
            if proc.returncode != 0 or not wheel.is_file():
                pytest.fail(f"could not fetch the mxnet 1.9.1 macOS wheel from the package index (network?):\n"
                            f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}", pytrace=False)
    return wheel
