"""The throwaway venv with the wheel under test, and the probes that run in its interpreter.

One venv for all xdist workers, made the same way for ``--wheel PATH`` and for the wheel the
build chain made; removed by the last worker at session end unless ``--keep-venv``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from build_steps import venv as venv_step
from build_steps.pinning import verify
from build_steps.profiles import GATE_TEST_REQUIREMENTS

HARNESS_ROOT = Path(__file__).resolve().parent.parent
PROBES_DIR = HARNESS_ROOT / "tests" / "probes"
CUBLAS_PROBE = HARNESS_ROOT / "build_steps" / "cublas_probe.py"
_VENV_KEY = "release-venv"


@pytest.fixture(scope="session")
def release_venv(options, wheel_path, wheel_pin, shared_dir):
    """The venv (in --venv-dir or the run's shared temp dir) with the wheel and its deps installed."""
    root = options.venv_dir or (shared_dir / "release-venv")
    log = shared_dir / "release-venv-install.log"

    def make() -> dict:
        venv = venv_step.create_venv(root, options.build_python or sys.executable, log=log)
        installed = venv_step.install(
            venv, verify(wheel_pin, "the venv install"), find_links=options.find_links, index_url=options.index_url,
            extra_requirements=options.extra_requirements, test_requirements=GATE_TEST_REQUIREMENTS,
            no_deps=options.no_deps, log=log)
        return {**venv.to_dict(), "installed": installed, "log": str(log), "wheel": str(wheel_path)}

    product = venv_step.acquire_shared(shared_dir, _VENV_KEY, make)
    yield venv_step.Venv.from_dict(product)
    cleanup = None if options.keep_venv else (lambda p: venv_step.remove_venv(Path(p["root"])))
    venv_step.release_shared(shared_dir, _VENV_KEY, cleanup)


@pytest.fixture(scope="session")
def install_report(release_venv, options, wheel_path) -> dict:
    """check_install's facts: where mxnet and libmxnet.so resolve in the venv, and the version."""
    return venv_step.check_install(release_venv, venv_step.expected_version(wheel_path, options.package_version))


@pytest.fixture(scope="session")
def venv_probe(release_venv, tmp_path_factory):
    """``venv_probe("probe_x.py", *args, timeout=..)`` runs a probe in the venv, returns its dict."""
    def _probe(name: str, *args, timeout: float = 600, env: dict | None = None) -> dict:
        return venv_step.run_probe(release_venv, PROBES_DIR / name, args, timeout=timeout, env=env,
                                   cwd=tmp_path_factory.mktemp("probe"))
    return _probe


@pytest.fixture(scope="session")
def cuda_preflight(release_venv, tmp_path_factory) -> dict:
    """The ctypes cuBLAS/driver preflight, run in the venv's interpreter before any MXNet import:
    driver and GPUs, the cuBLAS the wheel would load (the venv's pip nvidia/cu13/lib first),
    its version and the verdict on the known traps. Works where MXNet cannot load."""
    return venv_step.run_probe(release_venv, CUBLAS_PROBE,
                               ["preflight", "--search-dir", str(release_venv.site_packages)],
                               timeout=300, cwd=tmp_path_factory.mktemp("preflight"))
