"""Install gate: the wheel installs into a throwaway venv with its declared dependencies, and
`mxnet` and libmxnet.so resolve inside that venv (checked in the venv's own interpreter with
LD_LIBRARY_PATH cleared). Loading libmxnet is left to the runtime gates: a CUDA wheel cannot
load on a build host without a driver.
"""
import pytest

pytestmark = [pytest.mark.release, pytest.mark.build]


def _problems(report, *words):
    return [p for p in report["problems"] if any(w in p for w in words)]


def test_mxnet_resolves_inside_venv(install_report):
    bad = _problems(install_report, "import mxnet", "outside the venv")
    assert not bad, "; ".join(bad)


def test_libmxnet_installed_in_venv(install_report):
    bad = _problems(install_report, "libmxnet.so is not")
    assert not bad, "; ".join(bad)
    assert install_report["libmxnet"], "no libmxnet.so in the installed mxnet package"


def test_installed_version_is_the_wheels(install_report, options, wheel_path):
    bad = _problems(install_report, "installed mxnet is")
    assert not bad, "; ".join(bad)
