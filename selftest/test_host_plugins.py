"""Issue 40, defect 1: the harness runs on a Python that has other pytest plugins installed.

The H100 host's Python (/opt/torch/.venv) carries pytest_mock, pytest-benchmark, hypothesis, anyio,
jaxtyping and pytest-cov, each with a ``pytest11`` entry point that pytest loads by default. The
plugin guard refused all of them, so the release run could not start without eight ``-p no:NAME``.
The harness's ini now turns entry-point autoloading off and loads its declared plugins (pytest-xdist,
pytest-timeout, pytester) by name: an installed plugin takes no part unless someone loads it, and one
that someone loads (``-p``, ``PYTEST_PLUGINS``) is still refused by name.

The plugins are the real distributions from PyPI, installed into a target directory that goes on
PYTHONPATH (importlib.metadata finds their entry points there, as in a site-packages).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from selftest.conftest import HARNESS_ROOT

SCRIPT = Path(sys.executable).parent / "mxnet-release"
#: what the H100 host's Python had (pytest11 entry points), with what each needs beside pytest
HOST_PLUGINS = ("pytest-mock", "pytest-benchmark", "py-cpuinfo", "hypothesis", "attrs", "sortedcontainers",
                "anyio", "sniffio", "idna", "typing_extensions", "jaxtyping", "wadler-lindig",
                "pytest-cov", "coverage")
#: the modules their entry points name, as --trace-config lists them when pytest loads them
PLUGIN_MODULES = ("pytest_mock", "pytest_benchmark.plugin", "_hypothesis_pytestplugin", "anyio.pytest_plugin",
                  "jaxtyping._pytest_plugin", "pytest_cov.plugin")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def host_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("host-plugins") / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                           *HOST_PLUGINS], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"pip could not install the host's plugins: {proc.stderr[-1500:]}")
    return site


def _run(cmd, cwd: Path, site: Path, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(site), **env}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=600, env=full)


def test_the_plugins_are_real_and_autoload_outside_the_harness(host_site, tmp_path):
    # Plain pytest in a directory of its own (no harness ini) loads every one of them: the fixture is
    # the host's situation, not an inert directory.
    proc = _run([sys.executable, "-m", "pytest", "--co", "-q", "--trace-config", "-p", "no:cacheprovider"],
                tmp_path, host_site)
    loaded = proc.stdout
    missing = [m for m in PLUGIN_MODULES if f"<module '{m}' from '{host_site}" not in loaded]
    assert not missing, f"not autoloaded by plain pytest: {missing}\n{loaded[-3000:]}"


@pytest.mark.parametrize("entry", ["mxnet-release", "python -m pytest"])
def test_a_release_run_starts_on_a_python_with_other_plugins(entry, host_site, selftest_wheels, tmp_path):
    wheel = selftest_wheels["good_cuda"]
    cmd = ([SCRIPT] if entry == "mxnet-release" else
           [sys.executable, "-m", "pytest", "-c", HARNESS_ROOT / "pytest.ini", "--rootdir", HARNESS_ROOT,
            HARNESS_ROOT / "tests"])
    proc = _run([*cmd, "-p", "no:cacheprovider", "--co", "-q", "-m", "release and provenance",
                 f"--wheel={wheel}"], tmp_path, host_site)
    out = proc.stdout + proc.stderr
    assert "plugin(s) that are not the harness's" not in out, out[-3000:]
    assert proc.returncode == 0, out[-3000:]
    assert "tests collected" in proc.stdout or "selected" in proc.stdout, out[-3000:]


def test_a_plugin_someone_loads_is_still_refused(host_site, selftest_wheels, tmp_path):
    wheel = selftest_wheels["good_cuda"]
    for how in (["-p", "pytest_mock"], []):
        env = {} if how else {"PYTEST_PLUGINS": "pytest_mock.plugin"}
        proc = _run([SCRIPT, "-p", "no:cacheprovider", "--co", "-q", "-m", "release and provenance",
                     f"--wheel={wheel}", *how], tmp_path, host_site, **env)
        assert proc.returncode == 4, (how, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "release run refused: 1 plugin(s) that are not the harness's" in proc.stderr, proc.stderr[-2000:]
        assert "pytest_mock" in proc.stderr
