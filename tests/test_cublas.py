"""cuBLAS gate: the cuBLAS/driver pair is not one of the two known traps (docs/background.md),
and MXNet's linalg.syrk and GEMMs at N = 16, 256, 1024, 4096 on gpu(0) agree with numpy.

The preflight (ctypes, before MXNet is imported) reports the driver, the cuBLAS the wheel would
load and its version even when MXNet cannot load. Each MXNet call runs in its own child process,
so a segfault inside cuBLAS (the 13.1.1.3 syrk crash of CUDA 13) becomes a failed gate with a
diagnosis. Which cuBLAS, and the traps it is judged by, are the profile's CUDA stack (profiles.toml).
"""
import warnings

import pytest

from build_steps.cuda_stack import blas_failure_reason, cublas_not_judged
from build_steps.venv import explain_probe
from harness.plugins.runtime import load_probe
from harness.verdicts import not_judged

_cublas = load_probe("cublas_probe")
CHECK_SIZES, diagnose = _cublas.CHECK_SIZES, _cublas.diagnose

pytestmark = [pytest.mark.release, pytest.mark.runtime, pytest.mark.cublas, pytest.mark.gpu]


def _facts(pre: dict) -> str:
    drv = pre.get("driver") or {}
    return (f"cuBLAS {pre.get('full_version') or pre.get('version')} from {pre.get('loaded_from') or pre.get('lib')}, "
            f"driver {drv.get('kernel_module')} (CUDA {drv.get('cuda_driver_version')}), "
            f"GPUs {[g.get('name') + ' ' + g.get('compute_capability') for g in drv.get('gpus', [])]}")


@pytest.fixture(scope="module")
def preflight(cuda_preflight):
    why = explain_probe(cuda_preflight)
    if why:
        pytest.fail(f"the cuBLAS preflight did not run: {why}", pytrace=False)
    if not (cuda_preflight.get("driver") or {}).get("gpus"):
        pytest.skip("no CUDA GPU on this host (" + ((cuda_preflight.get("driver") or {}).get("error")
                    or "the driver reports 0 devices") + "): the cuBLAS gates need a GPU machine")
    # A host below the driver the wheel's pinned cuBLAS needs, or a venv holding another cuBLAS
    # than the pin, cannot judge these promises: said as such, never as the wheel's FAIL (issue 40)
    why_not = cublas_not_judged(cuda_preflight)
    if why_not:
        not_judged(why_not)
    return cuda_preflight


def test_cublas_preflight(preflight):
    stack = preflight.get("stack") or {}
    assert not preflight.get("load_error"), (
        f"cuBLAS could not be loaded: {preflight['load_error']}; the wheel declares "
        f"{stack.get('cublas_requirement') or stack.get('cublas_distribution') or 'its cuBLAS'}, "
        "so it must be in the venv (was the wheel installed with --no-deps?)")
    verdict = preflight["verdict"]
    for risk in verdict.get("risks", []):
        warnings.warn(risk)
    assert not verdict["traps"], " | ".join(t["message"] for t in verdict["traps"]) + f" [{_facts(preflight)}]"


@pytest.mark.parametrize("n", CHECK_SIZES)
@pytest.mark.parametrize("kind", ["syrk", "gemm"])
def test_mxnet_blas_matches_numpy(kind, n, preflight, venv_probe):
    r = venv_probe("probe_mx_blas.py", kind, n, timeout=600)
    if r.get("crashed") or r.get("timed_out"):
        pytest.fail(f"{kind} N={n}: " + (diagnose(preflight, {**r, "kind": kind, "n": n}) or explain_probe(r))
                    + f" [{_facts(preflight)}]", pytrace=False)
    why = explain_probe(r)
    assert why is None, why
    if not r.get("ok"):
        named = diagnose(preflight, {**r, "kind": kind, "n": n})
        # never an empty reason: the probe's error, else its exit and stderr (blas_failure_reason)
        pytest.fail((f"{kind} N={n}: {named} [{_facts(preflight)}]" if named else
                     blas_failure_reason(preflight, {**r, "kind": kind, "n": n}))
                    + f" [mapped in MXNet's process: {r.get('cublas_loaded')}]", pytrace=False)
