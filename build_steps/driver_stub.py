"""A stand-in for the NVIDIA driver's libcuda.so.1, for the CPU-side runtime gates of a CUDA
wheel on a host without the driver (a CPU-only CI runner).

A CUDA wheel links libcuda.so.1 and must never ship it: only a driver install provides it. On a
host without one, ``import mxnet`` fails at dlopen, and the OpenCV, ONNX and Features gates, which
use no GPU, could not run at all. With the stub preloaded into the probe's process (only there:
the probe loads it by path before importing mxnet, so no search path changes and nothing else
can find it) the library loads; every driver call answers "no device", so no GPU gate can pass
on it. The run says that it was used.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from . import sandbox
from .cuda_root import build_driver_stub

#: the probes preload the stub named by this variable (tests/probes/probe_common.py)
STUB_ENV = "HARNESS_DRIVER_STUB"
DRIVER_SONAME = "libcuda.so.1"
#: The run-once record (in the run's shared dir) saying whether the stub was made, and why.
STUB_RECORD = "driver-stub"

_CAN_LOAD = "import ctypes, sys\ntry:\n    ctypes.CDLL(sys.argv[1])\nexcept OSError as exc:\n    print(exc)\n    sys.exit(1)\n"


def driver_missing(python: Path, env: dict[str, str] | None = None) -> str | None:
    """Why ``python`` cannot load libcuda.so.1 (None when a driver is installed)."""
    # the venv's interpreter runs the installed wheel's .pth files: sandboxed like every probe
    argv, child_env = sandbox.wrap([str(python), "-c", _CAN_LOAD, DRIVER_SONAME], env,
                                   readable=[Path(python).parent.parent])
    proc = subprocess.run(argv, capture_output=True, text=True, env=child_env)
    return None if proc.returncode == 0 else (proc.stdout.strip() or proc.stderr.strip() or "cannot load")


def make_stub(dest_dir: Path) -> Path:
    """The stub library (gcc-built, SONAME libcuda.so.1) in ``dest_dir``."""
    return build_driver_stub(Path(dest_dir) / DRIVER_SONAME)


def stub_record(libmxnet: list[str], python: Path, env: dict[str, str], dest_dir: Path) -> dict[str, Any]:
    """The run-once record of the stand-in: ``{"stub": path, "why": ...}`` when the installed
    libmxnet.so (``libmxnet``: where it resolves in the venv) needs libcuda.so.1 and the venv's
    ``python`` cannot load one, else ``{"stub": None}``."""
    from .errors import HarnessError
    from .readers.elf import read_dynamic
    try:
        needs = bool(libmxnet) and DRIVER_SONAME in read_dynamic(libmxnet[0]).needed
    except HarnessError:
        needs = False  # not an ELF library: the gates say so themselves
    missing = driver_missing(python, env) if needs else None
    if missing is None:
        return {"stub": None}
    return {"stub": str(make_stub(dest_dir)), "why": missing}
