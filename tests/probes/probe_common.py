"""Shared helpers of the probes: programs the runtime gates run in the throwaway venv's interpreter.

Standard library only (plus mxnet/numpy, which the venv has). A probe prints one JSON object and
also writes it to $HARNESS_PROBE_RESULT; any exception becomes {"ok": false, "error": ...} so the
gate can explain it. Every probe calls ``start()`` first: it imports mxnet and checks, from
/proc/self/maps, that libmxnet.so and the libraries bundled with the package were loaded from the
venv, not from a build tree or a system copy.

MXNet 2.0 is the primary target; 1.x differences are handled by name where they occur
(``device=`` vs ``ctx=``, ``mx.np`` vs ``mx.nd``, ``mx.device`` vs ``mx.context``).
"""
from __future__ import annotations

import glob
import json
import os
import sys
import traceback

OPENCV_OFF_MARK = "Build with USE_OPENCV=1"


def emit(result: dict) -> None:
    text = json.dumps(result, default=str)
    path = os.environ.get("HARNESS_PROBE_RESULT")
    if path:
        with open(path, "w") as fh:
            fh.write(text)
    print(text, flush=True)


def mapped_files() -> list:
    paths = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                p = parts[5].strip()
                if p not in paths:
                    paths.append(p)
    return paths


def origin_report(mx) -> dict:
    """Where mxnet, libmxnet.so and the package's bundled libraries came from."""
    pkg = os.path.dirname(os.path.realpath(mx.__file__))
    prefix = os.path.realpath(sys.prefix)
    shipped = set()
    for d in (pkg, os.path.join(pkg, "lib")):
        shipped.update(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.so*")))
    maps = [os.path.realpath(p) for p in mapped_files()]
    libmxnet = [p for p in maps if os.path.basename(p).startswith("libmxnet")]
    bundled = [p for p in maps if os.path.basename(p) in shipped]
    foreign = [p for p in set(libmxnet + bundled) if not p.startswith(pkg + os.sep)]
    problems = []
    if not pkg.startswith(prefix + os.sep):
        problems.append(f"mxnet was imported from {pkg}, outside the venv {prefix}")
    if not libmxnet:
        problems.append("libmxnet.so is not mapped into the process after `import mxnet`")
    for p in sorted(foreign):
        problems.append(f"{os.path.basename(p)} was loaded from {p}, not from the installed package {pkg}")
    return {"package_dir": pkg, "prefix": prefix, "libmxnet": libmxnet, "bundled_loaded": sorted(bundled),
            "problems": problems, "ok": not problems}


def preload_driver_stub(result: dict) -> None:
    """With $HARNESS_DRIVER_STUB (a host without the NVIDIA driver, CPU-side gates only): load the
    stand-in libcuda.so.1 by path, so libmxnet.so's NEEDED entry is satisfied by it and by
    nothing the loader would search for."""
    stub = os.environ.get("HARNESS_DRIVER_STUB")
    if stub:
        import ctypes
        ctypes.CDLL(stub, mode=ctypes.RTLD_GLOBAL)
        result["driver_stub"] = stub


def start(name: str):
    """Import mxnet and check its origin; on failure emit the reason and exit. Returns (mx, result)."""
    result = {"probe": name, "ok": False, "python": sys.executable}
    try:
        preload_driver_stub(result)
        import mxnet as mx
    except BaseException as exc:  # an ImportError or an OSError from dlopen: both are the verdict
        result.update(import_error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-3000:])
        emit(result)
        sys.exit(0)
    result["mxnet_version"] = getattr(mx, "__version__", None)
    result["origin"] = origin_report(mx)
    if not result["origin"]["ok"]:
        result["error"] = "; ".join(result["origin"]["problems"])
        emit(result)
        sys.exit(0)
    return mx, result


def run(main, name: str) -> None:
    """Run ``main(mx, result)`` and emit its result; an exception is reported, not raised."""
    mx, result = start(name)
    try:
        main(mx, result)
    except BaseException as exc:
        result["ok"] = False
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()[-4000:]
        if OPENCV_OFF_MARK in str(exc):
            result["opencv_off"] = True
    emit(result)


# ---- MXNet 2.0 / 1.x compatibility ---------------------------------------------------------
def is_v2(mx) -> bool:
    return int(str(mx.__version__).split(".")[0]) >= 2


def array(mx, data, device=None, dtype=None):
    """An MXNet array on ``device``: mx.np with device= on 2.0, mx.nd with ctx= on 1.x."""
    kwargs = {} if dtype is None else {"dtype": dtype}
    if is_v2(mx):
        return mx.np.array(data, device=device or mx.cpu(), **kwargs)
    return mx.nd.array(data, ctx=device or mx.cpu(), **kwargs)


def num_gpus(mx) -> int:
    # 2.0: mxnet.device.num_gpus; 1.x has no mxnet.device module: mxnet.context.num_gpus.
    for mod in ("device", "context"):
        m = getattr(mx, mod, None)
        if m is not None and hasattr(m, "num_gpus"):
            return int(m.num_gpus())
    return int(mx.num_gpus())


def gpu_compute_capability(index: int = 0):
    """(major, minor) of GPU ``index`` from the driver API, or None (no driver / no GPU)."""
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        if cuda.cuInit(0) != 0:
            return None
        dev, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
        if cuda.cuDeviceGet(ctypes.byref(dev), index) != 0:
            return None
        cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
        cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
        return major.value, minor.value
    except OSError:
        return None
