"""Issue 47 item 5: the end of the run's products are functions of the run record
(harness.run_record.RunRecord: the ledger's entries, the chain's typed products, the pin, the
options). Each test builds a record here (no pytester, no harness run) and checks the real product:
the JSON report's sections, the review page's HTML, the summary's lines, a real wheel placed in a
tmp dist/ or set aside in rejected/.
"""
from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from build_steps.report import review_page
from build_steps.build_chain import step_seconds, step_times
from build_steps.compile import CompileResult
from build_steps.configure import ConfigureResult
from build_steps.gate_ledger import Entry
from build_steps.once import run_once
from build_steps.options import make_options
from build_steps.package import PackageResult
from build_steps.pinning import pin_wheel, sha256_of
from build_steps.readers.audit import collect
from build_steps.readers.ninja_log import NinjaCommand, build_time
from build_steps.readers.report import write_json_atomic
from build_steps.readers.wheel import extract_wheel
from build_steps.source import SourceInfo
from build_steps.release_manifest import ReleaseSet
from build_steps.report.document import (driver_stub_lines, page_of, provenance_lines, report_document, wants_document,
                                write_pages)
from build_steps.report.record import ChainProducts, HostFacts, RunRecord, StepEnd
from harness.run_record import _driver_stub
from build_steps.report.placement import chain_lines, place_built_wheel

PROV_OK = "tests/test_static.py::test_provenance_ok"
PROV_BAD = "tests/test_static.py::test_no_dwarf"
BUILD_GATE = "tests/test_build.py::test_configured"
HOST = HostFacts(name="builder-7", os="Debian GNU/Linux 12 (bookworm)", python="3.11.2",
                 sandbox={"harness_euid": 1000, "step_uid": 65534, "via": "bwrap (unprivileged)"})


def _wheel(where: Path, version: str = "2.0.0") -> Path:
    """A real wheel (zip, dist-info, RECORD with hashes): the bytes the pin hashes and dist/ gets."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"mxnet-{version}-py3-none-any.whl"
    members = {"mxnet/__init__.py": b"__version__ = '2.0.0'\n",
               f"mxnet-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: mxnet\nVersion: {version}\n".encode(),
               f"mxnet-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: selftest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
                     for name, data in members.items()) + f"mxnet-{version}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr(f"mxnet-{version}.dist-info/RECORD", record)
    return path


def _chain(tmp: Path, wheel: Path, dist: Path) -> ChainProducts:
    """The typed products of a CPU build, as the chain's steps make them."""
    logs = tmp / "build" / "harness-logs"
    logs.mkdir(parents=True)
    (logs / "configure.log").write_text("-- Configuring done\n")
    commands = [NinjaCommand(target="src/operator/nn/convolution.cc.o", seconds=812.5),
                NinjaCommand(target="src/io/image_io.cc.o", seconds=40.0)]
    return ChainProducts(
        source=SourceInfo(root=tmp / "mxnet", commit="c0ffee" * 6 + "abcd", branch="v2.x",
                          submodule_warnings=["3rdparty/dmlc-core is at another commit than pinned"]),
        configure=ConfigureResult(build_dir=tmp / "build", first_time=True, seconds=4.8, log=logs / "configure.log",
                                  cache={"CMAKE_PROJECT_NAME": "mxnet"}, notes=["OpenCV found at /usr"],
                                  compilers={"CXX": {"id": "GNU", "version": "12.2.0", "path": "/usr/bin/c++"}},
                                  cmake_version="3.25.1", toolchain={"c++": "12.2.0", "cmake": "3.25.1"}),
        compile=CompileResult(library=tmp / "build" / "libmxnet.so", seconds=3600.0, steps_run=1300,
                              total_steps=1300, no_work=False, log=logs / "compile.log",
                              build_time=build_time(commands, 7000.0),
                              reproducible="reproducible: SOURCE_DATE_EPOCH from the commit"),
        wheel=PackageResult(wheel=wheel, seconds=16.7, log=logs / "package.log", version="2.0.0", dist=dist))


def _entries(bad: bool) -> dict[str, Entry]:
    """The ledger: a build gate and two provenance gates passed, or the second one failed."""
    out = {BUILD_GATE: Entry(verdict="passed", markers=("build", "release"), when="call", finished=True),
           PROV_OK: Entry(verdict="passed", markers=("provenance", "release"), when="call", finished=True,
                          provenance=("passed", ""))}
    why = "libmxnet.so carries DWARF (.debug_info): strip it" if bad else ""
    out[PROV_BAD] = Entry(verdict="failed" if bad else "passed", why=why, markers=("provenance", "release"),
                          when="call", finished=True, provenance=("failed" if bad else "passed", why))
    return out


def _record(tmp: Path, *, bad: bool = False, **changes: object) -> RunRecord:
    staging = _wheel(tmp / "build" / "harness-wheel")
    pin = pin_wheel(staging, tmp / "run" / "pinned-wheel")
    options = make_options({"flavor": "cpu", "provenance_json": str(tmp / "report.json")})
    # the static gates' facts of the pinned bytes, as harness.plugins.wheel_facts collects them
    audit = collect(extract_wheel(Path(pin.path), tmp / "run" / "wheel"), options)
    rec = RunRecord(options=options, entries=_entries(bad), chain=_chain(tmp, staging, tmp / "mxnet" / "dist"),
                    pin=pin, audit=audit, release_set=ReleaseSet(flavor="cpu", gates=[BUILD_GATE, PROV_OK, PROV_BAD]),
                    collected={n: ["release"] for n in (BUILD_GATE, PROV_OK, PROV_BAD)},
                    selection="release", host=HOST, exitstatus=1 if bad else 0)
    return replace(rec, **changes)  # type: ignore[arg-type]


def test_the_json_report_is_a_function_of_the_record(tmp_path):
    rec = _record(tmp_path)
    assert wants_document(rec)
    doc = report_document(rec)
    assert doc is not None
    write_json_atomic(rec.options.provenance_json, doc)
    back = json.loads(rec.options.provenance_json.read_text())
    # the wheel is the pin's bytes, hashed once: the real file's sha256
    assert back["wheel"]["sha256"] == sha256_of(rec.pin.path) == rec.pin.sha256
    assert back["wheel"]["filename"] == "mxnet-2.0.0-py3-none-any.whl"
    assert back["gates"][PROV_OK]["verdict"] == "passed" and back["profile"] == "cpu"
    assert back["gates"][PROV_BAD]["verdict"] == "passed" and back["passed"] is True
    assert back["facts"]["filename"] == "mxnet-2.0.0-py3-none-any.whl"
    # the build section: the configure's toolchain, the compile's reproducibility line and times
    build = back["build"]
    assert build["toolchain"] == {"c++": "12.2.0", "cmake": "3.25.1"}
    assert build["reproducible"].startswith("reproducible: ")
    assert build["compile_time"]["wall_seconds"] == 3600.0 and build["compile_time"]["commands"] == 2
    assert build["step_seconds"] == {"configure": 4.8, "compile": 3600.0, "built_wheel": 16.7}
    assert back["sandbox"] == HOST.sandbox and back["gpu_verification"]["host"] == "builder-7"
    review = back[review_page.SECTION]
    assert review["verdict"]["outcome"] == "PASS", review["verdict"]
    assert sorted(g["nodeid"] for g in review["gates"]) == sorted([BUILD_GATE, PROV_OK, PROV_BAD])
    prov = review["provenance"]
    assert (prov["host"], prov["c++"], prov["cmake"], prov["branch"]) == ("builder-7", "GNU 12.2.0", "3.25.1", "v2.x")
    assert prov["source"] == str(tmp_path / "mxnet") and prov["sample"] is False
    assert review["configure_notes"] == ["OpenCV found at /usr"]
    assert review["warnings"] == ["3rdparty/dmlc-core is at another commit than pinned"]
    assert [s["name"] for s in review["timeline"]["steps"]] == ["configure", "compile", "package"]
    # no provenance or GPU gate reported: no document
    quiet = replace(rec, entries={BUILD_GATE: rec.entries[BUILD_GATE]})
    assert not wants_document(quiet) and report_document(quiet) is None


def test_the_page_of_a_failing_gate_says_fail_and_the_wheel_is_set_aside(tmp_path):
    rec = _record(tmp_path, bad=True)
    placement = place_built_wheel(rec)
    assert placement is not None and not placement.failed
    rejected = tmp_path / "mxnet" / "dist" / "rejected" / "mxnet-2.0.0-py3-none-any.whl.FAILED-GATES"
    assert placement.placed == str(rejected) and rejected.is_file()
    assert sha256_of(rejected) == rec.pin.sha256
    assert not (tmp_path / "mxnet" / "dist" / "mxnet-2.0.0-py3-none-any.whl").exists()
    assert placement.lines[-1] == f"wheel NOT copied to dist/: 1 build/provenance gate(s) failed; kept aside as {rejected}"

    rec = replace(rec, placed_wheel=placement.placed)
    page = page_of(rec, report_document(rec))
    assert page is not None
    assert page.dests == (tmp_path / "build" / "harness-logs" / "review.html", tmp_path / "report.html")
    assert list(write_pages(page)) == [f"review page: {d}" for d in page.dests]
    html = page.dests[0].read_text().replace("<wbr>", "")  # the page breaks long ids with <wbr>
    verdict = html[html.index('id="verdict"'):]
    assert "FAIL" in verdict[:2000] and "PASS" not in verdict[:300]
    assert PROV_BAD.split("::")[1] in html and "carries DWARF" in html
    assert str(rejected) in html  # where the wheel now lies
    assert page.doc[review_page.SECTION]["written"] == [str(d) for d in page.dests] + [
        str(tmp_path / "build" / "harness-logs" / "configure.log")]  # no JSON was written, no compile.log exists
    # the summary's provenance report names the failure
    lines = provenance_lines(rec)
    assert lines[:3] == ["", "Provenance report:", "  wheel: mxnet-2.0.0-py3-none-any.whl (profile cpu)"]
    assert lines[-1] == "  provenance verdict: 1 failed, 1 passed", lines


def test_a_wheel_every_gate_passed_goes_to_dist_byte_for_byte(tmp_path):
    rec = _record(tmp_path)
    placement = place_built_wheel(rec)
    dest = tmp_path / "mxnet" / "dist" / "mxnet-2.0.0-py3-none-any.whl"
    assert placement is not None and placement.placed == str(dest) and not placement.failed
    assert sha256_of(dest) == rec.pin.sha256
    assert placement.lines[-1] == f"wheel passed 2 provenance gate(s): {dest}"
    assert not (dest.parent / "rejected").exists()
    # the chain's summary lines, from the typed products
    assert placement.lines[0] == f"build chain: MXNet tree {tmp_path / 'mxnet'} (commit {'c0ffee' * 6 + 'abcd'})"
    assert placement.lines[1] == "WARNING: 3rdparty/dmlc-core is at another commit than pinned"
    assert placement.lines[2] == "build chain steps: configure 4.8s, compile 3600.0s (1300 steps), package 16.7s"
    assert "reproducible: SOURCE_DATE_EPOCH from the commit" in placement.lines


def test_a_wheel_no_gate_could_judge_stays_and_a_swapped_one_is_refused(tmp_path):
    rec = _record(tmp_path)
    entries = {**rec.entries, "tests/test_cublas.py::test_floor": Entry(verdict="not judged", why="no driver",
                                                                         markers=("gpu", "release"), when="call")}
    placement = place_built_wheel(replace(rec, entries=entries))
    assert placement is not None and placement.placed is None
    assert "wheel NOT judged (1 gate(s) could not run)" in placement.lines[-1]
    assert not (tmp_path / "mxnet" / "dist").exists()
    # the pinned copy changed after the gates: nothing goes to dist/, and the row fails
    pinned = Path(rec.pin.path)
    pinned.chmod(0o644)
    pinned.write_bytes(b"not the bytes the gates judged")
    placement = place_built_wheel(rec)
    assert placement is not None and placement.failed and placement.placed is None
    assert placement.lines[-1].startswith("wheel NOT placed in dist/: ")
    assert not (tmp_path / "mxnet" / "dist" / "mxnet-2.0.0-py3-none-any.whl").exists()


def test_an_audit_has_no_chain_and_a_failed_step_has_no_wheel(tmp_path):
    rec = _record(tmp_path)
    assert place_built_wheel(replace(rec, chain=ChainProducts())) is None
    stopped = replace(rec.chain, compile=None, wheel=None,
                      ended={"compile": StepEnd(interrupted=True, error="[compile] interrupted by signal 2; ...")})
    placement = place_built_wheel(replace(rec, chain=stopped))
    assert placement is not None and placement.placed is None
    assert placement.lines[-1].startswith("build chain steps: configure 4.8s, compile INTERRUPTED")
    assert chain_lines(stopped) == list(placement.lines)


def test_the_chain_products_are_the_records_read_back_typed(tmp_path):
    """ChainProducts.from_records is each step's from_json; records() gives the same records back,
    so build_steps.build_chain' summary functions read the same as from the run-once files."""
    chain = _chain(tmp_path, _wheel(tmp_path / "w"), tmp_path / "dist")
    shared = tmp_path / "shared"
    shared.mkdir()
    for key, rec in chain.records().items():
        run_once(shared, key, lambda rec=rec: rec["result"])
    from build_steps.build_chain import chain_records
    back = ChainProducts.from_records(chain_records(shared))
    assert back == chain
    assert isinstance(back.configure, ConfigureResult) and back.configure.log == tmp_path / "build" / "harness-logs" / "configure.log"
    assert back.wheel.dist == tmp_path / "dist" and back.compile.reproducible.startswith("reproducible")
    assert step_times(back.records()) == ["configure 4.8s", "compile 3600.0s (1300 steps)", "package 16.7s"]
    assert step_seconds(back.records()) == {"configure": 4.8, "compile": 3600.0, "built_wheel": 16.7}


def test_the_driver_stub_note_is_read_from_its_record(tmp_path):
    run_once(tmp_path, "driver-stub", lambda: {"stub": str(tmp_path / "libcuda.so.1"), "why": "no libcuda.so.1"})
    why = _driver_stub(tmp_path)
    assert why == "no libcuda.so.1"
    rec = replace(_record(tmp_path / "r"), driver_stub=why)
    assert driver_stub_lines(rec)[1].startswith("driver stub: this host has no NVIDIA driver (no libcuda.so.1)")
    assert driver_stub_lines(replace(rec, driver_stub=None)) == []
    other = tmp_path / "other"
    other.mkdir()
    run_once(other, "driver-stub", lambda: {"stub": None})
    assert _driver_stub(other) is None


@pytest.mark.parametrize("usage_error", [True, False])
def test_no_page_without_a_document_or_after_a_usage_error(tmp_path, usage_error):
    rec = _record(tmp_path)
    doc = report_document(rec)
    if usage_error:
        assert page_of(replace(rec, exitstatus=pytest.ExitCode.USAGE_ERROR), doc) is None
    else:
        assert page_of(rec, None) is None
    assert not (tmp_path / "build" / "harness-logs" / "review.html").exists()
