"""The requirements preflight (real-fork defect 7): what the venv installs beside the wheel is
resolved against the run's own index options before anything is built.

On the GPU host a 19-minute compile ended in ``uv pip install ... onnx<1.22`` failing on a
wheelhouse that only held ml-dtypes<0.5 (onnx 1.21 needs >=0.5): knowable in seconds, before
configure. Every run here is a child pytest of the real harness against a committed copy of
selftest/sample_mxnet, with real wheels in a real --find-links dir, resolved by the real pip or uv.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from selftest.conftest import HARNESS_ROOT
from selftest.fixtures_readers import write_wheel

#: the venv of this checkout holds uv (a selftest dependency, pyproject.toml [selftest])
VENV_BIN = Path(sys.executable).parent


def _pure_wheel(house: Path, name: str, version: str, requires=()) -> Path:
    """A real pure-python wheel (METADATA, WHEEL, RECORD) of ``name`` ``version`` in ``house``."""
    dist_info = f"{name}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
            *(f"Requires-Dist: {r}" for r in requires)]
    return write_wheel(house / f"{name}-{version}-py3-none-any.whl", {
        f"{name}/__init__.py": b"",
        f"{dist_info}/METADATA": ("\n".join(meta) + "\n\n").encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: selftest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"})


def _wheelhouse(root: Path, *, b_version: str) -> Path:
    """harnessa 1.0 needs harnessb>=2; harnessb is ``b_version``. An onnxruntime stand-in (a pure
    wheel of that name) answers the gates' own test requirement, so that only A/B can fail."""
    house = root / f"wheelhouse-b{b_version}"
    _pure_wheel(house, "harnessa", "1.0", ("harnessb>=2",))
    _pure_wheel(house, "harnessb", b_version)
    _pure_wheel(house, "onnxruntime", "1.20.0")
    return house


@pytest.fixture(params=["pip", "uv"])
def installer(request, monkeypatch):
    """The installer the harness will find on PATH: pip (no uv on PATH) or uv (this venv's)."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not (Path(p) / "uv").exists()]
    if request.param == "uv":
        assert (VENV_BIN / "uv").is_file(), "uv is a selftest dependency (pyproject.toml [selftest])"
        path.insert(0, str(VENV_BIN))
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    assert (shutil.which("uv") is not None) == (request.param == "uv")
    return request.param


def _out(result) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def _nothing_configured(src: Path) -> bool:
    return (not any(src.glob("build*/CMakeCache.txt"))
            and not any(src.parent.glob(f"{src.name}-build*"))
            and not list(src.parent.glob(f"{src.name}-build*/harness-logs/configure.log")))


def _refusal_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if "cannot be resolved from" in line]


@pytest.mark.parametrize("workers", [None, "2"], ids=["serial", "xdist"])
def test_a_wheelhouse_that_cannot_satisfy_the_requirements_is_refused_before_configure(
        gates, sample_tree, tmp_path, installer, workers):
    src = sample_tree()
    house = _wheelhouse(tmp_path, b_version="1.0")
    start = time.monotonic()
    result = gates("-m", "release", f"--mxnet-src={src}", "--flavor=cpu", "--no-index", f"--find-links={house}",
                   "--no-deps", "--extra-requirement=harnessa", *(("-n", workers) if workers else ()),
                   timeout=900)
    took = time.monotonic() - start
    out = _out(result)
    print(f"refused by {installer} in {took:.1f} s")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-4000:]
    lines = _refusal_lines(out)
    # one line, said once (under xdist too: the controller says it before any worker starts)
    assert len(lines) == 1, out[-4000:]
    line = lines[0]
    assert "harnessa" in line and "harnessb" in line and ">=2" in line, line
    assert f"--find-links={house}" in line and "--no-index" in line, line
    assert "nothing was configured or compiled" in line, line
    assert _nothing_configured(src), sorted(p.name for p in src.parent.iterdir())
    assert "RELEASE" not in out and "[configure]" not in out, out[-3000:]
    assert took < 90, f"the refusal took {took:.0f} s"


def test_a_satisfiable_wheelhouse_goes_on_to_the_build_checks(gates, sample_tree, tmp_path, installer):
    """harnessb 2.0 in the wheelhouse: the preflight passes and the run goes on to the next check
    before configure (a dirty tree, refused there: nothing is built by this selftest)."""
    src = sample_tree()
    (src / "src" / "c_api.cc").write_text((src / "src" / "c_api.cc").read_text() + "\n// local edit\n")
    house = _wheelhouse(tmp_path, b_version="2.0")
    result = gates("-m", "release", f"--mxnet-src={src}", "--flavor=cpu", "--no-index", f"--find-links={house}",
                   "--no-deps", "--extra-requirement=harnessa")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-4000:]
    assert not _refusal_lines(out), out[-4000:]
    assert "uncommitted changes to tracked files (src/c_api.cc)" in out, out[-4000:]
    assert _nothing_configured(src)


def test_an_unreachable_index_is_not_a_refusal(gates, sample_tree, tmp_path):
    """A closed local port as the index: not the user's requirements' fault (build_steps.install_faults).
    The preflight says it could not check, and the run goes on (the install step then files the
    gates not judged, exit 3, as before); here a dirty tree stops it before configure."""
    src = sample_tree()
    (src / "src" / "c_api.cc").write_text((src / "src" / "c_api.cc").read_text() + "\n// local edit\n")
    result = gates("-m", "release", f"--mxnet-src={src}", "--flavor=cpu", "--index-url=http://127.0.0.1:9/",
                   "--extra-requirement=harnessa")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-4000:]
    assert not _refusal_lines(out), out[-4000:]
    assert "requirements not checked before the build" in out and "could not reach the package index" in out, \
        out[-4000:]
    assert "uncommitted changes to tracked files (src/c_api.cc)" in out, out[-4000:]


@pytest.mark.parametrize("markexpr,installs", [
    ("release", True), ("release and not acceptance", True), ("build", True), ("runtime and gpu", True),
    ("acceptance", True), ("", True), ("provenance", False), ("provenance and not release", False),
    ("release and not runtime and not build and not acceptance", False),
])
def test_the_preflight_runs_only_for_a_selection_that_installs_the_venv(markexpr, installs):
    from harness.plugins.runtime import installs_venv
    assert installs_venv(markexpr) is installs


@pytest.mark.parametrize("markexpr,keywords,installs", [
    # the regression: test_development_settings' run deselects the install gates with -k and was
    # refused for a venv it never makes
    ("(release and (build or provenance)) or publish", "not install", False),
    ("(release and (build or provenance)) or publish", "", True),
    ("release", "not install", True),        # the runtime gates still install it
    ("release", "install", True),
    ("release", "opencv or onnx", True),
    ("release", "test_png_rgb_roundtrip", False),   # one gate by name: left to the install step
    ("provenance", "install", False),
])
def test_the_preflight_reads_k_as_pytest_does(markexpr, keywords, installs):
    from harness.plugins.runtime import installs_venv
    assert installs_venv(markexpr, keywords) is installs


#: the fixtures that make or use the venv: a gate module that asks for one must be in the table
_VENV_FIXTURES = re.compile(r"\b(release_venv|venv_probe|install_report|cuda_preflight|driver_stub|acceptance_\w+)\b")


def test_the_venv_gate_table_is_the_gate_modules():
    """harness.plugins.runtime.VENV_GATE_MODULES names every gate module that uses the venv, with the marks
    its pytestmark gives (a new runtime gate module, or a changed mark, would leave a selection
    the preflight thinks installs nothing)."""
    import ast
    from harness.plugins.runtime import VENV_GATE_MODULES
    tests = HARNESS_ROOT / "tests"
    using = {p.name for p in tests.glob("test_*.py") if _VENV_FIXTURES.search(p.read_text())}
    assert using == set(VENV_GATE_MODULES)
    for name, marks in VENV_GATE_MODULES.items():
        tree = ast.parse((tests / name).read_text())
        assign = next(n for n in tree.body if isinstance(n, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets))
        found = {e.attr for e in ast.walk(assign.value) if isinstance(e, ast.Attribute)} - {"mark"}
        assert found == set(marks), name


def test_an_audit_of_a_wheel_is_refused_the_same_way(gates, tmp_path):
    """--wheel (nothing is built): the venv would install the same requirements, so the same
    preflight refuses them before any gate runs, in the same one line and exit 4."""
    from selftest.fixtures_readers import minimal_files
    wheel = write_wheel(tmp_path / "mxnet-2.0.0-cp311-cp311-linux_x86_64.whl", minimal_files(version="2.0.0"))
    house = _wheelhouse(tmp_path, b_version="1.0")
    result = gates("-m", "runtime", f"--wheel={wheel}", "--flavor=cpu", "--no-index", f"--find-links={house}",
                   "--no-deps", "--extra-requirement=harnessa")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-4000:]
    lines = _refusal_lines(out)
    assert len(lines) == 1 and "harnessb" in lines[0], out[-4000:]
    assert "installing the wheel" not in out, out[-3000:]


def test_a_download_that_broke_off_is_the_hosts_fault_not_the_requirements():
    """The CI run of 2026-12-06: TMPDIR on a 2 MB tmpfs, pip's dry run downloaded onnxruntime into it
    and stopped with incomplete-download; the preflight called the requirements unsatisfiable (exit 4)
    where the disk check would have named TMPDIR. pip's own words, from that run:"""
    from build_steps.install_faults import environment_fault
    said = ("error: incomplete-download\n\n× Download failed after 6 attempts because not enough bytes were "
            "received (1.0 MB/27.8 MB)\n╰─> URL: https://files.pythonhosted.org/packages/1d/46/onnxruntime-1.32.0-"
            "cp311-cp311-manylinux_2_28_x86_64.whl\n\nnote: This is an issue with network connectivity, not pip.")
    fault = environment_fault(said)
    assert fault is not None and "broke off" in fault
    assert environment_fault("ERROR: Could not find a version that satisfies the requirement harnessb>=2") is None


def test_a_success_is_reused_for_the_same_inputs_and_nothing_else(tmp_path, monkeypatch, installer):
    """A resolution that succeeded is reused by the next run with the same inputs (the selftests'
    child runs, a rerun after a fix), for REUSE_S: a wheel added to or taken from the wheelhouse, or
    an older record, makes the next run resolve again, and a set that no longer resolves is refused."""
    from build_steps import requirements_preflight as pf
    monkeypatch.setenv("MXNET_HARNESS_CACHE", str(tmp_path / "cache"))
    house = _wheelhouse(tmp_path, b_version="2.0")
    ask = dict(python=sys.executable, find_links=[house], no_index=True)
    first = pf.check(["harnessa", "onnxruntime>=1.20"], **ask)
    assert first.refusal == first.not_checked == "" and first.reused_age is None and "harnessb" in first.resolved
    again = pf.check(["harnessa", "onnxruntime>=1.20"], **ask)
    assert again.refusal == again.not_checked == "" and again.reused_age is not None, again
    assert 0 <= again.reused_age < pf.REUSE_S and again.installer == installer
    # each run's own id, temporary dir and HOME (a selftest's process mark too) are not inputs
    monkeypatch.setenv("MXNET_HARNESS_RUN", "another-run")
    monkeypatch.setenv("HARNESS_FAULT_MARK", "another-test")
    monkeypatch.setenv("HOME", str(tmp_path / "another-home"))
    assert pf.check(["harnessa", "onnxruntime>=1.20"], **ask).reused_age is not None
    # a proxy is: another key
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert pf.check(["harnessa", "onnxruntime>=1.20"], **ask).reused_age is None
    monkeypatch.delenv("HTTPS_PROXY")
    # other requirements: another key
    assert pf.check(["harnessb"], **ask).reused_age is None
    # the wheelhouse changed: harnessb 2.0 replaced by 1.0, harnessa now cannot be satisfied
    (house / "harnessb-2.0-py3-none-any.whl").unlink()
    _pure_wheel(house, "harnessb", "1.0")
    changed = pf.check(["harnessa", "onnxruntime>=1.20"], **ask)
    assert changed.reused_age is None and "harnessb" in changed.refusal, changed
    # and back: resolved afresh, then reused; a record past REUSE_S is not
    (house / "harnessb-1.0-py3-none-any.whl").unlink()
    _pure_wheel(house, "harnessb", "2.0")
    assert pf.check(["harnessa", "onnxruntime>=1.20"], **ask).reused_age is None
    assert pf.check(["harnessa", "onnxruntime>=1.20"], **ask).reused_age is not None
    for record in (tmp_path / "cache" / "requirements-preflight").glob("*.json"):
        record.write_text('{"resolved_at": %f}' % (time.time() - pf.REUSE_S - 1))
    assert pf.check(["harnessa", "onnxruntime>=1.20"], **ask).reused_age is None


def test_a_refusal_is_asked_again_every_time(tmp_path, monkeypatch):
    from build_steps import requirements_preflight as pf
    monkeypatch.setenv("MXNET_HARNESS_CACHE", str(tmp_path / "cache"))
    house = _wheelhouse(tmp_path, b_version="1.0")
    for _ in range(2):
        found = pf.check(["harnessa"], python=sys.executable, find_links=[house], no_index=True)
        assert "harnessb" in found.refusal and found.reused_age is None, found
    assert not list((tmp_path / "cache").rglob("requirements-preflight/*.json"))
