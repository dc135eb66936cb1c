"""cuBLAS / driver preflight and raw-cuBLAS syrk and GEMM checks, through ctypes only.

Runs before (and without) MXNet: it reports which cuBLAS a wheel would load, its version, the
driver's version, and names the known traps of the profile's CUDA stack (docs/background.md). For
CUDA 13 those are two:
  * cuBLAS >= 13.2 on an R580 driver: large GEMM returns CUBLAS_STATUS_NOT_INITIALIZED
    (tiny GEMMs and convolutions pass). Fix: driver R590+.
  * cuBLAS 13.1.1.3: cublasSsyrk/cublasDsyrk segfault. Fix: cuBLAS >= 13.5 (which needs R590+).
Each numeric check runs in a child process, so a segfault inside cuBLAS becomes a result.

Standalone on purpose: standard library only (numpy for the numeric checks), no import of the
harness, so the same file runs in the throwaway venv's interpreter and on a GPU box
with only the repository copied there. What it looks for and judges by (the cuBLAS SONAME, pip's
directories, the driver floors, the known traps) is the profile's CUDA stack in
build_steps/profiles.toml, given as the STACK arguments that build_steps.cuda_stack.cublas_probe_args
writes (the harness passes them; by hand: ``python -c "from build_steps.cuda_stack import
cublas_probe_args; from build_steps.profile_data import PROFILES; print(*cublas_probe_args(PROFILES['cuda']))"``):
    python3 tests/probes/cublas_probe.py preflight [--search-dir DIR]... STACK
    python3 tests/probes/cublas_probe.py all [--sizes 16,256,1024,4096] [--lib PATH] STACK
    python3 tests/probes/cublas_probe.py check gemm|syrk|dsyrk N --lib PATH
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import site
import subprocess
import sys

CHECK_SIZES = (16, 256, 1024, 4096)
CHECK_KINDS = ("gemm", "syrk", "dsyrk")

CUBLAS_STATUS = {
    0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}


# ------------------------------------------------------------------------------------------
# The CUDA stack the probe is told about (profiles.toml, through build_steps.cuda_stack)
# ------------------------------------------------------------------------------------------
def add_stack_arguments(parser) -> None:
    """The STACK arguments: the facts of the profile's CUDA stack the probe looks and judges by."""
    g = parser.add_argument_group("the profile's CUDA stack (build_steps.cuda_stack.cublas_probe_args)")
    g.add_argument("--cuda-major", type=int)
    g.add_argument("--cublas-soname", help="the SONAME the wheel loads, e.g. libcublas.so.13")
    g.add_argument("--cudart-soname", help="the CUDA runtime's SONAME, e.g. libcudart.so.13")
    g.add_argument("--cublas-distribution", help="the pip distribution that ships cuBLAS")
    g.add_argument("--cublas-requirement", default="", help="the wheel's Requires-Dist spec of it")
    g.add_argument("--pip-dir", dest="pip_dirs", action="append", default=[],
                   help="a site-packages dir pip's cuBLAS lies in, best first")
    g.add_argument("--driver-floor", type=int, help="the oldest driver of any library of this CUDA major")
    g.add_argument("--pin-driver", type=int, help="the driver the pinned cuBLAS needs")
    g.add_argument("--new-driver-from", default="", help="cuBLAS from this version needs --pin-driver")
    g.add_argument("--syrk-crash", default="", help="the cuBLAS release known to crash in syrk")
    g.add_argument("--syrk-fixed", default="", help="the first cuBLAS known to compute syrk correctly")


_STACK_KEYS = ("cuda_major", "cublas_soname", "cudart_soname", "cublas_distribution", "cublas_requirement",
               "pip_dirs", "driver_floor", "pin_driver", "new_driver_from", "syrk_crash", "syrk_fixed")


def stack_from_args(args) -> dict | None:
    """The stack facts of parsed STACK arguments (a JSON-able dict), None when none were given."""
    if not args.cublas_soname:
        return None
    missing = [k for k in ("cuda_major", "cudart_soname", "cublas_distribution", "driver_floor", "pin_driver")
               if getattr(args, k) is None]
    if missing:
        raise SystemExit("cublas_probe: --cublas-soname needs " + ", ".join("--" + k.replace("_", "-") for k in missing))
    return {k: getattr(args, k) for k in _STACK_KEYS}


def parse_stack(argv) -> dict | None:
    """The stack facts of a STACK argument list (for the gates that use the probe's helpers in-process)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_stack_arguments(parser)
    return stack_from_args(parser.parse_args(list(argv)))


def _vtuple(text: str) -> tuple:
    return tuple(int(x) for x in text.split("."))


def _previous_minor(version: str) -> str:
    """``"13.2"`` -> ``"13.1"``: the last minor before ``version`` (``"below 14.0"`` for a .0)."""
    major, minor = _vtuple(version)[:2]
    return f"{major}.{minor - 1}" if minor else f"below {version}"


def _pin_words(stack: dict) -> str:
    """How the fix names the pinned cuBLAS: the requirement, else the distribution."""
    return stack.get("cublas_requirement") or stack.get("cublas_distribution") or "the pinned cuBLAS"


# ------------------------------------------------------------------------------------------
# Finding and identifying the library
# ------------------------------------------------------------------------------------------
def _site_dirs() -> list:
    dirs = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # very old virtualenv
        pass
    dirs += [p for p in sys.path if p.endswith("-packages")]
    seen, out = set(), []
    for d in dirs:
        if d and d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


def _ldconfig_paths(name: str) -> list:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        text = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    # ldconfig -p lines: "\tlibcublas.so.13 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcublas.so.13"
    return [line.split("=>")[-1].strip() for line in text.splitlines()
            if line.strip().startswith(name + " ") and "=>" in line and "x86-64" in line]


def find_cublas(search_dirs, stack: dict) -> list:
    """Candidate libcublas paths, best first: the stack's pip dirs (the first is where the wheel's
    RUNPATH entry reaches, e.g. $ORIGIN/../nvidia/cu13/lib), then the system's ``stack`` SONAME."""
    found = []
    for d in list(search_dirs) + _site_dirs():
        for pip_dir in stack["pip_dirs"]:
            found += sorted(glob.glob(os.path.join(d, pip_dir, "libcublas.so.*")))
    found += _ldconfig_paths(stack["cublas_soname"])
    for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"):
        found += sorted(glob.glob(os.path.join(d, stack["cublas_soname"] + "*")))
    out = []
    for p in found:
        if "libcublasLt" in p or not os.path.exists(p):
            continue
        if p not in out:
            out.append(p)
    return out


def _pip_cublas_version(lib_path: str, stack: dict) -> str | None:
    """The version of the stack's cuBLAS distribution (4 parts, e.g. 13.1.0.3) owning ``lib_path``."""
    real = os.path.realpath(lib_path)
    dirs = "|".join(re.escape(d.strip("/")) for d in stack["pip_dirs"])
    m = re.search(rf"^(.*)/(?:{dirs})/", real)
    if not m:
        return None
    dist = re.sub(r"[-_.]+", "_", stack["cublas_distribution"]).lower()
    for info in glob.glob(os.path.join(m.group(1), "*.dist-info")):
        mm = re.search(rf"/{re.escape(dist)}-([0-9][0-9.]*[0-9])\.dist-info$", info, flags=re.IGNORECASE)
        if mm:
            return mm.group(1)
    return None


def mapped_path(fragment: str) -> str | None:
    """The file mapped into this process whose name contains ``fragment`` (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6 and fragment in os.path.basename(parts[5].strip()):
                    return parts[5].strip()
    except OSError:
        pass
    return None


def load_cublas(path: str):
    """dlopen ``path``; its cuBLASLt from the same directory first (pip's copy may lack RUNPATH)."""
    lt = sorted(glob.glob(os.path.join(os.path.dirname(path), "libcublasLt.so.*")))
    if lt:
        ctypes.CDLL(lt[0], mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def cublas_version(lib) -> tuple:
    vals = []
    for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        v = ctypes.c_int(-1)
        status = lib.cublasGetProperty(prop, ctypes.byref(v))
        if status != 0:
            raise RuntimeError(f"cublasGetProperty({prop}) returned {CUBLAS_STATUS.get(status, status)}")
        vals.append(v.value)
    return tuple(vals)


# ------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------
def driver_info() -> dict:
    info = {"kernel_module": None, "driver_major": None, "cuda_driver_version": None,
            "cudart_driver_version": None, "gpus": [], "error": None}
    try:
        with open("/proc/driver/nvidia/version") as fh:
            m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+)\.(\d+)(?:\.(\d+))?", fh.read())
        if m:
            info["kernel_module"] = ".".join(g for g in m.groups() if g)
            info["driver_major"] = int(m.group(1))
    except OSError:
        pass
    if info["kernel_module"] is None and shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
            if out and re.match(r"\d+\.", out[0]):
                info["kernel_module"] = out[0].strip()
                info["driver_major"] = int(out[0].split(".")[0])
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        info["error"] = f"no NVIDIA driver library (libcuda.so.1): {exc}"
        return info
    v = ctypes.c_int(0)
    if cuda.cuDriverGetVersion(ctypes.byref(v)) == 0:
        info["cuda_driver_version"] = v.value  # 1000*major + 10*minor of the newest CUDA supported
    status = cuda.cuInit(0)
    if status != 0:
        info["error"] = f"cuInit failed with CUresult {status} (no usable GPU or driver mismatch)"
        return info
    n = ctypes.c_int(0)
    cuda.cuDeviceGetCount(ctypes.byref(n))
    for i in range(n.value):
        dev = ctypes.c_int(0)
        cuda.cuDeviceGet(ctypes.byref(dev), i)
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
        cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
        name = ctypes.create_string_buffer(256)
        cuda.cuDeviceGetName(name, 256, dev)
        gpu = {"index": i, "name": name.value.decode(errors="replace"),
               "compute_capability": f"{major.value}.{minor.value}"}
        uuid = ctypes.create_string_buffer(16)
        get_uuid = getattr(cuda, "cuDeviceGetUuid_v2", None) or getattr(cuda, "cuDeviceGetUuid", None)
        if get_uuid is not None and get_uuid(uuid, dev) == 0:
            # as nvidia-smi prints it: the merge of GPU runs counts one GPU once by it
            h = uuid.raw.hex()
            gpu["uuid"] = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        info["gpus"].append(gpu)
    return info


def _cudart_driver_version(lib_dir: str, stack: dict) -> int | None:
    for path in sorted(glob.glob(os.path.join(lib_dir, "libcudart.so.*"))) + [stack["cudart_soname"]]:
        try:
            rt = ctypes.CDLL(path)
        except OSError:
            continue
        v = ctypes.c_int(0)
        if rt.cudaDriverGetVersion(ctypes.byref(v)) == 0:
            return v.value  # 0 means: no driver
    return None


# ------------------------------------------------------------------------------------------
# Verdict
# ------------------------------------------------------------------------------------------
def verdict(version: tuple | None, full_version: str | None, driver_major: int | None, stack: dict | None) -> dict:
    """Name the known traps of ``stack`` for this cuBLAS/driver pair. status: ok | trap | risk | unknown."""
    traps, risks = [], []
    if version is None:
        return {"status": "unknown", "traps": [], "risks": ["cuBLAS version unknown (library not loaded)"]}
    if stack is None:
        return {"status": "unknown", "traps": [], "risks": ["no CUDA stack given: no trap to judge by"]}
    v2 = tuple(version[:2])
    vs = full_version or ".".join(map(str, version))
    floor, pin = stack["driver_floor"], stack["pin_driver"]
    if driver_major is not None and driver_major < floor:
        traps.append({"id": "driver-too-old",
                      "message": f"driver R{driver_major} is older than R{floor}, the minimum for any CUDA "
                                 f"{stack['cuda_major']} library: nothing CUDA will work. Fix: install an "
                                 f"R{pin}+ driver."})
    new_from = stack.get("new_driver_from")
    if new_from and v2 >= _vtuple(new_from)[:2] and driver_major is not None and floor <= driver_major < pin:
        traps.append({"id": f"r{floor}-cublas-{new_from}-not-initialized",
                      "message": f"cuBLAS {vs} on an R{driver_major} driver: large GEMM fails with "
                                 "CUBLAS_STATUS_NOT_INITIALIZED (tiny GEMMs and convolutions still pass). "
                                 f"Fix: upgrade the driver to R{pin}+ (or, on R{floor}, use an older wheel pinned "
                                 f"to cuBLAS {_previous_minor(new_from)})."})
    crash, fixed = stack.get("syrk_crash"), stack.get("syrk_fixed")
    if crash and tuple(version[:3]) == _vtuple(crash)[:3]:
        traps.append({"id": f"cublas-{crash}-syrk-crash",
                      "message": f"cuBLAS {vs} segfaults inside cublasSsyrk/cublasDsyrk (linalg.syrk "
                                 f"crashes on GPU). Fix: cuBLAS >= {fixed} ({_pin_words(stack)}, with an "
                                 f"R{pin}+ driver)."})
    elif fixed and version[0] == _vtuple(fixed)[0] and v2 < _vtuple(fixed)[:2]:
        risks.append(f"cuBLAS {vs} predates {fixed}, the first release known to compute syrk correctly "
                     f"({crash or 'an earlier release'} crashes in syrk); the wheel pins "
                     f"{stack['cublas_distribution']}>={fixed}")
    if driver_major is None:
        risks.append(f"driver version unknown: the R{floor} / cuBLAS {new_from}+ trap cannot be ruled out" if new_from
                     else f"driver version unknown: a driver older than R{floor} cannot be ruled out")
    status = "trap" if traps else ("risk" if risks else "ok")
    return {"status": status, "traps": traps, "risks": risks}


def preflight(search_dirs=(), lib_path: str | None = None, stack: dict | None = None) -> dict:
    """Which cuBLAS would load, its version, the driver's, and the verdict on ``stack``'s traps
    (the result carries ``stack``, for diagnose). Never raises."""
    res = {"candidates": [], "lib": None, "loaded_from": None, "version": None, "full_version": None,
           "cudart_version": None, "load_error": None, "stack": stack}
    res["candidates"] = [lib_path] if lib_path else (find_cublas(search_dirs, stack) if stack else [])
    res["driver"] = driver_info()
    version = None
    if stack is None and not lib_path:
        res["load_error"] = ("no CUDA stack given, so no cuBLAS to look for: pass the profile's "
                             "(build_steps.cuda_stack.cublas_probe_args), or --lib PATH")
    elif not res["candidates"]:
        res["load_error"] = (f"no {stack['cublas_soname']} found (pip {stack['cublas_distribution']} in "
                             f"site-packages, ldconfig, /usr/local/cuda): install {_pin_words(stack)}")
    else:
        path = res["candidates"][0]
        res["lib"] = path
        try:
            lib = load_cublas(path)
            version = cublas_version(lib)
            res["version"] = ".".join(map(str, version))
            try:
                res["cudart_version"] = int(ctypes.c_size_t(lib.cublasGetCudartVersion()).value)
            except AttributeError:
                pass
            res["loaded_from"] = mapped_path("libcublas.so")
        except (OSError, RuntimeError, AttributeError) as exc:
            res["load_error"] = f"{path}: {exc}"
        res["full_version"] = ((_pip_cublas_version(path, stack) if stack else None)
                               or _version_from_name(res["loaded_from"] or path))
        if stack is not None:
            res["driver"]["cudart_driver_version"] = _cudart_driver_version(os.path.dirname(path), stack)
    res["verdict"] = verdict(version, res["full_version"], res["driver"].get("driver_major"), stack)
    return res


def _version_from_name(path: str | None) -> str | None:
    m = re.search(r"libcublas\.so\.(\d+\.\d+\.\d+(?:\.\d+)?)$", os.path.realpath(path or ""))
    return m.group(1) if m else None


# ------------------------------------------------------------------------------------------
# Raw cuBLAS checks (run each in a child: a segfault must not take the caller down)
# ------------------------------------------------------------------------------------------
def _check(kind: str, n: int, lib_path: str) -> dict:
    import numpy as np

    res = {"kind": kind, "n": n, "ok": False}
    cuda = ctypes.CDLL("libcuda.so.1")
    lib = load_cublas(lib_path)
    res["loaded_from"] = mapped_path("libcublas.so")

    def cu(call, *args):
        status = call(*args)
        if status != 0:
            raise RuntimeError(f"{call.__name__} failed with CUresult {status}")

    cu(cuda.cuInit, 0)
    dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
    cu(cuda.cuDeviceGet, ctypes.byref(dev), 0)
    cu(cuda.cuDevicePrimaryCtxRetain, ctypes.byref(ctx), dev)
    cu(cuda.cuCtxSetCurrent, ctx)

    dtype = np.float64 if kind == "dsyrk" else np.float32
    rng = np.random.default_rng(1234 + n)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    c = np.zeros((n, n), dtype=dtype)
    nbytes = a.nbytes
    ptrs = []
    for host in (a, b, c):
        d = ctypes.c_uint64(0)
        cu(cuda.cuMemAlloc_v2, ctypes.byref(d), ctypes.c_size_t(nbytes))
        cu(cuda.cuMemcpyHtoD_v2, d, host.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(nbytes))
        ptrs.append(d)
    handle = ctypes.c_void_p()
    status = lib.cublasCreate_v2(ctypes.byref(handle))
    res["create_status"] = CUBLAS_STATUS.get(status, status)
    if status != 0:
        res["status"] = res["create_status"]
        return res
    scalar = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    alpha, beta = scalar(1.0), scalar(0.0)
    A, B, C = (ctypes.c_void_p(p.value) for p in ptrs)
    if kind == "gemm":
        # Row-major X@Y is column-major Y^T X^T: pass B first so the buffer holds X@Y row-major.
        status = lib.cublasSgemm_v2(handle, 0, 0, n, n, n, ctypes.byref(alpha), B, n, A, n,
                                    ctypes.byref(beta), C, n)
        ref = a.astype(np.float64) @ b.astype(np.float64)
    else:
        fn = lib.cublasDsyrk_v2 if kind == "dsyrk" else lib.cublasSsyrk_v2
        # Column-major view of the row-major buffer is A^T; syrk(N) gives A^T A in the lower
        # triangle (column-major) = the upper triangle of the row-major result.
        status = fn(handle, 0, 0, n, n, ctypes.byref(alpha), A, n, ctypes.byref(beta), C, n)
        ref = a.astype(np.float64).T @ a.astype(np.float64)
    res["status"] = CUBLAS_STATUS.get(status, status)
    sync = cuda.cuCtxSynchronize()
    res["sync_result"] = sync
    if status != 0 or sync != 0:
        return res
    cu(cuda.cuMemcpyDtoH_v2, c.ctypes.data_as(ctypes.c_void_p), ptrs[2], ctypes.c_size_t(nbytes))
    got = c.astype(np.float64)
    if kind != "gemm":
        got, ref = np.triu(got), np.triu(ref)
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))
    # Tolerance on the relative Frobenius error against a float64 reference: float32 GEMM at
    # N=4096 lands near 1e-7; 1e-5 still catches wrong kernels and silent TF32 (~1e-3).
    tol = 1e-12 if dtype == np.float64 else 1e-5
    res.update(rel_error=err, tolerance=tol, ok=err <= tol)
    lib.cublasDestroy_v2(handle)
    for d in ptrs:
        cuda.cuMemFree_v2(d)
    return res


def run_check_child(kind: str, n: int, lib_path: str, timeout: float = 300) -> dict:
    """One check in a child interpreter; a signal or timeout is reported, not propagated."""
    cmd = [sys.executable, os.path.abspath(__file__), "check", kind, str(n), "--lib", lib_path]
    env = dict(os.environ)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"kind": kind, "n": n, "ok": False, "timed_out": True, "timeout_s": timeout}
    res = None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                res = json.loads(line)
                break
            except ValueError:
                pass
    if proc.returncode < 0:
        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = f"signal {-proc.returncode}"
        return {"kind": kind, "n": n, "ok": False, "crashed": True, "signal": sig,
                "stderr_tail": proc.stderr[-2000:]}
    if res is None:
        return {"kind": kind, "n": n, "ok": False, "returncode": proc.returncode,
                "stderr_tail": proc.stderr[-2000:]}
    return res


def diagnose(pre: dict, result: dict) -> str | None:
    """Turn a failed check into the named trap when the evidence matches one."""
    if result.get("ok"):
        return None
    ver = pre.get("full_version") or pre.get("version") or "unknown"
    drv = (pre.get("driver") or {}).get("driver_major")
    stack = pre.get("stack") or {}
    traps = {t["id"]: t["message"] for t in (pre.get("verdict") or {}).get("traps", [])}
    kind = result.get("kind", "")
    newer_driver = f"R{stack['pin_driver']}+" if stack.get("pin_driver") else "the one the pinned cuBLAS needs"
    # A raw check reports the status; MXNet reports it inside its error text.
    if "CUBLAS_STATUS_NOT_INITIALIZED" in json.dumps(result):
        named = next((m for i, m in traps.items() if i.endswith("-not-initialized")), None)
        if named:
            return named
        return (f"CUBLAS_STATUS_NOT_INITIALIZED with cuBLAS {ver} on driver R{drv}: the driver is too old "
                "for this cuBLAS, or the GPU is out of memory at handle creation; record free memory and "
                f"upgrade the driver to {newer_driver}")
    if result.get("crashed") and "syrk" in kind:
        named = next((m for i, m in traps.items() if i.endswith("-syrk-crash")), None)
        if named:
            return named
        known = (f": the syrk crash known from cuBLAS {stack['syrk_crash']}; fix: cuBLAS >= {stack['syrk_fixed']} "
                 f"({_pin_words(stack)}) with an {newer_driver} driver") if stack.get("syrk_crash") else ""
        return f"{kind} crashed with {result.get('signal')} inside cuBLAS {ver}{known}"
    if result.get("crashed"):
        return f"{kind} N={result.get('n')} crashed with {result.get('signal')} in cuBLAS {ver} (driver R{drv})"
    if result.get("timed_out"):
        return f"{kind} N={result.get('n')} did not finish in {result.get('timeout_s')} s"
    if "rel_error" in result:
        return (f"{kind} N={result['n']} is wrong: relative error {result['rel_error']:.3g} > "
                f"{result['tolerance']:g} against numpy")
    return f"{kind} N={result.get('n')} failed: {result.get('status') or result.get('stderr_tail', '')[-300:]}"


def run_all(search_dirs=(), lib_path: str | None = None, sizes=CHECK_SIZES, kinds=CHECK_KINDS,
            stack: dict | None = None) -> dict:
    pre = preflight(search_dirs, lib_path, stack)
    out = {"preflight": pre, "checks": [], "ok": False}
    if not pre.get("lib") or pre.get("load_error") or not pre["driver"].get("gpus"):
        out["skipped"] = pre.get("load_error") or pre["driver"].get("error") or "no GPU visible"
        return out
    for kind in kinds:
        for n in sizes:
            r = run_check_child(kind, n, pre["lib"])
            r["diagnosis"] = diagnose(pre, r)
            out["checks"].append(r)
    out["ok"] = all(r.get("ok") for r in out["checks"])
    return out


def summary(d: dict) -> str:
    """A few human lines for a run_all() result."""
    p = d["preflight"]
    drv = p["driver"]
    gpus = [f"{g['name']} sm_{g['compute_capability'].replace('.', '')}" for g in drv.get("gpus", [])]
    lines = [f"driver {drv.get('kernel_module')} (cuDriverGetVersion {drv.get('cuda_driver_version')}, "
             f"cudaDriverGetVersion {drv.get('cudart_driver_version')}), GPUs {gpus}",
             f"cuBLAS {p.get('full_version') or p.get('version')} from {p.get('loaded_from') or p.get('lib')}",
             f"verdict: {p['verdict']['status']}"]
    lines += ["  TRAP " + t["message"] for t in p["verdict"]["traps"]]
    lines += ["  risk " + r for r in p["verdict"]["risks"]]
    if d.get("skipped"):
        lines.append("checks skipped: " + d["skipped"])
    for c in d.get("checks", []):
        err = c.get("rel_error")
        lines.append(f"  {'ok  ' if c.get('ok') else 'FAIL'} {c['kind']:5} N={c['n']:<5} "
                     f"status={c.get('status', c.get('signal', '?'))} "
                     f"rel_err={'-' if err is None else format(err, '.2e')} {c.get('diagnosis') or ''}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("preflight")
    p.add_argument("--search-dir", action="append", default=[])
    p.add_argument("--lib")
    add_stack_arguments(p)
    a = sub.add_parser("all")
    a.add_argument("--search-dir", action="append", default=[])
    a.add_argument("--lib")
    a.add_argument("--sizes", default=",".join(map(str, CHECK_SIZES)))
    a.add_argument("--kinds", default=",".join(CHECK_KINDS))
    a.add_argument("--summary", action="store_true", help="also print a human summary on stderr")
    add_stack_arguments(a)
    c = sub.add_parser("check")
    c.add_argument("kind", choices=CHECK_KINDS)
    c.add_argument("n", type=int)
    c.add_argument("--lib", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "preflight":
        res = preflight(args.search_dir, args.lib, stack_from_args(args))
    elif args.cmd == "all":
        res = run_all(args.search_dir, args.lib, tuple(int(s) for s in args.sizes.split(",")),
                      tuple(args.kinds.split(",")), stack_from_args(args))
    else:
        try:
            res = _check(args.kind, args.n, args.lib)
        except Exception as exc:  # reported as data: the parent turns it into a diagnosis
            res = {"kind": args.kind, "n": args.n, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
    text = json.dumps(res)
    out_file = os.environ.get("HARNESS_PROBE_RESULT")
    if out_file:
        with open(out_file, "w") as fh:
            fh.write(text)
    print(text, flush=True)
    if args.cmd == "all" and args.summary:
        print(summary(res), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
