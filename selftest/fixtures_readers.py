"""Selftest fixtures: readers area (wheel/ELF/fatbin readers).

Real parts only:
- ``fatbin_lib(case)``: shared objects compiled by nvcc for known ``-gencode`` sets (FATBIN_CASES).
  They are cached on disk across runs and workers (``.tmp/selftest-cache/fatbin``, keyed by the
  source, the flags and nvcc's version, under a file lock), so only the first run pays for nvcc.
- ``elf_libs``: gcc-built libraries with real NEEDED/SONAME/RPATH/RUNPATH, made once per run.
- ``write_wheel(path, files, ...)``: a real wheel written with zipfile and a correct RECORD, with
  hooks to break RECORD or to add raw (unsafe) zip entries.
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import struct
import subprocess
import warnings
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock

from build_steps.once import run_once

#: Only the fixtures are star-imported into selftest/conftest.py; tests import helpers directly.
__all__ = ["fatbin_lib", "cuobjdump", "elf_libs"]

HARNESS_ROOT = Path(__file__).resolve().parent.parent
FATBIN_CACHE = HARNESS_ROOT / ".tmp" / "selftest-cache" / "fatbin"

RELEASE_SASS = (80, 86, 89, 90, 100, 120)


def find_nvcc() -> str | None:
    for candidate in (os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc", shutil.which("nvcc")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def find_cuobjdump() -> str | None:
    """cuobjdump from the nvidia-cuda-cuobjdump wheel in this venv, else the toolkit's / PATH."""
    import sys
    venv = Path(sys.prefix)
    candidates = sorted(venv.glob("lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump"))
    candidates += [Path("/usr/local/cuda/bin/cuobjdump")]
    which = shutil.which("cuobjdump")
    if which:
        candidates.append(Path(which))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def _gencode(arch: int, ptx: bool = False, variant: str = "") -> list:
    code = f"sm_{arch}{variant}"
    if ptx:
        code = f"[{code},compute_{arch}{variant}]"
    return ["-gencode", f"arch=compute_{arch}{variant},code={code}"]


_RELEASE_GENCODE = sum((_gencode(a, ptx=(a == 120)) for a in RELEASE_SASS), [])

KERNEL_A = r"""
__global__ void scale(float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}
extern "C" void launch_scale(float *y, float a, int n) { scale<<<(n + 255) / 256, 256>>>(y, a, n); }
"""
KERNEL_B = r"""
__global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
extern "C" void launch_axpy(float a, const float *x, float *y, int n) { axpy<<<(n + 255) / 256, 256>>>(a, x, y, n); }
"""

#: case -> (sources, nvcc flags, expected SASS names, expected PTX names, compressed?)
FATBIN_CASES = {
    "release": ((KERNEL_A,), _RELEASE_GENCODE,
                ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"], ["compute_120"], None),
    "no_sm100": ((KERNEL_A,), sum((_gencode(a, ptx=(a == 120)) for a in RELEASE_SASS if a != 100), []),
                 ["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"], ["compute_120"], None),
    "no_ptx": ((KERNEL_A,), sum((_gencode(a) for a in RELEASE_SASS), []),
               ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"], [], None),
    "compressed": ((KERNEL_A,), _RELEASE_GENCODE + ["--compress-mode=size"],
                   ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"], ["compute_120"], True),
    "uncompressed": ((KERNEL_A,), _RELEASE_GENCODE + ["--compress-mode=none"],
                     ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"], ["compute_120"], False),
    "two_units": ((KERNEL_A, KERNEL_B), _RELEASE_GENCODE,
                  ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"], ["compute_120"], None),
    "variants": ((KERNEL_A,), _gencode(80) + _gencode(90, variant="a") + _gencode(100, variant="f")
                 + _gencode(120, ptx=True, variant="f"),
                 ["sm_80", "sm_90a", "sm_100f", "sm_120f"], ["compute_120f"], None),
    # the release set with sm_100a where the generic sm_100 belongs (issue 20)
    "arch_specific": ((KERNEL_A,), sum((_gencode(a) for a in (80, 86, 89, 90)), []) + _gencode(100, variant="a")
                      + _gencode(120, ptx=True),
                      ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100a", "sm_120"], ["compute_120"], None),
}


def _nvcc_version(nvcc: str) -> str:
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout


def build_fatbin_lib(case: str, cache_dir: Path = FATBIN_CACHE) -> Path:
    """Compile FATBIN_CASES[case] into a shared object with nvcc (cached; safe across processes)."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("nvcc not found (set NVCC or install the CUDA toolkit at /usr/local/cuda)")
    sources, flags, *_ = FATBIN_CASES[case]
    key = hashlib.sha256(repr((sources, flags, _nvcc_version(nvcc))).encode()).hexdigest()[:16]
    cache_dir.mkdir(parents=True, exist_ok=True)
    out = cache_dir / f"lib{case}-{key}.so"
    with FileLock(str(out) + ".lock"):
        if out.exists():
            return out
        work = cache_dir / f"work-{case}-{key}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        srcs = []
        for i, text in enumerate(sources):
            src = work / f"unit{i}.cu"
            src.write_text(text)
            srcs.append(str(src))
        tmp = work / out.name
        proc = subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(tmp), *srcs, *flags],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed for {case}:\n{proc.stdout}\n{proc.stderr}")
        os.replace(tmp, out)  # atomic: a reader never sees a half-written library
        shutil.rmtree(work, ignore_errors=True)
        return out


@pytest.fixture(scope="session")
def fatbin_lib():
    """``fatbin_lib(case)`` -> path of the nvcc-built library for FATBIN_CASES[case]."""
    if find_nvcc() is None:
        pytest.skip("nvcc is not installed (/usr/local/cuda/bin/nvcc); the fatbin selftests need it")
    return build_fatbin_lib


@pytest.fixture(scope="session")
def cuobjdump():
    path = find_cuobjdump()
    if path is None:
        pytest.skip("no cuobjdump installed (pip install nvidia-cuda-cuobjdump); "
                    "the cross-check against NVIDIA's own listing is skipped")
    return path


# ---------------------------------------------------------------------------------------------
# gcc-built ELF libraries

DT_SONAME = 14
DT_RUNPATH = 29


def retag_dynamic(path: Path, old_tag: int, new_tag: int) -> None:
    """Change the first ``old_tag`` entry of ``path``'s .dynamic into ``new_tag`` (same value).

    GNU ld writes either DT_RPATH or DT_RUNPATH, never both; an old toolchain or a hand-patched
    library can have both. We make one by linking a DT_SONAME whose string is the RUNPATH we
    want and renaming that tag in place (64-bit little-endian entries: two u64).
    """
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as fh:
        section = ELFFile(fh).get_section_by_name(".dynamic")
        offset, size = section["sh_offset"], section["sh_size"]
    with open(path, "r+b") as fh:
        fh.seek(offset)
        data = bytearray(fh.read(size))
        for i in range(0, size, 16):
            tag, _val = struct.unpack_from("<qQ", data, i)
            if tag == old_tag:
                struct.pack_into("<q", data, i, new_tag)
                fh.seek(offset)
                fh.write(data)
                return
    raise AssertionError(f"{path} has no dynamic tag {old_tag}")


def _gcc(out: Path, source: Path, *args) -> Path:
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(source), *args], check=True,
                   capture_output=True)
    return out


def build_elf_libs(work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    src = work / "lib.c"
    src.write_text(
        '#include <math.h>\n'
        'const char build_commit[] = "4f2a9c0d1e3b5a7968f0c2d4e6a8b0c1d3e5f7a9";\n'
        'const char decoy[] = "not-a-hash";\n'
        'const char unavailable[] = "Unavailable";\n'
        'double f(double x) { return cos(x) + build_commit[0] + decoy[0] + unavailable[0]; }\n')
    dep = _gcc(work / "libdep.so.1", src, "-Wl,-soname,libdep.so.1")
    (work / "libdep.so").symlink_to("libdep.so.1")
    common = ["-Wl,--no-as-needed", f"-L{work}", "-ldep", "-lm"]  # keep NEEDED even if unused
    out = {
        "dep": dep,
        "runpath": _gcc(work / "librunpath.so", src, "-Wl,-soname,librunpath.so.2", *common,
                        "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/lib:$ORIGIN/../nvidia/cudnn/lib"),
        "rpath": _gcc(work / "librpath.so", src, *common,
                      "-Wl,--disable-new-dtags", "-Wl,-rpath,/opt/old/lib:$ORIGIN"),
        "brace": _gcc(work / "libbrace.so", src, *common,
                      "-Wl,--enable-new-dtags", "-Wl,-rpath,${ORIGIN}/lib"),
        "none": _gcc(work / "libnone.so", src, "-Wl,-soname,libnone.so"),
    }
    both = _gcc(work / "libboth.so", src, *common, "-Wl,--disable-new-dtags",
                "-Wl,-rpath,/opt/old/lib", "-Wl,-soname,$ORIGIN/lib")
    retag_dynamic(both, DT_SONAME, DT_RUNPATH)
    out["both"] = both
    not_elf = work / "not_elf.so"
    not_elf.write_text("INPUT(-lfoo)\n")  # a linker script named .so: a classic impostor
    out["not_elf"] = not_elf
    truncated = work / "truncated.so"
    truncated.write_bytes(out["runpath"].read_bytes()[:4096])
    out["truncated"] = truncated
    header_only = work / "header_only.so"
    header_only.write_bytes(out["runpath"].read_bytes()[:40])
    out["header_only"] = header_only
    return {k: str(v) for k, v in out.items()}


@pytest.fixture(scope="session")
def elf_libs(shared_dir) -> dict:
    """name -> Path of gcc-built libraries (see build_elf_libs), made once per run."""
    paths = run_once(shared_dir, "readers-elf-libs", lambda: build_elf_libs(shared_dir / "readers-elf"))
    return {k: Path(v) for k, v in paths.items()}


# ---------------------------------------------------------------------------------------------
# wheels written with zipfile

def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def minimal_files(name: str = "mxnet", version: str = "2.0.0+cu13.bw.20260614.1",
                  requires=("onnx>=1.7.0,<1.22",)) -> dict:
    dist_info = f"{name}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    return {
        f"{name}/__init__.py": b"__version__ = '2.0.0'\n",
        f"{name}/libmxnet.so": b"\x7fELF" + bytes(range(256)) * 64,
        f"{dist_info}/METADATA": ("\n".join(meta) + "\n\n").encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: selftest\nRoot-Is-Purelib: false\n"
                              b"Tag: cp311-cp311-linux_x86_64\n",
    }


def write_wheel(path: Path, files: dict, *, record_edit=None, raw_entries=(),
                compression=zipfile.ZIP_DEFLATED) -> Path:
    """Write a wheel holding ``files`` (member -> bytes) and a correct RECORD.

    ``record_edit(rows)`` may change the RECORD rows (lists [path, hash, size]) before they are
    written; ``raw_entries`` are ``(ZipInfo or name, bytes)`` added after RECORD, unlisted (for
    unsafe names, symlinks, duplicates).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    dist_info = next(n.split("/", 1)[0] for n in files if n.split("/", 1)[0].endswith(".dist-info"))
    record = f"{dist_info}/RECORD"
    rows = [[n, record_hash(d), str(len(d))] for n, d in files.items()]
    rows.append([record, "", ""])
    if record_edit is not None:
        record_edit(rows)
    text = "".join(",".join(r) + "\n" for r in rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on the duplicate names we add on purpose
        with zipfile.ZipFile(path, "w", compression) as zf:
            for name, data in files.items():
                zf.writestr(name, data)
            zf.writestr(record, text)
            for info, data in raw_entries:
                zf.writestr(info, data)
    return path


def symlink_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (0o120777 << 16)
    return info
