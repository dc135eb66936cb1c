"""The runtime gates, run for real in a child pytest against the real mxnet 1.9.1 wheel from PyPI:
they pass on it, GPU gates skip without a GPU (and fail under -m release), and each gate fails
on the regression it exists for, with a message that names it."""
import json

import pytest

from build_steps import gpu_reports
from build_steps.pinning import sha256_of
from selftest.fixtures_runtime import runtime_args

pytestmark = pytest.mark.slow


def test_gates_pass_on_mxnet191_and_gpu_gates_left_out_for_cpu(gates, mxnet191_wheel, mxnet191_wheelhouse, tmp_path):
    base = tmp_path / "bt"
    r = gates("-m", "runtime or build", *runtime_args(mxnet191_wheel, mxnet191_wheelhouse),
              "--flavor=cpu", f"--basetemp={base}", "-k", "not build_chain and not development_override")
    out = r.stdout.str()
    # 4 OpenCV + 6 features + version + 2 ONNX + 3 install = 16 pass; the 3 GPU + 9 cuBLAS gates
    # are not promises of the cpu profile, so they are deselected rather than skipped.
    r.assert_outcomes(passed=16)
    assert "tests/test_gpu_smoke.py" not in out and "tests/test_cublas.py" not in out
    assert "PASSED   tests/test_runtime_features.py::test_feature_matches_profile[USE_ONEDNN]" in out
    # The throwaway venv is gone after the session (no --keep-venv).
    assert not (base / "harness-shared" / "release-venv").exists()


def test_release_run_turns_gpu_skips_into_failures(gates, mxnet191_wheel, mxnet191_wheelhouse, tmp_path):
    # Under the cuda profile the GPU gates apply; with no GPU here they skip, and -m release fails them.
    base = tmp_path / "bt"
    report = tmp_path / "gpu-runner.json"
    r = gates("-m", "release and runtime", "-k", "gpu or cublas or png_rgb",
              *runtime_args(mxnet191_wheel, mxnet191_wheelhouse, "--keep-venv"), "--flavor=cuda",
              f"--basetemp={base}", f"--provenance-json={report}")
    # A skip in a fixture's setup (the cuBLAS preflight) is reported as an error, in a call as a failure.
    outcomes = r.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("failed", 0) + outcomes.get("errors", 0) == 12, outcomes
    assert r.ret != 0
    r.stdout.fnmatch_lines(["*release run: gate skipped, which counts as a failure (*no CUDA GPU on this host*"])
    # --keep-venv keeps it, usable by hand.
    assert (base / "harness-shared" / "release-venv" / "bin" / "python").exists()
    # The JSON report of this (GPU-less) runner names the wheel by sha256 and every GPU gate with no
    # GPU: merged, it verifies no arch.
    doc = json.loads(report.read_text())
    assert doc["wheel"]["sha256"] == sha256_of(mxnet191_wheel)
    section = doc["gpu_verification"]
    assert len(section["gates"]) == 12 and section["gpus"] == [], section
    assert not any(g["verdict"] == "passed" or g["gpu"] for g in section["gates"].values()), section
    merged = gpu_reports.merge(gpu_reports.load_reports(tmp_path))
    assert merged.unverified == ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"] and not merged.ok


def test_features_gate_fails_for_cuda_profile_on_cpu_wheel(gates, mxnet191_wheel, mxnet191_wheelhouse):
    r = gates("-m", "runtime", "-k", "feature_matches_profile",
              *runtime_args(mxnet191_wheel, mxnet191_wheelhouse), "--flavor=cuda")
    r.assert_outcomes(passed=3, failed=3)
    out = r.stdout.str()
    for name in ("CUDA", "CUDNN", "NCCL"):
        assert f"Features() says {name} is OFF but the cuda profile requires ON" in out


def test_onnx_gate_fails_on_perturbed_export(gates, perturbed_onnx_wheel, mxnet191_wheelhouse):
    r = gates("-m", "onnx", *runtime_args(perturbed_onnx_wheel, mxnet191_wheelhouse), "--flavor=cpu")
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*onnxruntime output differs from MXNet's: max |diff|*the exported model computes "
                            "something else than MXNet*"])


def test_version_gates_fail_on_wrong_version(gates, mxnet191_wheel, mxnet191_wheelhouse):
    r = gates("-m", "runtime or build", "-k", "installed_version or version_matches_wheel",
              *runtime_args(mxnet191_wheel, mxnet191_wheelhouse), "--flavor=cpu", "--package-version=1.9.2")
    r.assert_outcomes(failed=2)
    out = r.stdout.str()
    assert "installed mxnet is 1.9.1, expected 1.9.2" in out
    assert "mxnet.__version__ is 1.9.1 but the wheel is 1.9.2" in out


def test_an_unreachable_index_is_not_judged_exit_3_said_once(gates, mxnet191_wheel, tmp_path):
    """Issue 42, item 4: an index the install cannot reach (a closed local port) says nothing
    about the wheel. The run is ERROR, "not judged", exit 3 (harness.verdicts.NOT_JUDGED_EXIT),
    the install failure is said once, and the page says not judged, not FAIL."""
    report = tmp_path / "report.json"
    # a provenance gate that passes on it runs first (the report and the page are made from the
    # provenance gates); test_install.py's gates stand for every gate that needs the venv (the run
    # stops after the first, which says why)
    r = gates("-m", "release", "-k", "bundle_once or test_install.py", f"--wheel={mxnet191_wheel}",
              "--index-url=http://127.0.0.1:9/", "--extra-requirement=numpy<1.24", "--flavor=cpu",
              f"--provenance-json={report}")
    out = r.stdout.str() + r.stderr.str()
    assert r.ret == 3, out[-4000:]
    # pip's failure block, said once (not once per gate that needed the venv)
    assert out.count("No matching distribution found for") == 1, out[-6000:]
    assert "NOT JUDGED" in out and "could not reach the package index" in out, out[-4000:]
    assert "FAILED   tests/" not in out and "RELEASE " in out and ": ERROR (not judged)" in out, out[-4000:]
    page = report.with_suffix(".html").read_text()
    assert "not judged" in page.lower() and ">FAIL<" not in page, page[:3000]
