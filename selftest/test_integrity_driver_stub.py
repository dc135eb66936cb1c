"""Issue 11, point 6: the CPU-runner recipe (``-m "runtime and not gpu"``) on a wheel that links the
NVIDIA driver (libcuda.so.1), on this host, which has none.

The wheel is the real mxnet 1.9.1 with libcuda.so.1 added to libmxnet.so's NEEDED by patchelf, as
every CUDA build links it. Without a driver, dlopen fails and the OpenCV/ONNX/Features gates could
not run; the harness preloads its stand-in driver into those probes only and says so.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from build_steps.driver_stub import driver_missing, make_stub
from selftest.conftest import HARNESS_ROOT
from selftest.fixtures_runtime import rewrite_wheel, runtime_args


@pytest.fixture(scope="session")
def wheel_needing_the_driver(mxnet191_wheel, tmp_path_factory):
    work = tmp_path_factory.mktemp("driver-wheel")
    with zipfile.ZipFile(mxnet191_wheel) as zf:
        (work / "libmxnet.so").write_bytes(zf.read("mxnet/libmxnet.so"))
    subprocess.run(["patchelf", "--add-needed", "libcuda.so.1", str(work / "libmxnet.so")], check=True)
    dest = work / mxnet191_wheel.name
    return rewrite_wheel(mxnet191_wheel, dest, {"mxnet/libmxnet.so": (work / "libmxnet.so").read_bytes()})


def test_stub_preload_satisfies_the_needed_entry_in_that_process_only(tmp_path):
    if driver_missing(sys.executable) is None:
        pytest.skip("this host has an NVIDIA driver: the stub is never used here")
    stub = make_stub(tmp_path / "stub")
    lib = tmp_path / "libneedsdriver.so"
    (tmp_path / "x.c").write_text("int uses_driver(void) { extern int cuInit(unsigned); return cuInit(0); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "x.c"), str(stub)], check=True)
    code = ("import ctypes, sys\nsys.path.insert(0, sys.argv[2])\nimport probe_common\nr = {}\n"
            "if sys.argv[3] == 'stub':\n    probe_common.preload_driver_stub(r)\n"
            "print(ctypes.CDLL(sys.argv[1]).uses_driver())\n")
    probes = str(HARNESS_ROOT / "tests" / "probes")
    bare = subprocess.run([sys.executable, "-c", code, str(lib), probes, "none"], capture_output=True, text=True)
    assert bare.returncode != 0 and "libcuda.so.1: cannot open shared object file" in bare.stderr
    stubbed = subprocess.run([sys.executable, "-c", code, str(lib), probes, "stub"], capture_output=True,
                             text=True, env={"HARNESS_DRIVER_STUB": str(stub), "PATH": "/usr/bin:/bin"})
    assert stubbed.returncode == 0, stubbed.stderr
    assert stubbed.stdout.strip() == "100"  # CUDA_ERROR_NO_DEVICE: nothing can use a GPU through it


@pytest.mark.slow
def test_cpu_runner_recipe_passes_on_a_wheel_that_links_the_driver(gates, wheel_needing_the_driver,
                                                                  mxnet191_wheelhouse):
    if driver_missing(sys.executable) is None:
        pytest.skip("this host has an NVIDIA driver: the recipe runs without the stub there")
    r = gates("-m", "runtime and not gpu", *runtime_args(wheel_needing_the_driver, mxnet191_wheelhouse),
              "--flavor=cpu")
    out = r.stdout.str()
    assert r.ret == pytest.ExitCode.OK, out[-4000:]
    r.assert_outcomes(passed=13)  # 4 OpenCV, 6 features, version, 2 ONNX
    assert "neither bundled, nor reachable" not in out
    r.stdout.fnmatch_lines(["*driver stub: this host has no NVIDIA driver*CPU-side runtime gates*"
                            "stand-in libcuda.so.1 preloaded into their probes only*"])
