"""Install layout: every member lands where pip will put it, read from the install map
(build_steps.readers.install_map), never from raw member names.

A platform wheel installs into platlib: marked ``Root-Is-Purelib: true`` its libraries go to purelib,
which on Fedora/RHEL and ``--prefix`` installs is ``lib/`` while platlib (where the nvidia-* wheels
its RUNPATH reaches are installed) is ``lib64/``. Members under ``<name>.data/`` go to the scheme
their directory names; pip refuses an unknown scheme, and a data-scheme file placed in a
site-packages path bypasses every site-packages rule.
"""
import pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_platform_wheel_is_platlib(audit):
    problem = audit.install.purelib_problem
    if problem:
        pytest.fail(f"{audit.filename}: {problem}; fix: build the wheel as a platform wheel (setup.py's "
                    "bdist_wheel with has_ext_modules/ a BinaryDistribution, or root_is_pure = False), "
                    "so WHEEL says Root-Is-Purelib: false", pytrace=False)


def test_members_land_in_their_schemes(audit):
    bad = audit.install.layout_problems
    if bad:
        pytest.fail(f"{audit.filename}: {len(bad)} member(s) pip refuses or installs outside their place:\n  "
                    + "\n  ".join(bad[:20]) + "\nfix: put package files in the package, and only "
                    "<name>.data/{purelib,platlib,scripts,headers,data}/<path> under .data", pytrace=False)
