"""Selftest fixtures: wheels area.

Wheels made from real parts, once per session for all xdist workers:
- libmxnet.so linked by gcc, so its NEEDED entries come from a real link: against link-only stubs
  that carry the CUDA SONAMEs (libcuda.so.1, libcudart.so.13, libcublas.so.13, libcudnn.so.9,
  libnccl.so.2; never shipped) and against the host's real OpenCV 4.6 (libopencv-dev);
- a real nvcc fatbin for the release arch list linked in, and a commit stamp string in .rodata;
- the real OpenCV closure bundled by build_steps.bundle (per-library $ORIGIN RUNPATH, patchelf),
  libmxnet's RUNPATH set from the profile, METADATA from the profile, mxnet/onnx/, a correct RECORD;
- a tiny git "source tree" with a build dir (CMakeCache.txt, build.ninja) the stamp points at.
Regression variants are derived from the good wheel by rewriting the zip (compresslevel 1),
swapping in a relinked libmxnet or a patched member, and fixing RECORD unless RECORD is the point.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from build_steps.once import run_once
from build_steps.profile_data import PROFILES
from build_steps.arch import parse_cuda_arch

OPENCV_DIR = Path("/usr/lib/x86_64-linux-gnu")
OPENCV_LIBS = ("libopencv_core.so.406", "libopencv_imgproc.so.406", "libopencv_imgcodecs.so.406")
CUDA_STUBS = ("libcuda.so.1", "libcudart.so.13", "libcublas.so.13", "libcudnn.so.9", "libnccl.so.2")
VERSION = {"cuda": "2.0.0+cu13.bw.20260614.1", "cpu": "2.0.0+cpu.linux.20260614.1"}
WHEEL_TAG = "cp311-cp311-linux_x86_64"
BUILD_TREE_RPATH = "/home/builder/mxnet/build"
#: A second 40-hex string in .rodata, as oneDNN's version hash is in the real libmxnet.
DECOY_HASH = "0123456789abcdef0123456789abcdef01234567"
WHEEL_FILE = (f"Wheel-Version: 1.0\nGenerator: mxnet-selftest\nRoot-Is-Purelib: false\n"
              f"Tag: {WHEEL_TAG}\n\n").encode()
ONNX_EXTRA = 'onnx>=1.7.0,<1.22; extra == "onnx"'

_KERNEL = r"""
static __global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
extern "C" void %(name)s(float a, const float *x, float *y, int n) { axpy<<<(n + 255) / 256, 256>>>(a, x, y, n); }
"""


def _run(cmd, cwd=None, env=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


# --------------------------------------------------------------------------------------------
# Parts
# --------------------------------------------------------------------------------------------
def make_source_tree(src: Path) -> str:
    """A git checkout with one commit; returns HEAD. Build dirs are ignored, as in MXNet."""
    src.mkdir(parents=True)
    (src / "README.md").write_text("mxnet-shaped selftest tree\n")
    (src / ".gitignore").write_text("build/\nbuild-cpu/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "GIT_AUTHOR_DATE": "2026-06-14T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-06-14T00:00:00Z"}
    _run(["git", "init", "-q", "-b", "master", src])
    _run(["git", "-C", src, "add", "-A"], env=env)
    _run(["git", "-C", src, "commit", "-q", "-m", "init"], env=env)
    return _run(["git", "-C", src, "rev-parse", "HEAD"]).strip()


def commit_again(src: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    (src / "README.md").write_text("changed after the build\n")
    _run(["git", "-C", src, "commit", "-q", "-am", "later"], env=env)
    return _run(["git", "-C", src, "rev-parse", "HEAD"]).strip()


def write_build_dir(build: Path, flavor: str, commit: str, *, features=None, cuda_arch=None) -> Path:
    """CMakeCache.txt + build.ninja as CMake writes them (the stamp as a global define)."""
    profile = PROFILES[flavor]
    build.mkdir(parents=True, exist_ok=True)
    feats = dict(profile.features, **(features or {}))
    lines = ["# This is the CMakeCache file.", "//Build type", "CMAKE_BUILD_TYPE:STRING=Release"]
    for key, on in feats.items():
        lines += [f"//Use {key}", f"{key}:BOOL={'ON' if on else 'OFF'}"]
    arch = cuda_arch if cuda_arch is not None else profile.cuda_arch
    if arch:
        lines += ["//CUDA archs", f"MXNET_CUDA_ARCH:STRING={arch}"]
    (build / "CMakeCache.txt").write_text("\n".join(lines) + "\n")
    (build / "build.ninja").write_text(
        "ninja_required_version = 1.5\n"
        f"build CMakeFiles/mxnet.dir/src/c_api.cc.o: CXX_COMPILER__mxnet_Release ../src/c_api.cc\n"
        f"  DEFINES = -DMXNET_BRANCH=\\\"master\\\" -DMXNET_COMMIT_HASH=\\\"{commit}\\\" -DNDEBUG\n")
    return build / "CMakeCache.txt"


def make_stubs(d: Path) -> dict:
    """Link-only libraries that carry the CUDA SONAMEs (they are never shipped)."""
    d.mkdir(parents=True)
    (d / "stub.c").write_text("int mxnet_selftest_stub_symbol(void) { return 0; }\n")
    out = {}
    for soname in CUDA_STUBS:
        _run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", d / soname, d / "stub.c"])
        out[soname] = d / soname
    return out


def compile_kernel(d: Path, name: str, arch: str, flags=None) -> Path:
    """A real fatbin: nvcc -gencode for every arch of ``arch`` (MXNET_CUDA_ARCH syntax), or the
    -gencode ``flags`` given (suffixed targets such as sm_100a have no MXNET_CUDA_ARCH spelling)."""
    d.mkdir(parents=True, exist_ok=True)
    cu = d / f"{name}.cu"
    cu.write_text(_KERNEL % {"name": name})
    obj = d / f"{name}.o"
    _run(["nvcc", "-c", "-Xcompiler", "-fPIC", *(flags or parse_cuda_arch(arch).gencode_flags), "-o", obj, cu])
    return obj


def compile_kernel_ptx_isa(d: Path, name: str, arch: str, isa: str) -> Path:
    """compile_kernel's object with its PTX saying ``.version <isa>``, as a newer nvcc emits it:
    nvcc's own steps (--keep, then its --dryrun commands from fatbinary on) rerun on the edited PTX,
    so fatbinary records the ISA from the text, as it does for any PTX."""
    d.mkdir(parents=True, exist_ok=True)
    keep = d / f"{name}.keep"
    keep.mkdir(exist_ok=True)
    cu = d / f"{name}.cu"
    cu.write_text(_KERNEL % {"name": name})
    obj = d / f"{name}.o"
    cmd = ["nvcc", "-c", "-Xcompiler", "-fPIC", *parse_cuda_arch(arch).gencode_flags, "--keep",
           f"--keep-dir={keep}", "-o", str(obj), str(cu)]
    _run(cmd)
    dry = subprocess.run([*cmd, "--dryrun"], capture_output=True, text=True, check=True, cwd=d)
    steps = [ln[3:] for ln in (dry.stdout + dry.stderr).splitlines() if ln.startswith("#$ ")]
    start = next(i for i, ln in enumerate(steps) if ln.startswith("fatbinary "))
    for ptx in keep.glob("*.ptx"):
        ptx.write_text(re.sub(r"^\.version \S+$", f".version {isa}", ptx.read_text(), count=1, flags=re.M))
    for step in steps[start:]:
        subprocess.run(step, shell=True, check=True, cwd=d)  # nvcc's own command lines, quoted for a shell
    return obj


def build_kernel_library(d: Path, soname: str, arch: str) -> Path:
    """A second CUDA library as a build makes one: nvcc -shared with its own SONAME and fatbin."""
    d.mkdir(parents=True, exist_ok=True)
    cu = d / "kernels.cu"
    cu.write_text(_KERNEL % {"name": "mxnet_selftest_second_kernel"})
    out = d / soname
    _run(["nvcc", "-shared", "-Xcompiler", "-fPIC", f"-Xlinker=-soname,{soname}",
          *parse_cuda_arch(arch).gencode_flags, "-o", out, cu])
    return out


def build_unversioned_stubs(d: Path, sonames) -> list:
    """Link-only stubs carrying other SONAME majors (libcudart.so.11.0, libcudnn.so.8: the CUDA 11
    stack the real mxnet-cu112 wheel links)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "stub.c").write_text("int mxnet_selftest_old_stub_symbol(void) { return 0; }\n")
    out = []
    for soname in sonames:
        _run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", d / soname, d / "stub.c"])
        out.append(d / soname)
    return out


def build_path_needed(d: Path) -> tuple:
    """(work dir, relative path) of a library without a SONAME: linking it by that path records
    the path itself as the NEEDED entry, slash and all, as a build that links ``deps/libx.so``
    without -l does."""
    (d / "deps").mkdir(parents=True, exist_ok=True)
    (d / "nosoname.c").write_text("int mxnet_selftest_nosoname(void) { return 1; }\n")
    _run(["gcc", "-shared", "-fPIC", "-o", d / "deps" / "libmxnet_selftest_nosoname.so", d / "nosoname.c"])
    return d, "deps/libmxnet_selftest_nosoname.so"


def compile_stamp(d: Path, commit: str | None) -> Path:
    """The commit stamp as MXGetCommitHash returns it: a string literal in .rodata."""
    d.mkdir(parents=True, exist_ok=True)
    src = d / f"stamp_{commit or 'none'}.c"
    # Without a stamp there is no 40-hex string at all, so the build-file fallback is exercised.
    body = (f'const char *MXGetCommitHash(void) {{ return "{commit}"; }}\n'
            f'const char *dnnl_version_hash(void) {{ return "{DECOY_HASH}"; }}\n') if commit else \
        'const char *MXGetCommitHash(void) { return "NotProvided"; }\n'
    src.write_text(body)
    obj = src.with_suffix(".o")
    _run(["gcc", "-c", "-fPIC", "-O0", "-o", obj, src])
    return obj


def link_libmxnet(out: Path, objects, needed_libs, extra_flags=(), cwd=None) -> Path:
    """gcc -shared with --no-as-needed, so every library given becomes a DT_NEEDED entry."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(["gcc", "-shared", "-o", out.resolve(), "-Wl,-soname,libmxnet.so", "-Wl,--no-as-needed",
          f"-Wl,-rpath,{BUILD_TREE_RPATH}", *extra_flags, *objects, *needed_libs, "-lgomp", "-lstdc++"], cwd=cwd)
    return out


# Parts for the loadability regressions (issue 12): each a real object or library from gcc/ld.
def compile_textrel(d: Path) -> Path:
    """An object with an absolute address in .text: linked into a shared object, a DT_TEXTREL."""
    d.mkdir(parents=True, exist_ok=True)
    src = d / "textrel.s"
    src.write_text("\t.text\n\t.globl mxnet_selftest_textrel\nmxnet_selftest_textrel:\n"
                   "\t.quad mxnet_selftest_textrel_target\n\t.data\n\t.globl mxnet_selftest_textrel_target\n"
                   "mxnet_selftest_textrel_target:\n\t.quad 0\n\t.section .note.GNU-stack,\"\",@progbits\n")
    _run(["gcc", "-c", "-o", d / "textrel.o", src])
    return d / "textrel.o"


def compile_debug(d: Path) -> Path:
    """An object compiled with gcc -g, as a RelWithDebInfo build compiles: DWARF in the library it joins."""
    d.mkdir(parents=True, exist_ok=True)
    src = d / "debug.c"
    src.write_text("int mxnet_selftest_debug(int x) { int y = x * 3; return y + 1; }\n")
    _run(["gcc", "-g", "-O2", "-c", "-fPIC", "-o", d / "debug.o", src])
    return d / "debug.o"


def build_newer_glibc(d: Path) -> tuple:
    """(object, link-only libc.so.6) such that linking both records a need for GLIBC_2.40, as a
    link on a newer host than the reference (glibc 2.39) does: the stub defines a symbol under that
    version, the object calls it."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "v.map").write_text("GLIBC_2.40 { global: mxnet_selftest_glibc_2_40_symbol; };\n")
    (d / "newc.c").write_text("int mxnet_selftest_glibc_2_40_symbol(void) { return 0; }\n")
    stub = d / "stub" / "libc.so.6"
    stub.parent.mkdir()
    _run(["gcc", "-shared", "-fPIC", "-nostdlib", "-Wl,-soname,libc.so.6", f"-Wl,--version-script,{d / 'v.map'}",
          "-o", stub, d / "newc.c"])
    (d / "usenew.c").write_text("int mxnet_selftest_glibc_2_40_symbol(void);\n"
                                "int mxnet_selftest_new_host(void) { return mxnet_selftest_glibc_2_40_symbol(); }\n")
    _run(["gcc", "-c", "-fPIC", "-o", d / "usenew.o", d / "usenew.c"])
    return d / "usenew.o", stub


def build_plain_lib(d: Path, soname: str, *, m32: bool = False) -> Path:
    """A small real shared library named ``soname`` (64-bit by gcc; 32-bit i386 by gcc -m32 + ld)."""
    d.mkdir(parents=True, exist_ok=True)
    src = d / f"{soname}.c"
    symbol = re.sub(r"\W", "_", soname)
    src.write_text(f"int mxnet_selftest_{symbol}(int x) {{ return x + 1; }}\n")
    out = d / soname
    if m32:  # no 32-bit libc needed: compile with -m32, link with ld's i386 emulation
        _run(["gcc", "-m32", "-fPIC", "-c", "-o", d / f"{soname}.o", src])
        _run(["ld", "-m", "elf_i386", "-shared", "-z", "noexecstack", "-soname", soname, "-o", out, d / f"{soname}.o"])
    else:
        _run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", out, src])
    return out


def build_extension_module(d: Path, module: str, abi: str) -> Path:
    """A real CPython extension module ``<module>.<abi>.so`` (gcc against this Python's headers,
    with its ``PyInit_<module>``), named for the ABI ``abi`` (``cpython-310-x86_64-linux-gnu``)."""
    import sysconfig
    d.mkdir(parents=True, exist_ok=True)
    src = d / f"{module}.c"
    src.write_text("#include <Python.h>\n"
                   f"static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, \"{module}\", NULL, -1, NULL}};\n"
                   f"PyMODINIT_FUNC PyInit_{module}(void) {{ return PyModule_Create(&def); }}\n")
    out = d / f"{module}.{abi}.so"
    _run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o", out, src])
    return out


def renamed_version(files: dict, old: str, new: str, dest: Path) -> Path:
    """The wheel of ``files`` under another version: file name, .dist-info and METADATA agree."""
    renamed = {m.replace(f"mxnet-{old}.dist-info/", f"mxnet-{new}.dist-info/"): b for m, b in files.items()}
    meta = f"mxnet-{new}.dist-info/METADATA"
    renamed[meta] = renamed[meta].replace(f"Version: {old}".encode(), f"Version: {new}".encode())
    return write_wheel(dest, renamed, version=new)


# --------------------------------------------------------------------------------------------
# Wheels
# --------------------------------------------------------------------------------------------
def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def metadata_text(flavor: str, version: str, requires=None) -> str:
    profile = PROFILES[flavor]
    reqs = list(profile.hard_requirements) if requires is None else list(requires)
    lines = ["Metadata-Version: 2.1", "Name: mxnet", f"Version: {version}",
             "Summary: MXNet selftest wheel", "Requires-Python: >=3.10", "Provides-Extra: onnx"]
    lines += [f"Requires-Dist: {r}" for r in reqs] + [f"Requires-Dist: {ONNX_EXTRA}"]
    return "\n".join(lines) + "\n\n"


def write_wheel(dest: Path, files: dict, *, version: str, fix_record: bool = True, record_override=None) -> Path:
    """Write ``files`` (member -> bytes) plus dist-info as a wheel; RECORD is computed from the bytes."""
    dist_info = f"mxnet-{version}.dist-info"
    files = dict(files)
    files.setdefault(f"{dist_info}/WHEEL", WHEEL_FILE)
    record_name = f"{dist_info}/RECORD"
    rows = [(m, _record_hash(b), str(len(b))) for m, b in files.items()] + [(record_name, "", "")]
    if record_override:
        rows = [(m, record_override.get(m, h), s) for m, h, s in rows]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    files[record_name] = buf.getvalue().encode()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for member, data in files.items():
            zf.writestr(member, data)
    tmp.replace(dest)
    return dest


def rewrite_wheel(src: Path, dest: Path, files: dict, original: dict, *, record_override=None) -> Path:
    """``dest`` = ``src`` with members changed/added/removed to match ``files``; RECORD recomputed.

    Unchanged members are copied as their compressed bytes (zipfile has no public raw copy, so
    the local header is rewritten here), which makes a variant of a 150 MB wheel cost ~1 s.
    """
    import copy
    import struct
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    with zipfile.ZipFile(src) as zsrc, open(src, "rb") as fh, \
            zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zdst:
        infos = {i.filename: i for i in zsrc.infolist()}
        rows = []
        for member, data in files.items():
            rows.append((member, _record_hash(data), str(len(data))))
            if member in infos and original.get(member) is data:
                info = infos[member]
                fh.seek(info.header_offset)
                head = fh.read(30)
                n, m = struct.unpack("<HH", head[26:30])
                fh.seek(info.header_offset + 30 + n + m)
                raw = fh.read(info.compress_size)
                zi = copy.copy(info)
                zi.extra = b""
                zi.header_offset = zdst.fp.tell()
                zdst.fp.write(zi.FileHeader())
                zdst.fp.write(raw)
                zdst.filelist.append(zi)
                zdst.NameToInfo[zi.filename] = zi
                zdst.start_dir = zdst.fp.tell()
                zdst._didModify = True
            else:
                zdst.writestr(member, data)
        record_name = next(n for n in infos if n.endswith(".dist-info/RECORD"))
        if record_override:
            rows = [(m, record_override.get(m, h), s) for m, h, s in rows]
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows + [(record_name, "", "")])
        zdst.writestr(record_name, buf.getvalue())
    tmp.replace(dest)
    return dest


def wrong_crc(src: Path, dest: Path, member: str) -> Path:
    """``src`` with ``member``'s CRC-32 changed in its local and central headers: the bytes and
    RECORD's sha256 still match, but pip (zipfile) refuses the member ("Bad CRC-32")."""
    import struct
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        info = zf.getinfo(member)
        bad = (info.CRC ^ 0xFFFFFFFF) & 0xFFFFFFFF
        struct.pack_into("<I", data, info.header_offset + 14, bad)  # local header
    name = member.encode()
    pos = zf.start_dir
    while True:  # the central directory entry of this member
        pos = data.index(b"PK\x01\x02", pos)
        n, m, k = struct.unpack_from("<HHH", data, pos + 28)
        if bytes(data[pos + 46:pos + 46 + n]) == name:
            struct.pack_into("<I", data, pos + 16, bad)
            break
        pos += 46 + n + m + k
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(bytes(data))
    return dest


def local_name_mismatch(src: Path, dest: Path, member: str, local_name: str) -> Path:
    """``src`` with ``member``'s local file header naming ``local_name`` (same length) while the
    central directory and RECORD keep ``member``: zipfile refuses it, ``jar x`` writes the local name."""
    assert len(local_name.encode()) == len(member.encode())
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        offset = zf.getinfo(member).header_offset
    assert data[offset + 30:offset + 30 + len(member)] == member.encode()
    data[offset + 30:offset + 30 + len(member)] = local_name.encode()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(bytes(data))
    return dest


def wheel_name(version: str) -> str:
    return f"mxnet-{version}-{WHEEL_TAG}.whl"


def read_wheel(path: Path) -> dict:
    """member -> bytes, without dist-info RECORD (it is recomputed on write)."""
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist() if not n.endswith(".dist-info/RECORD")}


def stage_package(stage: Path, libmxnet: Path, flavor: str) -> dict:
    """Stage mxnet/ with the bundled OpenCV closure; returns member -> bytes (links as copies)."""
    from build_steps.bundle import bundle_closure, set_runpath
    profile = PROFILES[flavor]
    pkg = stage / "mxnet"
    (pkg / "onnx").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""mxnet (selftest)"""\n')
    (pkg / "onnx" / "__init__.py").write_text('"""mxnet.onnx (selftest)"""\n')
    lib = pkg / "libmxnet.so"
    shutil.copy2(libmxnet, lib)
    bundle_closure(lib, pkg / "lib", profile)
    set_runpath(lib, list(profile.runpath))
    files = {}
    for p in sorted(stage.rglob("*")):
        if p.is_file():  # follows SONAME symlinks: a zip stores them as second copies
            files[p.relative_to(stage).as_posix()] = p.read_bytes()
    return files


def graft_map(files: dict) -> dict:
    """host SONAME -> grafted name, for every library the bundle step grafted into ``files``."""
    out = {}
    for m in files:
        if m.startswith("mxnet/lib/"):
            name = m.rsplit("/", 1)[-1]
            hit = re.match(r"^(.+)-[0-9a-f]{8}(\.so.*)$", name)
            if hit:
                out[hit[1] + hit[2]] = name
    return out


def with_soname(_data: bytes, path: Path, member: str, grafts: dict) -> bytes:
    """``path`` (written by patched_libmxnet) with the SONAME of the grafted ``member`` and its NEEDED
    entries grafted: the same library staged again, as a stale staging directory would hold it."""
    from build_steps.bundle import patch_names
    patch_names(path, grafts, soname=member.rsplit("/", 1)[-1])
    return path.read_bytes()


def patched_libmxnet(src: Path, dest: Path, runpath, grafts: dict | None = None) -> bytes:
    """``src`` with ``runpath``; with ``grafts``, its NEEDED entries renamed as the bundle step does
    for the libmxnet it stages (a library swapped into a good wheel must need the grafted names)."""
    from build_steps.bundle import patch_names, set_runpath
    shutil.copy2(src, dest)
    set_runpath(dest, list(runpath))
    if grafts:
        patch_names(dest, grafts)
    return dest.read_bytes()


def _leaf_and_inner(root: Path, files: dict):
    """A bundled leaf (only host NEEDED) and a transitive non-OpenCV lib that another bundled lib needs."""
    from build_steps.readers.elf import read_dynamic
    from build_steps.library_policy import is_host_library
    bundled = [m for m in files if m.startswith("mxnet/lib/")]
    needed_by_others = {}
    leaf = None
    for m in sorted(bundled):
        info = read_dynamic(root / m)
        for n in info.needed:
            needed_by_others.setdefault(n, m)
        if leaf is None and info.needed and all(is_host_library(n) for n in info.needed):
            leaf = m
    inner = next(n for n in sorted(needed_by_others) if f"mxnet/lib/{n}" in files
                 and not n.startswith("libopencv_") and needed_by_others[n].startswith("mxnet/lib/libopencv_"))
    return leaf, inner


def bundled_member(files: dict, soname: str) -> str:
    """The member the bundle step grafted the host library ``soname`` under: ``libz.so.1`` ->
    ``mxnet/lib/libz-<hash8>.so.1`` (build_steps.bundle.graft_name)."""
    stem, dot_so, rest = soname.partition(".so")
    pattern = re.compile(rf"^mxnet/lib/{re.escape(stem)}-[0-9a-f]{{8}}{re.escape(dot_so + rest)}$")
    hits = [m for m in files if pattern.match(m)]
    if len(hits) != 1:
        raise AssertionError(f"{soname}: {len(hits)} grafted members ({hits})")
    return hits[0]


def _same_file_members(files: dict, member: str) -> list:
    data = files[member]
    return [m for m, b in files.items() if m.startswith("mxnet/lib/") and b == data]


def build_selftest_wheels(work: Path) -> dict:
    """Everything the static-gate selftests need; returns a JSON-able dict of paths."""
    work.mkdir(parents=True, exist_ok=True)
    out = {}
    src = work / "src"
    head = make_source_tree(src)
    out["src"], out["head"] = str(src), head
    out["cache_cuda"] = str(write_build_dir(src / "build", "cuda", head))
    out["cache_cpu"] = str(write_build_dir(src / "build-cpu", "cpu", head))

    stubs = make_stubs(work / "stubs")
    opencv = [OPENCV_DIR / n for n in OPENCV_LIBS]
    cuda_libs = [stubs[n] for n in CUDA_STUBS]
    objs = work / "obj"
    release = PROFILES["cuda"].cuda_arch
    k_full = compile_kernel(objs, "k_full", release)
    k_no100 = compile_kernel(objs, "k_no100", release.replace("10.0;", ""))
    k_noptx = compile_kernel(objs, "k_noptx", release.replace("+PTX", ""))
    k_no89 = compile_kernel(objs, "k_no89", release.replace("8.9;", ""))
    stamp = compile_stamp(objs, head)
    nostamp = compile_stamp(objs, None)

    libs = work / "libs"
    L = {
        "cuda": link_libmxnet(libs / "cuda/libmxnet.so", [stamp, k_full], cuda_libs + opencv),
        "cuda_no_opencv": link_libmxnet(libs / "cuda_no_opencv/libmxnet.so", [stamp, k_full], cuda_libs),
        "cuda_no100": link_libmxnet(libs / "cuda_no100/libmxnet.so", [stamp, k_no100], cuda_libs + opencv),
        "cuda_noptx": link_libmxnet(libs / "cuda_noptx/libmxnet.so", [stamp, k_noptx], cuda_libs + opencv),
        "cuda_partial": link_libmxnet(libs / "cuda_partial/libmxnet.so", [stamp, k_full, k_no89], cuda_libs + opencv),
        "cuda_no_libcuda": link_libmxnet(libs / "cuda_no_libcuda/libmxnet.so", [stamp, k_full],
                                         [stubs[n] for n in CUDA_STUBS if n != "libcuda.so.1"] + opencv),
        "cuda_no_nccl": link_libmxnet(libs / "cuda_no_nccl/libmxnet.so", [stamp, k_full],
                                      [stubs[n] for n in CUDA_STUBS if n != "libnccl.so.2"] + opencv),
        "cuda_nostamp": link_libmxnet(libs / "cuda_nostamp/libmxnet.so", [nostamp, k_full], cuda_libs + opencv),
        "cpu": link_libmxnet(libs / "cpu/libmxnet.so", [stamp], opencv),
        "cpu_cuda": link_libmxnet(libs / "cpu_cuda/libmxnet.so", [stamp], [stubs["libcudart.so.13"]] + opencv),
    }
    # Loadability (issue 12): libmxnet linked as a build host might, each with one flaw.
    extra = work / "loadability"
    hostonly = build_plain_lib(extra / "hostonly", "libmxnet_selftest_hostonly.so.1")
    newer_obj, newer_libc = build_newer_glibc(extra / "glibc")
    L["cuda_hostonly"] = link_libmxnet(libs / "cuda_hostonly/libmxnet.so", [stamp, k_full],
                                       cuda_libs + opencv + [hostonly])
    L["cuda_execstack"] = link_libmxnet(libs / "cuda_execstack/libmxnet.so", [stamp, k_full],
                                        cuda_libs + opencv, ["-Wl,-z,execstack"])
    L["cuda_textrel"] = link_libmxnet(libs / "cuda_textrel/libmxnet.so", [stamp, k_full, compile_textrel(extra)],
                                      cuda_libs + opencv, ["-Wl,-z,notext"])
    L["cuda_glibc240"] = link_libmxnet(libs / "cuda_glibc240/libmxnet.so", [stamp, k_full, newer_obj],
                                       [newer_libc] + cuda_libs + opencv)
    L["cuda_debug"] = link_libmxnet(libs / "cuda_debug/libmxnet.so", [stamp, k_full, compile_debug(extra)],
                                    cuda_libs + opencv)
    # Issue 20: what the loader, pip and the driver see and the audit did not.
    i20 = work / "issue20"
    old_majors = build_unversioned_stubs(i20 / "cuda11", ("libcudart.so.11.0", "libcudnn.so.8"))
    L["cuda_cuda11"] = link_libmxnet(libs / "cuda_cuda11/libmxnet.so", [stamp, k_full],
                                     [stubs[n] for n in CUDA_STUBS if n not in ("libcudart.so.13", "libcudnn.so.9")]
                                     + old_majors + opencv)
    path_dir, path_lib = build_path_needed(i20 / "pathlib")
    L["cuda_path_needed"] = link_libmxnet(libs / "cuda_path_needed/libmxnet.so", [stamp, k_full],
                                          cuda_libs + opencv + [path_lib], cwd=path_dir)
    no100_flags = [f for a in parse_cuda_arch(release.replace("10.0;", "")).sass for f in (
        f"-gencode=arch=compute_{a},code=sm_{a}",)] + ["-gencode=arch=compute_100a,code=sm_100a",
                                                       "-gencode=arch=compute_120,code=compute_120"]
    k_100a = compile_kernel(objs, "k_100a", release, flags=no100_flags)
    L["cuda_sm100a"] = link_libmxnet(libs / "cuda_sm100a/libmxnet.so", [stamp, k_100a], cuda_libs + opencv)
    second = build_kernel_library(i20 / "second", "libmxnet_selftest_kernels.so.1", release.replace("10.0;", ""))
    L["cuda_second_lib"] = link_libmxnet(libs / "cuda_second_lib/libmxnet.so", [stamp, k_full],
                                         cuda_libs + opencv + [second])
    # Issue 43: PTX of ISA 9.2 (a newer nvcc's) under the cuda profile's R580 floor, which runs ISA 9.0.
    k_ptx92 = compile_kernel_ptx_isa(objs / "ptx92", "k_ptx92", release, "9.2")
    L["cuda_ptx92"] = link_libmxnet(libs / "cuda_ptx92/libmxnet.so", [stamp, k_ptx92], cuda_libs + opencv)
    out["second_lib_soname"] = second.name
    wheels = work / "wheels"
    good = {}
    for flavor in ("cuda", "cpu"):
        stage = work / f"stage-{flavor}"
        files = stage_package(stage, L[flavor], flavor)
        files[f"mxnet-{VERSION[flavor]}.dist-info/METADATA"] = metadata_text(flavor, VERSION[flavor]).encode()
        files[f"mxnet-{VERSION[flavor]}.dist-info/WHEEL"] = WHEEL_FILE
        good[flavor] = (files, stage)
        out[f"good_{flavor}"] = str(write_wheel(wheels / flavor / wheel_name(VERSION[flavor]), files,
                                                version=VERSION[flavor]))

    variants = {}

    def variant(name, flavor, edit, **kw):
        files = dict(good[flavor][0])
        edit(files)
        dest = wheels / name / wheel_name(VERSION[flavor])
        variants[name] = str(rewrite_wheel(Path(out[f"good_{flavor}"]), dest, files, good[flavor][0], **kw))

    cuda_rp, cpu_rp = PROFILES["cuda"].runpath, PROFILES["cpu"].runpath
    tmp = work / "patched"
    tmp.mkdir()

    grafts = graft_map(good["cuda"][0])

    def lib_swap(key, runpath):
        # libmxnet relinked, its NEEDED of the host libraries renamed to the good wheel's grafted
        # members as the bundle step leaves them (build_steps.bundle.graft_name), RUNPATH ``runpath``.
        def edit(files):
            files["mxnet/libmxnet.so"] = patched_libmxnet(L[key], tmp / f"{key}.so", runpath, grafts)
        return edit

    def meta(flavor, transform):
        def edit(files):
            name = f"mxnet-{VERSION[flavor]}.dist-info/METADATA"
            reqs = transform(list(PROFILES[flavor].hard_requirements))
            files[name] = metadata_text(flavor, VERSION[flavor], reqs).encode()
        return edit

    cuda_files, cuda_stage = good["cuda"]
    leaf, inner = _leaf_and_inner(cuda_stage, cuda_files)
    out["leaf"], out["inner"] = leaf, inner
    # the grafted members of the host's libraries (their names carry a hash of the host's file)
    imgcodecs = bundled_member(cuda_files, "libopencv_imgcodecs.so.406")
    core = bundled_member(cuda_files, "libopencv_core.so.406")
    out["imgcodecs"], out["core"] = imgcodecs, core
    out["glx"] = bundled_member(cuda_files, "libGLX.so.0")

    def opencv_off(files):
        for m in [m for m in files if m.startswith("mxnet/lib/")]:
            del files[m]
        lib_swap("cuda_no_opencv", cuda_rp)(files)

    def drop_lib_dir(files):
        for m in [m for m in files if m.startswith("mxnet/lib/")]:
            del files[m]

    def drop_members(*names):
        def edit(files):
            for m in _same_file_members(files, names[0]):
                del files[m]
        return edit

    def strip_runpath(files):
        from build_steps.bundle import patchelf_command
        p = tmp / "leaf.so"
        p.write_bytes(files[leaf])
        _run([*patchelf_command(), "--remove-rpath", p])
        data = p.read_bytes()
        for m in _same_file_members(files, leaf):
            files[m] = data

    def add_member(member, data):
        def edit(files):
            files[member] = data
        return edit

    variant("opencv_off", "cuda", opencv_off)
    variant("closure_not_bundled", "cuda", drop_lib_dir)
    variant("soname_missing", "cuda", drop_members(imgcodecs))
    variant("closure_incomplete", "cuda", drop_members(f"mxnet/lib/{inner}"))
    variant("no_origin", "cuda", strip_runpath)
    # Bundled the way the fork's bundler would have done it: with its own $ORIGIN RUNPATH.
    variant("libcuda_bundled", "cuda", add_member("mxnet/lib/libcuda.so.1", patched_libmxnet(
        stubs["libcuda.so.1"], tmp / "libcuda.so.1", ["$ORIGIN"])))
    variant("no_libcuda_needed", "cuda", lib_swap("cuda_no_libcuda", cuda_rp))
    variant("no_nccl_needed", "cuda", lib_swap("cuda_no_nccl", cuda_rp))
    variant("cudnn_runpath_missing", "cuda",
            lib_swap("cuda", [e for e in cuda_rp if "cudnn" not in e]))
    variant("build_tree_runpath", "cuda", lib_swap("cuda", list(cuda_rp) + [BUILD_TREE_RPATH]))
    variant("sm100_dropped", "cuda", lib_swap("cuda_no100", cuda_rp))
    variant("ptx_missing", "cuda", lib_swap("cuda_noptx", cuda_rp))
    variant("container_partial", "cuda", lib_swap("cuda_partial", cuda_rp))
    variant("nostamp", "cuda", lib_swap("cuda_nostamp", cuda_rp))
    variant("onnx_extra_only", "cuda", meta("cuda", lambda r: [x for x in r if not x.startswith("onnx")]))
    variant("no_onnx_package", "cuda", lambda f: f.pop("mxnet/onnx/__init__.py"))
    variant("cublas_pin_wrong", "cuda", meta("cuda", lambda r: [
        "nvidia-cublas>=13.1,<14" if x.startswith("nvidia-cublas") else x for x in r]))
    variant("bad_record", "cuda", lambda f: None,
            record_override={"mxnet/__init__.py": _record_hash(b"something else")})
    variant("cpu_links_cuda", "cpu", lib_swap("cpu_cuda", cpu_rp))
    variant("cpu_onnx_hard", "cpu", meta("cpu", lambda r: r + ["onnx>=1.7.0,<1.22"]))
    variant("no_libmxnet", "cuda", lambda f: f.pop("mxnet/libmxnet.so"))
    variant("libmxnet_not_elf", "cuda", add_member("mxnet/libmxnet.so", b"#!/bin/sh\necho not a library\n" * 50))

    # Loadability (issue 12): what loads on the build host but not on a user's machine.
    def leaf_swap(make):
        def edit(files):
            data = make(tmp / "leaf-swap" / leaf.rsplit("/", 1)[-1])
            for m in _same_file_members(files, leaf):
                files[m] = data
        return edit

    def leaf_runpath(runpath):
        def make(dest):
            dest.parent.mkdir(exist_ok=True)
            orig = dest.with_name(dest.name + ".orig")
            orig.write_bytes(cuda_files[leaf])
            return patched_libmxnet(orig, dest, runpath)
        return make

    def leaf_32bit(dest):
        from build_steps.readers.elf import read_dynamic
        lib = build_plain_lib(extra / "m32", read_dynamic(cuda_stage / leaf).soname, m32=True)
        dest.parent.mkdir(exist_ok=True)
        return patched_libmxnet(lib, dest, ["$ORIGIN"])

    real_core = (OPENCV_DIR / "libopencv_core.so.406").resolve()
    stale = build_plain_lib(extra / "stale", "libmxnet_selftest_stale.so.1")
    variant("needs_host_only_lib", "cuda", lib_swap("cuda_hostonly", cuda_rp))
    variant("exec_stack", "cuda", lib_swap("cuda_execstack", cuda_rp))
    variant("text_relocations", "cuda", lib_swap("cuda_textrel", cuda_rp))
    variant("glibc_too_new", "cuda", lib_swap("cuda_glibc240", cuda_rp))
    # Issue 22: libmxnet.so with DWARF in it, as a build with -g makes it (the stripped-library gate).
    variant("unstripped", "cuda", lib_swap("cuda_debug", cuda_rp))
    variant("bundled_absolute_runpath", "cuda", leaf_swap(leaf_runpath(["$ORIGIN", "/usr/local/lib"])))
    variant("wrong_class", "cuda", leaf_swap(leaf_32bit))
    variant("stale_lib", "cuda", add_member("mxnet/lib/libmxnet_selftest_stale.so.1",
                                            patched_libmxnet(stale, tmp / "stale.so", ["$ORIGIN"])))
    # An older staging of the same library under its real name: other bytes, the same SONAME.
    variant("soname_conflict", "cuda", add_member(f"mxnet/lib/{real_core.name}", with_soname(patched_libmxnet(
        real_core, tmp / real_core.name, ["$ORIGIN/."]), tmp / real_core.name, core, grafts)))
    # The fork's bundling: the real-name file beside the SONAME copy, byte for byte.
    variant("duplicate_copy", "cuda", lambda f: f.__setitem__(f"mxnet/lib/{real_core.name}", f[core]))

    # Issue 20.
    variant("cuda11_majors", "cuda", lib_swap("cuda_cuda11", cuda_rp))
    variant("needed_with_slash", "cuda", lib_swap("cuda_path_needed", cuda_rp))
    # The driver shipped where libmxnet's RUNPATH $ORIGIN/../nvidia/cu13/lib reaches, outside mxnet/lib.
    variant("libcuda_in_runpath_dir", "cuda", add_member("nvidia/cu13/lib/libcuda.so.1", patched_libmxnet(
        stubs["libcuda.so.1"], tmp / "libcuda-cu13.so.1", ["$ORIGIN"])))
    variant("sm100a_only", "cuda", lib_swap("cuda_sm100a", cuda_rp))
    # Another build of a bundled SONAME where the RUNPATH also looks: which one loads depends on the
    # search order (its own dependencies reached in mxnet/lib, so it is loadable on its own).
    variant("soname_conflict_in_runpath_dir", "cuda", add_member(f"nvidia/cu13/lib/{core.rsplit('/', 1)[-1]}", with_soname(
        patched_libmxnet(real_core, tmp / "core-in-cu13.so", ["$ORIGIN/../../../mxnet/lib"]), tmp / "core-in-cu13.so",
        core, grafts)))

    def second_lib(files):
        lib_swap("cuda_second_lib", cuda_rp)(files)
        files[f"mxnet/lib/{second.name}"] = patched_libmxnet(second, tmp / second.name, ["$ORIGIN"])
    variant("second_lib_narrow", "cuda", second_lib)
    variant("requires_dist_conflict", "cuda", meta("cuda", lambda r: r + ["nvidia-cublas>=13.1,<13.5"]))
    variant("not_elf_bundled", "cuda", lambda f: [f.__setitem__(m, b"/* GNU ld script */\nINPUT(libopencv_imgcodecs.so.4.6.0)\n")
                                                  for m in _same_file_members(f, imgcodecs)])
    # ${ORIGIN}, as some linkers and patchelf users write it: the same token as $ORIGIN.
    variant("brace_origin", "cuda", lib_swap("cuda", [e.replace("$ORIGIN", "${ORIGIN}") for e in cuda_rp]))
    # A zip bomb beside the good members: 64 MiB of zeros stored in ~64 kB (level 9, as zip -9 would).
    bomb = wheels / "zip_bomb" / wheel_name(VERSION["cpu"])
    shutil.copytree(Path(out["good_cpu"]).parent, bomb.parent)
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("mxnet/zeros.bin", bytes(64 << 20))
    variants["zip_bomb"] = str(bomb)
    bad = work / "bad"
    bad.mkdir()
    # Issue 32: what pip's installer does with a member, which member names alone do not tell.
    data_dir = f"mxnet-{VERSION['cuda']}.data"
    variant("root_is_purelib", "cuda", add_member(f"mxnet-{VERSION['cuda']}.dist-info/WHEEL",
                                                 WHEEL_FILE.replace(b"Root-Is-Purelib: false", b"Root-Is-Purelib: true")))
    # The license put under .data without a scheme directory (meant: .data/data/share/...).
    variant("unknown_scheme", "cuda", add_member(f"{data_dir}/share/doc/mxnet/LICENSE",
                                                 b"Apache License\nVersion 2.0, January 2004\n"))
    variant("startup_pth", "cuda", add_member("mxnet-selftest-init.pth",
                                              b"import os; os.environ.setdefault('MXNET_SELFTEST_PTH', '1')\n"))
    # mxnet/onnx staged a second time at the top level (a package_dir slip): onnx is a dependency.
    variant("owns_onnx", "cuda", lambda f: f.__setitem__("onnx/__init__.py", f["mxnet/onnx/__init__.py"]))
    variant("shadows_tests", "cuda", add_member("tests/__init__.py", b""))
    # A real library in the data scheme: its RUNPATH climbs three levels in the zip (mxnet-X.data/data/
    # lib), but it installs to <prefix>/lib/, one level below the scheme's root.
    data_lib = build_plain_lib(extra / "datalib", "libmxnet_selftest_data.so.1")
    variant("runpath_from_data_scheme", "cuda", add_member(
        f"{data_dir}/data/lib/{data_lib.name}",
        patched_libmxnet(data_lib, tmp / data_lib.name, ["$ORIGIN/../../../mxnet/lib"])))
    # The bundled closure shipped under .data/platlib: pip installs it to mxnet/lib/ all the same,
    # so every gate must judge it there (a good wheel), and a second copy of a package file there
    # collides with the root's.
    def lib_via_platlib(files):
        for m in [m for m in files if m.startswith("mxnet/lib/")]:
            files[f"{data_dir}/platlib/{m}"] = files.pop(m)
    variant("bundle_in_data_platlib", "cuda", lib_via_platlib)
    variant("platlib_collision", "cuda", add_member(f"{data_dir}/platlib/mxnet/__init__.py",
                                                   b'"""mxnet (an older staging)"""\n'))
    # Issue 43: what pip and the interpreter decide from METADATA, entry points and file names.
    cuda_meta = f"mxnet-{VERSION['cuda']}.dist-info/METADATA"
    variant("requires_python_excludes_tag", "cuda", lambda f: f.__setitem__(
        cuda_meta, f[cuda_meta].replace(b"Requires-Python: >=3.10", b"Requires-Python: >=3.12")))
    ext = build_extension_module(extra / "ext", "core", "cpython-310-x86_64-linux-gnu")
    variant("extension_other_python", "cuda", add_member(f"mxnet/_ffi/_cy3/{ext.name}", ext.read_bytes()))
    variant("script_replaces_pip", "cuda", add_member(
        f"mxnet-{VERSION['cuda']}.dist-info/entry_points.txt",
        b"[console_scripts]\npip = mxnet.tools.pip_shim:main\nmxnet-info = mxnet.tools:info\n\n"
        b"[gui_scripts]\nf2py = mxnet.tools:f2py\n"))
    variant("ptx_isa_too_new", "cuda", lib_swap("cuda_ptx92", cuda_rp))
    for name, version in (("version_no_date", "2.0.0+cu13.bw.20261314.1"),
                          ("version_cu12_local", "2.0.0+cu12.bw.20260614.1")):
        variants[name] = str(renamed_version(good["cuda"][0], VERSION["cuda"], version,
                                             wheels / name / wheel_name(version)))
    out["header_mismatch"] = str(local_name_mismatch(
        Path(out["good_cpu"]), bad / "header_mismatch" / wheel_name(VERSION["cpu"]), "mxnet/__init__.py",
        "../../../evil.pyc"))
    variants["crc_wrong"] = str(wrong_crc(Path(out["good_cpu"]), wheels / "crc_wrong" / wheel_name(VERSION["cpu"]),
                                          "mxnet/__init__.py"))
    out["variants"] = variants

    # Bad inputs that are not wheels at all.
    (bad / "not-a-wheel.whl").write_text("this is text, not a zip\n")
    data = Path(out["good_cpu"]).read_bytes()
    (bad / wheel_name("9.9.9")).write_bytes(data[: len(data) // 2])
    out["truncated"] = str(bad / wheel_name("9.9.9"))
    out["not_a_wheel"] = str(bad / "not-a-wheel.whl")
    slip = bad / "slip" / wheel_name(VERSION["cpu"])
    slip_files = dict(good["cpu"][0])
    slip_files["../../evil.txt"] = b"escaped"
    out["zip_slip"] = str(write_wheel(slip, slip_files, version=VERSION["cpu"]))

    # Build-provenance variants: caches and source trees that disagree with the wheel.
    prov = work / "prov"
    out["cache_opencv_off"] = str(write_build_dir(prov / "opencv_off", "cuda", head, features={"USE_OPENCV": False}))
    out["cache_openmp_off"] = str(write_build_dir(prov / "openmp_off", "cuda", head, features={"USE_OPENMP": False}))
    out["cache_arch_old"] = str(write_build_dir(prov / "arch_old", "cuda", head, cuda_arch="8.0;8.6;8.9;9.0;12.0+PTX"))
    out["cache_unavailable"] = str(write_build_dir(prov / "unavailable", "cuda", "Unavailable"))
    dirty = work / "src-dirty"
    shutil.copytree(src, dirty, symlinks=True)
    (dirty / "README.md").write_text("edited, not committed\n")
    out["src_dirty"] = str(dirty)
    moved = work / "src-moved"
    shutil.copytree(src, moved, symlinks=True)
    out["moved_head"] = commit_again(moved)
    out["src_moved"] = str(moved)
    return out


def _inputs_key() -> str:
    """Hash of everything that shapes the selftest wheels: a change rebuilds them."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for rel in ("selftest/fixtures_wheels.py", "build_steps/bundle.py", "build_steps/profile_data.py",
                "build_steps/library_policy.py", "build_steps/profiles.toml",
                "build_steps/readers/elf.py"):
        h.update((root / rel).read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def selftest_wheels(request, shared_dir) -> dict:
    """Paths of the good wheels, every regression variant, the source tree and caches (see above).

    Built once for all xdist workers and kept in pytest's cache dir (keyed by the inputs' hash),
    so a second selftest run does not rebuild ~150 MB wheels; without the cache plugin they live
    in this run's shared temp dir.
    """
    from filelock import FileLock
    cache = getattr(request.config, "cache", None)
    if cache is None:
        return run_once(shared_dir, "selftest-wheels", lambda: build_selftest_wheels(shared_dir / "selftest-wheels"))
    base = Path(cache.mkdir("selftest-wheels"))
    key = _inputs_key()
    done = base / f"{key}.json"
    with FileLock(str(base / "build.lock")):
        if done.exists():
            return json.loads(done.read_text())
        for old in base.iterdir():  # earlier inputs: stale
            if old.name != "build.lock":
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        result = build_selftest_wheels(base / key)
        done.write_text(json.dumps(result))
        return result
