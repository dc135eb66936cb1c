"""The venv step and the cuBLAS verdict on their own: a real venv, real child processes."""
import json
import os
import textwrap

import pytest

from build_steps.cuda_stack import cublas_probe_args
from build_steps.profile_data import PROFILES
from build_steps.venv import check_install, create_venv, explain_probe, run_probe
from harness.plugins.runtime import load_probe

cublas_probe = load_probe("cublas_probe")
#: the release CUDA profile's stack, as the harness gives it to the probe
STACK = cublas_probe.parse_stack(cublas_probe_args(PROFILES["cuda"]))


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    return create_venv(tmp_path_factory.mktemp("v") / "venv")


def _probe(tmp_path, body):
    p = tmp_path / "probe_x.py"
    p.write_text(textwrap.dedent(body))
    return p


def test_probe_crash_becomes_a_result(bare_venv, tmp_path):
    probe = _probe(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    r = run_probe(bare_venv, probe, timeout=60)
    assert r["crashed"] and r["signal"] == "SIGSEGV" and not r["ok"]
    assert "killed by SIGSEGV" in explain_probe(r)


def test_probe_timeout_becomes_a_result(bare_venv, tmp_path):
    probe = _probe(tmp_path, "import time\ntime.sleep(30)\n")
    r = run_probe(bare_venv, probe, timeout=1)
    assert r["timed_out"] and "did not finish within 1" in explain_probe(r)


def test_probe_runs_in_venv_with_loader_variables_cleared(bare_venv, tmp_path, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", "/somewhere/build")
    monkeypatch.setenv("MXNET_LIBRARY_PATH", "/somewhere/build/libmxnet.so")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/python")
    probe = _probe(tmp_path, """
        import json, os, sys
        print(json.dumps({"ok": True, "prefix": sys.prefix,
                          "leaks": [k for k in ("LD_LIBRARY_PATH", "MXNET_LIBRARY_PATH", "PYTHONPATH") if k in os.environ]}))
    """)
    r = run_probe(bare_venv, probe, timeout=60)
    assert r["ok"] and r["leaks"] == []
    assert os.path.realpath(r["prefix"]) == os.path.realpath(bare_venv.root)


def test_check_install_without_mxnet_names_the_problem(bare_venv):
    facts = check_install(bare_venv, "1.9.1")
    text = " ".join(facts["problems"])
    assert "`import mxnet` finds nothing" in text and "installed mxnet is None, expected 1.9.1" in text


def test_venv_dir_that_is_not_a_venv_is_refused(tmp_path):
    from build_steps.errors import UsageError
    d = tmp_path / "precious"
    d.mkdir()
    (d / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="is not a venv"):
        create_venv(d)
    assert (d / "notes.txt").exists()


@pytest.mark.parametrize("version, full, driver, trap", [
    ((13, 5, 1), None, 580, "r580-cublas-13.2-not-initialized"),
    ((13, 2, 0), "13.2.0.9", 580, "r580-cublas-13.2-not-initialized"),
    ((13, 1, 1), "13.1.1.3", 590, "cublas-13.1.1.3-syrk-crash"),
    ((13, 5, 1), None, 575, "driver-too-old"),
])
def test_verdict_names_the_trap(version, full, driver, trap):
    v = cublas_probe.verdict(version, full, driver, STACK)
    assert v["status"] == "trap" and trap in [t["id"] for t in v["traps"]]


def test_verdict_ok_and_risk():
    assert cublas_probe.verdict((13, 5, 1), None, 590, STACK)["status"] == "ok"
    assert cublas_probe.verdict((13, 1, 0), "13.1.0.3", 580, STACK)["status"] == "risk"


def test_diagnose_maps_failures_to_traps():
    pre = {"full_version": "13.1.1.3", "driver": {"driver_major": 580}, "stack": STACK,
           "verdict": cublas_probe.verdict((13, 1, 1), "13.1.1.3", 580, STACK)}
    crash = cublas_probe.diagnose(pre, {"kind": "syrk", "n": 256, "crashed": True, "signal": "SIGSEGV"})
    assert "cuBLAS >= 13.5" in crash
    pre2 = {"version": "13.5.1", "driver": {"driver_major": 580}, "stack": STACK,
            "verdict": cublas_probe.verdict((13, 5, 1), None, 580, STACK)}
    noinit = cublas_probe.diagnose(pre2, {"kind": "gemm", "n": 1024, "ok": False,
                                          "error": "MXNetError: ... CUBLAS_STATUS_NOT_INITIALIZED"})
    assert "R590+" in noinit


def test_preflight_without_driver_reports_instead_of_raising(tmp_path):
    res = cublas_probe.preflight(search_dirs=[str(tmp_path)], stack=STACK)
    json.dumps(res)
    assert res["verdict"]["status"] in ("unknown", "risk", "ok", "trap")


def test_offline_uv_falls_back_to_the_interpreters_venv(tmp_path, monkeypatch):
    """On the GPU host (no network) ``uv venv --seed`` cannot fetch pip: the venv is made by the
    interpreter's own venv module instead (real uv, offline, with an empty cache)."""
    import shutil
    import sys
    from pathlib import Path
    uv_dir = Path(sys.executable).parent
    assert (uv_dir / "uv").is_file(), "uv is a selftest dependency (pyproject.toml [selftest])"
    monkeypatch.setenv("PATH", f"{uv_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-uv-cache"))
    assert shutil.which("uv") == str(uv_dir / "uv")
    log = tmp_path / "create.log"
    venv = create_venv(tmp_path / "v", sys.executable, log=log)
    text = log.read_text()
    assert "Failed to install seed packages" in text and "falling back to python -m venv" in text, text
    assert venv.python.is_file() and (tmp_path / "v" / "pyvenv.cfg").is_file()


def test_no_index_installs_from_the_wheelhouse_alone(bare_venv, tmp_path):
    """--no-index --find-links=DIR: the wheel's dependency comes from DIR, the index is never asked."""
    from build_steps.venv import install, installed_distributions
    from selftest.fixtures_readers import minimal_files, write_wheel
    house = tmp_path / "wheelhouse"
    dep_files = {"harnessdep/__init__.py": b"",
                 "harnessdep-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: harnessdep\nVersion: 1.0\n\n",
                 "harnessdep-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: selftest\n"
                                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    write_wheel(house / "harnessdep-1.0-py3-none-any.whl", dep_files)
    files = minimal_files("harnesspkg", "1.0", requires=("harnessdep==1.0",))
    files["harnesspkg-1.0.dist-info/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: selftest\n"
                                               b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    wheel = write_wheel(tmp_path / "harnesspkg-1.0-py3-none-any.whl", files)
    log = tmp_path / "install.log"
    install(bare_venv, wheel, find_links=(house,), no_index=True, log=log)
    assert installed_distributions(bare_venv).get("harnessdep") == "1.0"
    assert "--no-index" in log.read_text()


def _dep_wheel(house, version):
    from selftest.fixtures_readers import write_wheel
    return write_wheel(house / f"harnessdep-{version}-py3-none-any.whl", {
        "harnessdep/__init__.py": b"",
        "harnessdep-%s.dist-info/METADATA" % version.encode(): b"Metadata-Version: 2.1\nName: harnessdep\nVersion: "
                                                                + version.encode() + b"\n\n",
        "harnessdep-%s.dist-info/WHEEL" % version.encode(): b"Wheel-Version: 1.0\nGenerator: selftest\n"
                                                             b"Root-Is-Purelib: true\nTag: py3-none-any\n"})


@pytest.mark.parametrize("setting", ["PIP_CONSTRAINT", "pip.conf", "PIP_INDEX_URL", "uv:UV_CONSTRAINT", "uv:uv.toml"])
def test_the_invokers_pip_settings_do_not_change_what_the_venv_gets(tmp_path, monkeypatch, setting):
    """Issue 42, item 2: the venv gets what the run's own index options give a user (here the
    newest harnessdep of the --find-links wheelhouse, 2.0), whatever the invoker's pip
    configuration says: a PIP_CONSTRAINT pinning 1.0, a pip.conf adding a wheelhouse with 3.0,
    a PIP_INDEX_URL of a closed port (with --find-links and no --no-index: pip would ask it); and
    for uv, which installs when it is on PATH, a UV_CONSTRAINT and a uv.toml (UV_CONFIG_FILE)."""
    import sys
    from pathlib import Path
    from build_steps.venv import install, installed_distributions
    from selftest.fixtures_readers import minimal_files, write_wheel
    house, rogue = tmp_path / "wheelhouse", tmp_path / "rogue"
    for version in ("1.0", "2.0"):
        _dep_wheel(house, version)
    _dep_wheel(rogue, "3.0")
    # the rogue files lie in the wheelhouse the install reads, so the sandbox does not hide them
    # (pip's --find-links does not descend into house/rogue)
    (house / "constraints.txt").write_text("harnessdep==1.0\n")
    (house / "pip.conf").write_text(f"[global]\nfind-links = {house / 'rogue'}\n")
    rogue.rename(house / "rogue")
    (house / "uv.toml").write_text(f'[pip]\nfind-links = ["{house / "rogue"}"]\n')
    for key in [k for k in os.environ if k.startswith(("PIP_", "UV_"))]:
        monkeypatch.delenv(key)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not (p and os.path.isfile(os.path.join(p, "uv")))]
    if setting.startswith("uv:"):  # the harness installs with uv when it is on PATH
        assert (Path(sys.executable).parent / "uv").is_file(), "uv is a selftest dependency"
        path.insert(0, str(Path(sys.executable).parent))
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    if setting == "uv:UV_CONSTRAINT":
        monkeypatch.setenv("UV_CONSTRAINT", str(house / "constraints.txt"))
    elif setting == "uv:uv.toml":
        monkeypatch.setenv("UV_CONFIG_FILE", str(house / "uv.toml"))
    elif setting == "PIP_CONSTRAINT":
        monkeypatch.setenv("PIP_CONSTRAINT", str(house / "constraints.txt"))
    elif setting == "pip.conf":
        monkeypatch.setenv("PIP_CONFIG_FILE", str(house / "pip.conf"))
    else:
        monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/")
        monkeypatch.setenv("PIP_RETRIES", "0")
    files = minimal_files("harnesspkg", "1.0", requires=("harnessdep",))
    files["harnesspkg-1.0.dist-info/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: selftest\n"
                                               b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    wheel = write_wheel(tmp_path / "harnesspkg-1.0-py3-none-any.whl", files)
    venv = create_venv(tmp_path / "venv", sys.executable)
    log = tmp_path / "install.log"
    install(venv, wheel, find_links=(house,), no_index=setting != "PIP_INDEX_URL",
            index_url=None, log=log)
    text = log.read_text()
    assert installed_distributions(venv).get("harnessdep") == "2.0", text[-2000:]
    assert "127.0.0.1:9" not in text, text[-2000:]


def test_the_acceptance_suites_requirements_from_an_unreachable_index_are_not_judged(bare_venv, tmp_path, monkeypatch):
    """Issue 42, item 4: the acceptance suite's own test requirements, against an index the host
    cannot reach (a closed local port), are the host's fault (NotJudged), named with the fix."""
    from build_steps.acceptance.venv import install_test_requirements
    from build_steps.errors import NotJudged
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                if not (p and os.path.isfile(os.path.join(p, "uv")))))
    with pytest.raises(NotJudged) as caught:
        install_test_requirements(bare_venv, ["harness-selftest-absent-dist"], index_url="http://127.0.0.1:9/",
                                  log=tmp_path / "acceptance.log")
    first = str(caught.value).splitlines()[0]
    assert "could not reach the package index http://127.0.0.1:9/" in first and "--index-url" in first, first
