"""GPU verification fanned out: merging GPU runners' JSON reports per release arch.

The reports in selftest/gpu_reports/ named after a GPU are written in the harness's report format
(the ``wheel`` and ``gpu_verification`` sections harness/report_sections.py adds) for GPUs this
machine does not have; ``real-*.json`` there are reports of real runs on GPU machines; the GPU-less real-run report (no GPU here: every GPU gate skipped) is made by
selftest/test_runtime_gates.py::test_release_run_turns_gpu_skips_into_failures.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps import gpu_verify
from build_steps.pinning import sha256_of
from build_steps.errors import UsageError

REPORTS = Path(__file__).resolve().parent / "gpu_reports"
ROOT = Path(__file__).resolve().parent.parent
SHA = json.loads((REPORTS / "a100.json").read_text())["wheel"]["sha256"]


def _merge_cli(*args):
    return subprocess.run([sys.executable, "-m", "build_steps.gpu_verify", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def _copy(tmp_path, *names) -> Path:
    d = tmp_path / "reports"
    d.mkdir()
    for n in names:
        shutil.copy(REPORTS / n, d / n)
    return d


def _row(out: str, arch: str) -> str:
    return next(l for l in out.splitlines() if l.strip().startswith(arch + " "))


def test_merge_shows_each_release_arch_and_the_strict_verdict_names_the_unverified(tmp_path):
    d = _copy(tmp_path, "a100.json", "l40s.json", "rtx5090.json", "cpu-runner.json")
    r = _merge_cli(d)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "verified: NVIDIA A100-SXM4-80GB on gpu-a100-1 (a100.json): passed" in _row(out, "sm_80")
    assert "verified: NVIDIA L40S" in _row(out, "sm_89")
    assert "FAILED" in _row(out, "sm_120") and "the wheel carries SASS" in _row(out, "sm_120")
    for arch in ("sm_86", "sm_90", "sm_100"):
        assert "NOT VERIFIED: no GPU of this arch" in _row(out, arch), out
    assert "ignored cpu-runner.json: no GPU on that runner (every GPU gate skipped)" in out
    assert out.strip().splitlines()[-1] == ("strict verdict: FAIL - GPU gates failed on sm_120; "
                                            "no GPU verified sm_86, sm_90, sm_100")


def test_a_report_of_another_wheel_never_verifies_an_arch(tmp_path):
    d = _copy(tmp_path, "a100.json", "a10-other-wheel.json")
    # without --wheel, mixed wheels are refused, naming both and the fix
    r = _merge_cli(d)
    assert r.returncode == 2 and "2 different wheels" in r.stderr and "--wheel=W" in r.stderr, r.stderr
    merged = gpu_verify.merge(gpu_verify.load_reports(d), wheel_sha256=SHA)
    assert "sm_86" in merged.unverified, "the A10 ran another wheel: sm_86 is not verified for this one"
    assert ("a10-other-wheel.json", "another wheel (sha256 9c8b7a6f5e4d…)") in merged.ignored


def test_wheel_option_selects_reports_by_the_wheel_files_sha256(tmp_path):
    wheel = tmp_path / "mxnet-2.0.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel, but a file with a sha256")
    d = tmp_path / "reports"
    d.mkdir()
    for n in ("a100.json", "l40s.json"):
        doc = json.loads((REPORTS / n).read_text())
        if n == "a100.json":
            doc["wheel"]["sha256"] = sha256_of(wheel)
        (d / n).write_text(json.dumps(doc))
    r = _merge_cli(d, f"--wheel={wheel}")
    assert r.returncode == 1
    assert "verified" in _row(r.stdout, "sm_80") and "NOT VERIFIED" in _row(r.stdout, "sm_89"), r.stdout
    assert "ignored l40s.json: another wheel" in r.stdout


def test_every_release_arch_verified_passes(tmp_path):
    d = tmp_path / "reports"
    d.mkdir()
    base = json.loads((REPORTS / "a100.json").read_text())
    for cc in ("8.0", "8.6", "8.9", "9.0", "10.0", "12.0"):
        doc = json.loads(json.dumps(base))
        arch = "sm_" + cc.replace(".", "")
        for gate in doc["gpu_verification"]["gates"].values():
            gate["gpu"] = {"name": f"GPU {arch}", "compute_capability": cc, "arch": arch, "visible": 1}
        doc["gpu_verification"]["host"] = f"host-{arch}"
        (d / f"{arch}.json").write_text(json.dumps(doc))
    r = _merge_cli(d)
    assert r.returncode == 0, r.stdout
    assert r.stdout.strip().splitlines()[-1].startswith("strict verdict: PASS - every release arch "
                                                        "(sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)")


def test_bad_input_is_named(tmp_path):
    r = _merge_cli(tmp_path / "nope")
    assert r.returncode == 2 and "no such directory" in r.stderr
    (tmp_path / "empty").mkdir()
    assert "no *.json reports" in _merge_cli(tmp_path / "empty").stderr
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.json").write_text("{truncated")
    r = _merge_cli(tmp_path / "bad")
    assert r.returncode == 2 and "x.json: not a JSON report" in r.stderr


def test_gpu_identity_reads_the_preflights_first_device():
    pre = {"driver": {"gpus": [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"},
                               {"index": 1, "name": "NVIDIA H200", "compute_capability": "9.0"}]}}
    assert gpu_verify.gpu_identity(pre) == {"name": "NVIDIA H200", "compute_capability": "9.0",
                                            "arch": "sm_90", "visible": 2}
    assert gpu_verify.gpu_identity({"driver": {"gpus": []}}) is None
    assert gpu_verify.sm_name("12.0") == "sm_120"
    with pytest.raises(UsageError):
        gpu_verify.merge([(Path("x.json"), {"schema": 1})])


@pytest.mark.parametrize("report", sorted(REPORTS.glob("real-*.json")), ids=lambda p: p.name)
def test_a_real_gpu_runners_report_verifies_its_arch(report, tmp_path):
    """Reports from real GPU runs (``real-<gpu>.json``, written by ``pytest -m "gpu or cublas"
    --wheel=W --provenance-json=...`` on the GPU machine) merge into a verified row for their arch."""
    doc = json.loads(report.read_text())
    gpus = doc["gpu_verification"]["gpus"]
    assert gpus and doc["wheel"]["sha256"], "a real GPU run names its GPU and its wheel"
    d = _copy(tmp_path, report.name)
    r = _merge_cli(d)
    arch = gpus[0]["arch"]
    assert f"verified: {gpus[0]['name']}" in _row(r.stdout, arch), r.stdout
