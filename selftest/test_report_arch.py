"""One CUDA arch value end to end (issue 35): the JSON report stores the arch the wheel was built
with as data (Arch.to_json, report schema 2), and every reader of the report (the GPU merge, the
review page, tools.gpu_verify and tools.review_page) takes it back with Arch.from_json and goes by
its built list, never by the requested text. Reports written before (schema 1, the requested text,
e.g. docs/gpu_runs/) still read.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest

from build_steps import gpu_reports
from build_steps.report import review_page
from build_steps.errors import UsageError
from build_steps.options import make_options
from build_steps.arch import Arch, parse_cuda_arch
from build_steps.profile_data import PROFILES
from build_steps.readers.report import SCHEMA, provenance_document

ROOT = Path(__file__).resolve().parent.parent
REPORTS = Path(__file__).resolve().parent / "gpu_reports"
RELEASE = PROFILES["cuda"].release_arch

pytest_plugins = ["pytester"]


def _as_read(doc: dict) -> dict:
    """``doc`` as a reader gets it: through JSON text."""
    return json.loads(json.dumps(doc))


def _audit(cache_arch: str | None):
    """The audit's facts a report needs: a CMake cache that says ``cache_arch`` (None: no cache read)."""
    cmake = None if cache_arch is None else {"path": "/b/CMakeCache.txt", "features": {}, "cuda_arch": cache_arch}
    return SimpleNamespace(cmake=cmake, to_json=lambda: {"cmake": cmake})


@pytest.mark.parametrize("raw", [{}, {"cuda_arch": "9.0"}, {"cmake_defines": ["MXNET_CUDA_ARCH=8.0;12.0+PTX"]}],
                         ids=["release", "requested", "override"])
def test_the_report_stores_the_built_arch_as_data_and_a_reader_gets_the_same_arch_back(raw):
    options = make_options(raw)
    doc = _as_read(provenance_document(None, {}, options))
    stored = doc["expected"]["cuda_arch"]
    assert doc["schema"] == SCHEMA == 2
    assert stored["built"] == {"sass": list(options.cuda_arch.built.sass), "ptx": list(options.cuda_arch.built.ptx),
                               "text": options.cuda_arch.built.text}
    assert "no CMake cache" in doc["expected"]["cuda_arch_built_from"]
    jsonschema.validate(doc, gpu_reports.REPORT_SCHEMA)
    arch = gpu_reports.report_arch(doc)
    assert arch == options.cuda_arch and arch.built.text == options.cuda_arch.built.text
    assert Arch.from_json(arch.to_json()) == arch


def test_a_build_whose_cache_says_another_list_is_reported_as_built_with_the_cache_list():
    """The configure record (the CMake cache the audit read) is what was built: a request of the
    release list over a cache of 9.0 is reported as built 9.0, the request kept beside it."""
    options = make_options({})
    doc = _as_read(provenance_document(_audit("9.0"), {}, options))
    arch = gpu_reports.report_arch(doc)
    assert arch.requested == RELEASE and arch.built == parse_cuda_arch("9.0")
    assert doc["expected"]["cuda_arch_built_from"] == "the CMake cache /b/CMakeCache.txt"
    # the same list as requested (a run that configured: configure.verify_cache made it so): the run's Arch
    same = _as_read(provenance_document(_audit("8.0;8.6;8.9;9.0;10.0;12.0+PTX"), {}, options))
    assert gpu_reports.report_arch(same) == options.cuda_arch
    # a CPU profile builds no CUDA code: its cache's MXNET_CUDA_ARCH means nothing
    cpu = _as_read(provenance_document(_audit("9.0"), {}, make_options({"flavor": "cpu"})))
    assert gpu_reports.report_arch(cpu).built.sass == ()


def test_a_real_audit_of_a_build_configured_with_an_older_list_reports_that_list_as_built(gates, selftest_wheels, tmp_path):
    """The real gates over the good wheel and a CMake cache of the older list (no 10.0): the cache
    gate fails, and the report says what was built (the cache's list), the request beside it."""
    out = tmp_path / "prov.json"
    result = gates("-m", "provenance", f"--wheel={selftest_wheels['good_cuda']}", f"--mxnet-src={selftest_wheels['src']}",
                   f"--cmake-cache={selftest_wheels['cache_arch_old']}", f"--provenance-json={out}")
    assert result.ret == 1, result.stdout.str()
    doc = json.loads(out.read_text())
    arch = gpu_reports.report_arch(doc)
    assert arch.built == parse_cuda_arch("8.0;8.6;8.9;9.0;12.0+PTX") and arch.requested == RELEASE
    assert doc["expected"]["cuda_arch_built_from"] == f"the CMake cache {selftest_wheels['cache_arch_old']}"
    assert [row.arch for row in review_page.page_view(doc)["archs"]] == ["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"]


def _runner_report(tmp_path: Path, arch: Arch) -> Path:
    """selftest/gpu_reports/a100.json as a schema-2 runner's report whose built arch is ``arch``."""
    d = tmp_path / "reports"
    d.mkdir()
    doc = json.loads((REPORTS / "a100.json").read_text())
    doc["schema"] = 2
    doc["expected"]["cuda_arch"] = arch.to_json()
    (d / "a100.json").write_text(json.dumps(doc))
    return d / "a100.json"


def test_a_report_whose_request_differs_from_the_built_arch_is_read_as_the_built_one(tmp_path):
    """Requested: the release list (six archs); built: 8.0 and 12.0+PTX (an override). The merge,
    tools.gpu_verify and the review page go by the two archs built."""
    arch = make_options({"cmake_defines": ["MXNET_CUDA_ARCH=8.0;12.0+PTX"]}).cuda_arch
    assert arch.requested.text != arch.built.text
    report = _runner_report(tmp_path, arch)
    doc = json.loads(report.read_text())
    assert gpu_reports.report_arch(doc).built == parse_cuda_arch("8.0;12.0+PTX")

    merged = gpu_reports.merge(gpu_reports.load_reports(report.parent))
    assert merged.archs == ["sm_80", "sm_120"]
    r = subprocess.run([sys.executable, "-m", "tools.gpu_verify", str(report.parent)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    rows = [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip().startswith("sm_")]
    assert rows == ["sm_80", "sm_120"], r.stdout + r.stderr
    # what harness.plugins.review_clock passes today (the report's expected.cuda_arch as stored) reads the same
    assert gpu_reports.merge([(report, doc)], doc["wheel"]["sha256"], doc["expected"]["cuda_arch"]).archs == ["sm_80", "sm_120"]

    view = review_page.page_view(doc, merged=merged)
    assert [row.arch for row in view["archs"]] == ["sm_80", "sm_120"]
    assert [row.ptx_wanted for row in view["archs"]] == [False, True]
    assert view["cuda_arch"] == "8.0;12.0+PTX (requested 8.0;8.6;8.9;9.0;10.0;12.0+PTX)"
    out = tmp_path / "page.html"
    r = subprocess.run([sys.executable, "-m", "tools.review_page", str(report), f"--out={out}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    matrix = out.read_text().split('id="archs"', 1)[1].split("</table>", 1)[0]
    assert "sm_80" in matrix and "sm_120" in matrix and "sm_90" not in matrix


def test_reports_of_two_built_lists_are_refused_naming_each():
    docs = []
    for text in ("9.0", "8.0"):
        doc = json.loads((REPORTS / "a100.json").read_text())
        doc["schema"], doc["expected"]["cuda_arch"] = 2, make_options({"cuda_arch": text}).cuda_arch.to_json()
        docs.append((Path(f"built-{text}.json"), doc))
    with pytest.raises(UsageError, match=r"built for different arch lists \(9.0: built-9.0.json; 8.0: built-8.0.json\)"):
        gpu_reports.merge(docs)


def test_schema_1_reports_still_read_as_their_requested_text():
    """The reports checked in before schema 2 (selftest/gpu_reports, docs/gpu_runs) stored the text."""
    for path in [*REPORTS.glob("*.json"), *(ROOT / "docs" / "gpu_runs").glob("real_fork_*.json")]:
        doc = json.loads(path.read_text())
        text = (doc.get("expected") or {}).get("cuda_arch")
        if not isinstance(text, str) or doc.get("schema") != 1:
            continue
        arch = gpu_reports.report_arch(doc)
        assert arch == Arch(requested=parse_cuda_arch(text)) and arch.built.text == text, path
    old = json.loads((REPORTS / "a100.json").read_text())
    assert gpu_reports.report_arch(old).built == RELEASE
    assert gpu_reports.merge([(Path("a100.json"), old)]).archs == [f"sm_{a}" for a in RELEASE.sass]


def test_a_schema_2_report_with_arch_text_or_an_edited_built_list_is_refused(tmp_path):
    arch = make_options({}).cuda_arch
    report = _runner_report(tmp_path, arch)
    doc = json.loads(report.read_text())
    doc["expected"]["cuda_arch"] = arch.requested.text
    report.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="not a harness report .at expected/cuda_arch"):
        gpu_reports.load_reports(report.parent)
    doc["expected"]["cuda_arch"] = {**arch.to_json(), "built": {"sass": [90], "ptx": [], "text": "9.0"}}
    report.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="a100.json: the arch's 'built' .* the document was edited"):
        gpu_reports.merge(gpu_reports.load_reports(report.parent))
