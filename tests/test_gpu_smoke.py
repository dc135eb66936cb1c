"""GPU smoke gate: MXNet sees a GPU; an elementwise op and a small convolution on gpu(0) agree
with the CPU. A missing SASS arch is reported as "this GPU is sm_XX, the wheel carries ...",
not as a raw cudaErrorNoKernelImageForDevice. Without a GPU these skip (a release run turns
that into a failure).
"""
import pytest

from build_steps.venv import explain_probe

pytestmark = [pytest.mark.release, pytest.mark.runtime, pytest.mark.gpu]


def _skip_without_gpu(cuda_preflight):
    driver = cuda_preflight.get("driver") or {}
    if not driver.get("gpus"):
        pytest.skip("no CUDA GPU on this host (" + (driver.get("error") or "the driver reports 0 devices")
                    + "): the GPU gates need a GPU machine")


def _carried_archs(install_report) -> str:
    try:
        from build_steps.readers.fatbin import read_fatbin
    except ImportError:
        return "unknown archs (build_steps.readers.fatbin is not available)"
    libs = install_report.get("libmxnet") or []
    if not libs:
        return "no libmxnet.so"
    report = read_fatbin(libs[0])
    if report is None:
        return "no CUDA code at all (libmxnet.so has no .nv_fatbin section)"
    return f"SASS {', '.join(report.sass_names) or 'none'} and PTX {', '.join(report.ptx_names) or 'none'}"


def _gpu(venv_probe, cuda_preflight, install_report, check):
    _skip_without_gpu(cuda_preflight)
    r = venv_probe("probe_gpu.py", check, timeout=600)
    why = explain_probe(r)
    assert why is None, why
    if r.get("no_gpu"):
        pytest.fail("the driver sees a GPU but MXNet reports num_gpus() == 0: the wheel was built "
                    "without CUDA (USE_CUDA=OFF) or cannot initialise the CUDA runtime", pytrace=False)
    if r.get("no_kernel_image"):
        cc = r.get("compute_capability") or "?"
        sm = "sm_" + cc.replace(".", "")
        pytest.fail(f"this GPU is {sm} (compute capability {cc}), the wheel carries "
                    f"{_carried_archs(install_report)}: add {cc} to MXNET_CUDA_ARCH, delete the build dir "
                    f"and rebuild ({r.get('error', '').splitlines()[0] if r.get('error') else ''})",
                    pytrace=False)
    assert r.get("ok"), f"{check} on gpu(0): {r.get('error')}\n{r.get('traceback', '')}"
    return r


def test_gpu_visible(venv_probe, cuda_preflight, install_report):
    r = _gpu(venv_probe, cuda_preflight, install_report, "count")
    assert r["num_gpus"] >= 1


def test_gpu_elementwise_matches_cpu(venv_probe, cuda_preflight, install_report):
    r = _gpu(venv_probe, cuda_preflight, install_report, "elementwise")
    assert r["max_abs_error"] <= r["tolerance"]


def test_gpu_convolution_matches_cpu(venv_probe, cuda_preflight, install_report):
    r = _gpu(venv_probe, cuda_preflight, install_report, "conv")
    assert r["max_abs_error"] <= r["tolerance"]
