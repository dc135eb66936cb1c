"""Issue 40, defect 6: a cuBLAS gate never fails without a reason, and a host whose driver line cannot
judge the wheel's cuBLAS says so instead of blaming the wheel.

The H100 host of 2026-12-06 (driver 580.159.04) ran the cuBLAS gates on a venv holding the host's own
nvidia-cublas 13.1.0.3 (installed by --no-deps and an unpinned --extra-requirement): every syrk/GEMM
gate FAILED with "gemm N=1024 failed: " and nothing after it. The wheel pins nvidia-cublas>=13.5,<14,
which needs an R590 driver: on R580 its large-GEMM promise cannot be judged at all. The preflights
below are that host's facts as the probe reported them (cuBLAS version, driver), with the profile's
real stack arguments; the probe itself needs a GPU and runs on the GPU host only.
"""
from __future__ import annotations

import pytest

from build_steps.cuda_stack import blas_failure_reason, cublas_not_judged, cublas_probe_args
from build_steps.profile_data import PROFILES
from harness.plugins.runtime import load_probe

_probe = load_probe("cublas_probe")
STACK = _probe.parse_stack(cublas_probe_args(PROFILES["cuda"]))


def _preflight(cublas: str, driver: str) -> dict:
    major = int(driver.split(".")[0])
    return {"full_version": cublas, "version": tuple(int(x) for x in cublas.split(".")[:3]),
            "loaded_from": "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13",
            "driver": {"driver_major": major, "kernel_module": driver, "cuda_driver_version": 13000,
                       "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]},
            "stack": STACK, "verdict": _probe.verdict(tuple(int(x) for x in cublas.split(".")), cublas, major, STACK)}


def test_the_stack_pins_a_cublas_that_needs_r590():
    assert STACK["cublas_requirement"] == "nvidia-cublas>=13.5,<14" and STACK["pin_driver"] == 590


def test_the_h100_hosts_r580_cannot_judge_the_wheels_cublas():
    why = cublas_not_judged(_preflight("13.1.0.3", "580.159.04"))
    assert why is not None
    assert why.startswith("not judged: driver 580 is below the wheel's floor (R590")
    assert "nvidia-cublas>=13.5,<14" in why and "cuBLAS 13.1.0.3" in why


def test_a_venv_cublas_outside_the_pin_cannot_judge_it_either():
    why = cublas_not_judged(_preflight("13.1.0.3", "590.44.01"))
    assert why is not None and why.startswith("not judged: the venv's cuBLAS 13.1.0.3 is not the wheel's "
                                              "nvidia-cublas>=13.5,<14")
    assert "--extra-requirement" in why


def test_the_pinned_cublas_on_an_r590_driver_is_judged():
    assert cublas_not_judged(_preflight("13.5.0.2", "590.44.01")) is None


def test_an_unknown_driver_is_judged_by_the_gate_not_excused():
    pre = _preflight("13.5.0.2", "590.44.01")
    pre["driver"] = {"error": "nvidia-smi: not found"}
    assert cublas_not_judged(pre) is None


def test_a_failed_check_never_has_an_empty_reason():
    # what probe_mx_blas.py returned on the H100 host: ok False, no error text
    pre = _preflight("13.5.0.2", "590.44.01")
    r = {"kind": "gemm", "n": 1024, "ok": False, "error": "", "returncode": 1,
         "stderr_tail": "Traceback ...\nOSError: libcrypto.so.3: cannot open shared object file"}
    why = blas_failure_reason(pre, r)
    assert why.startswith("gemm N=1024 failed: ") and why != "gemm N=1024 failed: "
    assert "libcrypto.so.3" in why and "cuBLAS 13.5.0.2" in why and "driver 590.44.01" in why
    bare = blas_failure_reason(pre, {"kind": "syrk", "n": 16, "ok": False})
    assert "the probe gave no error text" in bare and "result keys: kind, n, ok" in bare
