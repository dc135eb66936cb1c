"""GPU verification fanned out: merging GPU runners' JSON reports per release arch.

The reports in selftest/gpu_reports/ named after a GPU are written in the harness's report format
(the ``wheel`` and ``gpu_verification`` sections harness/plugins/gate_gpus.py adds) for GPUs this
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

from build_steps import gpu_reports
from build_steps.pinning import sha256_of
from build_steps.errors import UsageError

REPORTS = Path(__file__).resolve().parent / "gpu_reports"
ROOT = Path(__file__).resolve().parent.parent
SHA = json.loads((REPORTS / "a100.json").read_text())["wheel"]["sha256"]


def _merge_cli(*args):
    return subprocess.run([sys.executable, "-m", "tools.gpu_verify", *map(str, args)], cwd=ROOT,
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
    merged = gpu_reports.merge(gpu_reports.load_reports(d), wheel_sha256=SHA)
    assert "sm_86" in merged.unverified, "the A10 ran another wheel: sm_86 is not verified for this one"
    assert ("a10-other-wheel.json", "another wheel (sha256 9c8b7a6f5e4d…)") in merged.ignored


def _fatbin_wheel(tmp_path, fatbin_lib, case="release"):
    """A real wheel (zipfile, RECORD) whose libmxnet.so is an nvcc-built library of FATBIN_CASES[case]."""
    from selftest.fixtures_readers import minimal_files, write_wheel
    files = minimal_files()
    files["mxnet/libmxnet.so"] = fatbin_lib(case).read_bytes()
    return write_wheel(tmp_path / "mxnet-2.0.0+cu13.bw.20260614.1-cp311-cp311-linux_x86_64.whl", files)


def test_wheel_option_selects_reports_by_the_wheel_files_sha256(tmp_path, fatbin_lib):
    wheel = _fatbin_wheel(tmp_path, fatbin_lib)
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


def test_release_archs_come_from_the_wheels_fatbins(tmp_path, fatbin_lib):
    # The report claims the wheel promised sm_80 alone (and sm_80 passed): the wheel's own fatbin
    # carries five more archs, and those are the rows to verify. A wheel without sm_100: no sm_100 row.
    for case, archs in (("release", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]),
                        ("no_sm100", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"])):
        wheel = _fatbin_wheel(tmp_path / case, fatbin_lib, case)
        d = tmp_path / case / "reports"
        d.mkdir()
        doc = json.loads((REPORTS / "a100.json").read_text())
        doc["wheel"]["sha256"] = sha256_of(wheel)
        doc["expected"]["cuda_arch"] = "8.0"
        (d / "a100.json").write_text(json.dumps(doc))
        r = _merge_cli(d, f"--wheel={wheel}")
        assert r.returncode == 1, r.stdout + r.stderr
        rows = [l.split()[0] for l in r.stdout.splitlines() if l.strip().startswith("sm_")]
        assert rows == archs, r.stdout
        assert "release archs from the wheel's fatbins" in r.stdout
        assert r.stdout.strip().splitlines()[-1] == f"strict verdict: FAIL - no GPU verified {', '.join(archs[1:])}"


def test_a_duplicated_report_counts_once(tmp_path):
    d = _copy(tmp_path, "a100.json", "l40s.json")
    shutil.copy(d / "l40s.json", d / "l40s-copy.json")
    merged = gpu_reports.merge(gpu_reports.load_reports(d))
    assert [r.report for r in merged.per_arch["sm_89"]] == ["l40s-copy.json"], merged.per_arch
    assert len(merged.runs) == 2
    assert any(n == "l40s.json" and "the same GPU as l40s-copy.json" in why for n, why in merged.ignored)
    # Two GPUs of one model on one host, told apart by their UUIDs, are two runs.
    for name, uuid in (("l40s.json", "GPU-1"), ("l40s-copy.json", "GPU-2")):
        doc = json.loads((d / name).read_text())
        for g in doc["gpu_verification"]["gates"].values():
            g["gpu"]["uuid"] = uuid
        (d / name).write_text(json.dumps(doc))
    merged = gpu_reports.merge(gpu_reports.load_reports(d))
    assert len(merged.per_arch["sm_89"]) == 2 and len(merged.runs) == 3


@pytest.mark.parametrize("content, fragment", [
    ('{"hello": "world"}', "valid JSON but not a harness report (at the top level: 'schema' is a required property)"),
    ("[1, 2, 3]", "valid JSON but not a harness report"),
    ('{"schema": 1, "gates": {"t": {"verdict": 3}}}', "(at gates/t/verdict: 3 is not of type 'string')"),
])
def test_a_non_report_is_a_usage_error_naming_the_file(tmp_path, content, fragment):
    d = _copy(tmp_path, "a100.json")
    (d / "zz-notes.json").write_text(content)
    r = _merge_cli(d)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "zz-notes.json: " in r.stderr and fragment in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_an_oversized_file_is_refused_unread(tmp_path):
    d = _copy(tmp_path, "a100.json")
    big = d / "huge.json"
    with open(big, "wb") as fh:  # sparse: 1 GiB declared, nothing written
        fh.truncate(1 << 30)
    r = _merge_cli(d)
    assert r.returncode == 2 and "huge.json: 1073741824 bytes, above the 32 MiB a report may have" in r.stderr, r.stderr


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
    assert gpu_reports.gpu_identity(pre) == {"name": "NVIDIA H200", "compute_capability": "9.0",
                                            "arch": "sm_90", "visible": 2}
    assert gpu_reports.gpu_identity({"driver": {"gpus": []}}) is None
    assert gpu_reports.sm_name("12.0") == "sm_120"
    with pytest.raises(UsageError):
        gpu_reports.merge([(Path("x.json"), {"schema": 1})])


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


#: The GPU runner's report of the real fork's development build on the H200 (sm_90 only, oneDNN off,
#: shards cut at 2 min; docs/gpu_runs/real_fork_2026-12-04.md)
REAL_H200 = ROOT / "docs" / "gpu_runs" / "real_fork_2026-12-04-gpu.json"
REAL_H200_NOT_PASSED = ["gpu_cublaslt", "gpu_operator_classic", "gpu_operator_numpy", "gpu_quantization"]


def test_the_real_h200_report_covers_the_gpu_set_and_names_what_kept_sm90_unverified(tmp_path):
    """A real runner's report, not one written for the test: its gates are the release set's GPU
    gates by name (a renamed gate or shard would leave every real arch INCOMPLETE forever), its four
    gates that did not pass keep sm_90 from verified and are named, and with them passed the same
    report verifies sm_90 while the other five release archs stay unverified."""
    doc = json.loads(REAL_H200.read_text())
    section = doc["gpu_verification"]
    assert set(section["gates"]) | set(section["excused"]) == set(gpu_reports.required_gpu_gates())
    d = tmp_path / "as-run"
    d.mkdir()
    (d / REAL_H200.name).write_text(json.dumps(doc))
    r = _merge_cli(d)
    row = _row(r.stdout, "sm_90")
    assert r.returncode == 1 and row.split()[1] == "FAILED:" and "NVIDIA H200" in row, r.stdout
    assert "4 GPU gates failed" in row, row
    assert all(f"test_shard[{s}]" in r.stdout for s in REAL_H200_NOT_PASSED), r.stdout

    for name, gate in section["gates"].items():
        if any(f"[{s}]" in name for s in REAL_H200_NOT_PASSED):
            assert gate["verdict"] == "failed", name
            gate["verdict"] = "passed"
    d = tmp_path / "if-they-passed"
    d.mkdir()
    (d / REAL_H200.name).write_text(json.dumps(doc))
    r = _merge_cli(d)
    assert _row(r.stdout, "sm_90").split()[1] == "verified:", r.stdout
    assert r.returncode == 1 and "no GPU verified sm_80, sm_86, sm_89, sm_100, sm_120" in r.stdout, r.stdout


def _narrowed(doc: dict, keep) -> dict:
    """``doc`` as a runner that ran only the GPU gates for which ``keep(nodeid)`` is true."""
    doc = json.loads(json.dumps(doc))
    gates = doc["gpu_verification"]["gates"]
    doc["gpu_verification"]["gates"] = {n: g for n, g in gates.items() if keep(n)}
    return doc


def test_a_narrowed_gpu_run_leaves_its_arch_incomplete(tmp_path):
    """The regression: a runner that ran -m "gpu" -k smoke (4 GPU gates, all passed) verified its
    arch, though the GPU acceptance shards and the cuBLAS checks never ran on it."""
    d = tmp_path / "reports"
    d.mkdir()
    doc = json.loads((REPORTS / "a100.json").read_text())
    (d / "a100.json").write_text(json.dumps(_narrowed(doc, lambda n: "test_gpu_smoke" in n)))
    r = _merge_cli(d, "--cuda-arch=8.0")
    assert r.returncode == 1, r.stdout + r.stderr
    row = _row(r.stdout, "sm_80")
    assert row.split()[1] == "INCOMPLETE:", r.stdout
    required = gpu_reports.required_gpu_gates()
    assert f"{len(required) - 3} of the release set's {len(required)} GPU gates did not pass on sm_80" in r.stdout
    assert "tests/test_acceptance.py::test_shard[gpu_amp]" in r.stdout
    assert r.stdout.strip().splitlines()[-1] == "strict verdict: FAIL - the GPU gates did not all pass on sm_80"
    # a gate that skipped (ran out of GPU, or was not applicable) did not pass either
    doc_skip = json.loads(json.dumps(doc))
    doc_skip["gpu_verification"]["gates"]["tests/test_cublas.py::test_cublas_preflight"]["verdict"] = "skipped"
    (d / "a100.json").write_text(json.dumps(doc_skip))
    merged = gpu_reports.merge(gpu_reports.load_reports(d), cuda_arch="8.0")
    assert merged.missing("sm_80") == ["tests/test_cublas.py::test_cublas_preflight"] and not merged.ok
    # the whole set passed: verified
    (d / "a100.json").write_text(json.dumps(doc))
    assert _merge_cli(d, "--cuda-arch=8.0").returncode == 0


def test_the_gpu_set_may_be_split_across_runners_of_one_arch(tmp_path):
    """Two A100 runners, each with half of the GPU gates, verify sm_80 together; a failure on
    either fails it; an excused shard (not on the runner's tree) counts as done."""
    d = tmp_path / "reports"
    d.mkdir()
    doc = json.loads((REPORTS / "a100.json").read_text())
    first = _narrowed(doc, lambda n: "test_acceptance" in n)
    second = _narrowed(doc, lambda n: "test_acceptance" not in n)
    for g in second["gpu_verification"]["gates"].values():
        g["gpu"] = {**g["gpu"], "uuid": "GPU-second"}
    second["gpu_verification"]["host"] = "gpu-a100-2"
    (d / "first.json").write_text(json.dumps(first))
    (d / "second.json").write_text(json.dumps(second))
    r = _merge_cli(d, "--cuda-arch=8.0")
    assert r.returncode == 0 and _row(r.stdout, "sm_80").split()[1] == "verified:", r.stdout

    shard = "tests/test_acceptance.py::test_shard[gpu_fp16_batchdot]"
    del first["gpu_verification"]["gates"][shard]
    (d / "first.json").write_text(json.dumps(first))
    assert _merge_cli(d, "--cuda-arch=8.0").returncode == 1
    first["gpu_verification"]["excused"] = {shard: "tests/python/gpu/test_fp16_batch_dot.py is absent"}
    (d / "first.json").write_text(json.dumps(first))
    assert _merge_cli(d, "--cuda-arch=8.0").returncode == 0

    second["gpu_verification"]["gates"]["tests/test_gpu_smoke.py::test_gpu_visible"]["verdict"] = "failed"
    (d / "second.json").write_text(json.dumps(second))
    r = _merge_cli(d, "--cuda-arch=8.0")
    assert r.returncode == 1 and _row(r.stdout, "sm_80").split()[1] == "FAILED:", r.stdout


def test_the_manifest_names_every_gpu_gate_of_the_cuda_flavor():
    from build_steps.release_manifest import load_manifest
    cuda, cpu = load_manifest("cuda"), load_manifest("cpu")
    assert set(cuda.gpu_gates) <= set(cuda.gates) and not cpu.gpu_gates
    assert "tests/test_gpu_smoke.py::test_gpu_visible" in cuda.gpu_gates
    assert "tests/test_acceptance.py::test_shard[gpu_operator_numpy]" in cuda.gpu_gates
    assert not any("test_shard[cpu_" in g for g in cuda.gpu_gates)


@pytest.mark.parametrize("tool", ["tools.gpu_verify", "tools.review_page"])
def test_tools_check_wheel_as_the_harness_does(tool, tmp_path):
    """Issue 35: --wheel is checked in one place (build_steps.options.check_wheel_path): the tools
    refuse a file that is no wheel in the harness's words, not with a traceback or their own."""
    not_a_wheel = tmp_path / "mxnet.tar.gz"
    not_a_wheel.write_bytes(b"not a zip")
    first = REPORTS if tool == "tools.gpu_verify" else REPORTS / "a100.json"
    r = subprocess.run([sys.executable, "-m", tool, str(first), f"--wheel={not_a_wheel}",
                        *([f"--out={tmp_path / 'page.html'}"] if tool == "tools.review_page" else [])],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode in (2, 4), r.stdout + r.stderr
    assert f"--wheel {not_a_wheel}: not a wheel (the name must end in .whl)" in r.stderr, r.stderr


def test_a_gate_the_host_could_not_judge_never_fails_the_arch(tmp_path):
    """The regression (H100 host, driver 580, 2026-12-06): the cuBLAS gates ended NOT JUDGED (the
    driver is below the wheel's cuBLAS floor), the report filed them as "failed", and gpu_verify said
    sm_90 FAILED, blaming the wheel for the host. Not judged keeps the arch from verified and says
    why; a failure beside it is still a failure; another GPU of the arch that judged the gates
    verifies it."""
    d = tmp_path / "reports"
    d.mkdir()
    doc = json.loads((REPORTS / "a100.json").read_text())
    why = "not judged: driver 580 is below the wheel's floor (R590, which nvidia-cublas>=13.5,<14 needs)"
    for name, gate in doc["gpu_verification"]["gates"].items():
        if "test_cublas" in name:
            gate.update(verdict="not judged", message=why)
    (d / "a100.json").write_text(json.dumps(doc))
    r = _merge_cli(d, "--cuda-arch=8.0")
    row = _row(r.stdout, "sm_80")
    assert r.returncode == 1 and row.split()[1:3] == ["NOT", "JUDGED:"], r.stdout
    assert "driver 580 is below the wheel's floor" in row and "FAILED" not in r.stdout, r.stdout
    assert r.stdout.strip().splitlines()[-1] == "strict verdict: FAIL - the host could not judge the GPU gates on sm_80"
    merged = gpu_reports.merge(gpu_reports.load_reports(d), cuda_arch="8.0")
    assert merged.failed == [] and merged.archs_in("not judged") == ["sm_80"]

    # a failure beside it is the arch's verdict
    failing = json.loads(json.dumps(doc))
    failing["gpu_verification"]["gates"]["tests/test_gpu_smoke.py::test_gpu_visible"]["verdict"] = "failed"
    (d / "a100.json").write_text(json.dumps(failing))
    row = _row(_merge_cli(d, "--cuda-arch=8.0").stdout, "sm_80")
    assert row.split()[1] == "FAILED:" and "1 GPU gate failed" in row and "9 not judged" in row, row

    # a second A100 on an R590 host judged (and passed) the cuBLAS gates: sm_80 verified
    (d / "a100.json").write_text(json.dumps(doc))
    other = json.loads((REPORTS / "a100.json").read_text())
    other["gpu_verification"]["gates"] = {n: {**g, "gpu": {**g["gpu"], "uuid": "GPU-r590"}}
                                          for n, g in other["gpu_verification"]["gates"].items() if "test_cublas" in n}
    other["gpu_verification"]["host"] = "gpu-a100-r590"
    (d / "r590.json").write_text(json.dumps(other))
    r = _merge_cli(d, "--cuda-arch=8.0")
    assert r.returncode == 0 and _row(r.stdout, "sm_80").split()[1] == "verified:", r.stdout


def test_the_gpu_section_files_a_not_judged_gate_as_not_judged():
    """What the report writes: the ledger's verdict (attached where the gate ran) decides, so a
    gate that raised NotJudged is filed "not judged" with its reason, not pytest's "failed"."""
    from harness.plugins.ledger import _file_gpu_run
    from build_steps.gate_ledger import Entry
    from harness.verdicts import GPU_PROPERTY, VERDICT_PROPERTY, verdict_of

    gpu = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "arch": "sm_90", "visible": 1}
    why = "not judged: driver 580 is below the wheel's floor (R590)"
    runs: dict = {}
    for nodeid, outcome, verdict in (("tests/test_cublas.py::test_cublas_preflight", "failed", "not judged"),
                                     ("tests/test_gpu_smoke.py::test_gpu_visible", "failed", "failed"),
                                     ("tests/test_gpu_smoke.py::test_gpu_elementwise_matches_cpu", "passed", "passed")):
        report = pytest.TestReport(nodeid, ("tests/x.py", 1, "x"), {"gpu": 1}, outcome, None, "call",
                                   user_properties=[(GPU_PROPERTY, {"gpu": gpu, "wheel": "w.whl"}),
                                                    (VERDICT_PROPERTY, {"when": "call", "verdict": verdict,
                                                                        "markers": ["gpu"],
                                                                        "why": why if verdict != "passed" else ""})])
        entry = Entry()
        _file_gpu_run(entry, report, verdict_of(report) or {})
        runs[nodeid] = entry.gpu_run
    assert runs["tests/test_cublas.py::test_cublas_preflight"]["verdict"] == "not judged"
    assert runs["tests/test_cublas.py::test_cublas_preflight"]["message"] == why
    assert runs["tests/test_gpu_smoke.py::test_gpu_visible"]["verdict"] == "failed"
    assert runs["tests/test_gpu_smoke.py::test_gpu_elementwise_matches_cpu"]["verdict"] == "passed"
    assert runs["tests/test_gpu_smoke.py::test_gpu_visible"]["gpu"] == gpu


#: The GPU lane's report of the real fork's features-ON development build on the H100 (driver 580,
#: gpu_operator_classic part 1/5, gpu_operator_numpy part 1/4 cut by the hold's end;
#: docs/gpu_runs/real_fork_features_2026-12-06.md)
REAL_H100_FEATURES = ROOT / "docs" / "gpu_runs" / "real_fork_features_2026-12-06.gpu-lane.json"


def test_the_real_h100_features_report_leaves_sm90_not_judged_naming_the_missing_parts(tmp_path):
    """A real runner's report from an R580 host: the cuBLAS gates were not judged (the wheel's cuBLAS
    needs R590), so sm_90 is NOT JUDGED, never FAILED and never verified; the operator shards' parts
    that did not run on these bytes are named, so the next hold knows what to run."""
    doc = json.loads(REAL_H100_FEATURES.read_text())
    gates = doc["gpu_verification"]["gates"]
    assert {g["verdict"] for n, g in gates.items() if "test_cublas" in n} == {"not judged"}
    d = tmp_path / "as-run"
    d.mkdir()
    (d / REAL_H100_FEATURES.name).write_text(json.dumps(doc))
    r = _merge_cli(d)
    row = _row(r.stdout, "sm_90")
    assert r.returncode == 1 and row.split()[1:3] == ["NOT", "JUDGED:"] and "NVIDIA H100" in row, r.stdout
    assert "driver 580 is below the wheel's floor" in row, row
    assert "test_shard[gpu_operator_classic] (part 2/5, 3/5, 4/5, 5/5 missing)" in r.stdout, r.stdout
    assert "test_shard[gpu_operator_numpy]" in r.stdout, r.stdout
    assert "strict verdict: FAIL - the host could not judge the GPU gates on sm_90" in r.stdout, r.stdout
