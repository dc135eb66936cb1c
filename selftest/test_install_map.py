"""The install model (build_steps.readers.install_map) against real pip, the ownership data
against real dependency wheels from PyPI, the start-up allowance, and the local-vs-central header
check of the wheel reader.

The cross-check wheel is a real setuptools wheel (``python -m build``: a package, a script, a
header, data files), with members added under ``.data/purelib`` and ``.data/platlib`` and RECORD
recomputed, so every scheme pip knows is exercised; it is installed with ``pip install --target``
and into a real venv, and every file must be where the map says, with the same bytes.
"""
from __future__ import annotations

import csv
import dataclasses
import email.parser
import io
import struct
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from build_steps.profile_data import PROFILES, dependency_top_level
from build_steps.readers.install_map import SCHEMES, build_install_map, prefix_layout, target_layout
from build_steps.readers.install_rules import collect_install_facts
from build_steps.readers.wheel import HeaderMismatch, check_archive
from selftest.conftest import HARNESS_CACHE
from selftest.fixtures_wheels import _record_hash, read_wheel

#: What pip writes beside the wheel's files (not in the wheel, so not in the map).
PIP_OWN = ("INSTALLER", "REQUESTED", "direct_url.json")

SETUP_PY = '''
from setuptools import setup
setup(name="mapdemo", version="1.0", packages=["mapdemo"], scripts=["bin/mapdemo-tool"],
      headers=["include/mapdemo.h"], data_files=[("share/mapdemo", ["data/table.txt"])])
'''


def _wheel_info(path: Path):
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
        return zf.namelist(), email.parser.Parser().parsestr(zf.read(name).decode())


@pytest.fixture(scope="module")
def scheme_wheel(tmp_path_factory) -> Path:
    """A setuptools wheel with a member in every scheme (purelib/platlib added under .data)."""
    work = tmp_path_factory.mktemp("mapdemo")
    (work / "mapdemo").mkdir()
    (work / "mapdemo" / "__init__.py").write_text("VALUE = 1\n")
    (work / "bin").mkdir()
    (work / "bin" / "mapdemo-tool").write_text("#!/bin/sh\necho mapdemo\n")
    (work / "include").mkdir()
    (work / "include" / "mapdemo.h").write_text("int mapdemo(void);\n")
    (work / "data").mkdir()
    (work / "data" / "table.txt").write_text("1 2 3\n")
    (work / "setup.py").write_text(SETUP_PY)
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", work / "dist", work],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    built = next((work / "dist").glob("mapdemo-1.0-*.whl"))
    files = read_wheel(built)
    assert any("/scripts/" in m for m in files) and any("/headers/" in m for m in files) \
        and any("/data/share/" in m for m in files), sorted(files)
    files["mapdemo-1.0.data/purelib/mapdemo_pure/__init__.py"] = b"PURE = 1\n"
    files["mapdemo-1.0.data/platlib/mapdemo_plat.py"] = b"PLAT = 1\n"
    out = work / "final" / built.name
    return _rewrite(built, out, files)


def _rewrite(built: Path, out: Path, files: dict) -> Path:
    """``files`` as a wheel named like ``built``, RECORD recomputed (fixtures_wheels' hashing)."""
    dist_info = next(m.split("/", 1)[0] for m in files if m.endswith(".dist-info/WHEEL"))
    rows = [(m, _record_hash(b), str(len(b))) for m, b in files.items()] + [(f"{dist_info}/RECORD", "", "")]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for m, b in files.items():
            zf.writestr(m, b)
        zf.writestr(f"{dist_info}/RECORD", buf.getvalue())
    return out


def _installed_files(root: Path) -> set:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.name not in PIP_OWN}


def _expected(wheel: Path, layout: dict, base: Path) -> dict:
    members, info = _wheel_info(wheel)
    imap = build_install_map(members, info)
    assert imap.refused == []
    return {imap.destination(m, layout).relative_to(base).as_posix(): m for m in imap.placements}


def _compare(wheel: Path, expected: dict, base: Path):
    got = _installed_files(base)
    assert got == set(expected), (sorted(got - set(expected)), sorted(set(expected) - got))
    with zipfile.ZipFile(wheel) as zf:
        for dest, member in expected.items():
            if not member.endswith(".dist-info/RECORD"):  # pip rewrites RECORD with its own rows
                assert (base / dest).read_bytes() == zf.read(member), dest


def test_map_matches_pip_install_target(scheme_wheel, tmp_path):
    target = tmp_path / "target"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile",
                           "--target", target, scheme_wheel], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = _expected(scheme_wheel, target_layout(target, "mapdemo"), target)
    schemes = {build_install_map(*_wheel_info(scheme_wheel)).placements[m].scheme for m in expected.values()}
    assert schemes == set(SCHEMES), schemes   # every scheme was exercised
    _compare(scheme_wheel, expected, target)


def test_map_matches_pip_install_into_a_venv(scheme_wheel, tmp_path):
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    before = _installed_files(env)
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", env / "bin" / "python", "install", "--no-deps",
                           "--no-index", "--no-compile", scheme_wheel], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = _expected(scheme_wheel, prefix_layout(env, "mapdemo"), env)
    got = _installed_files(env) - before
    assert got == set(expected), (sorted(got - set(expected)), sorted(set(expected) - got))


def test_map_of_a_release_shaped_wheel_matches_pip(selftest_wheels, tmp_path):
    # The good CPU selftest wheel (libmxnet.so, the bundled OpenCV closure, SONAME copies).
    wheel = Path(selftest_wheels["good_cpu"])
    target = tmp_path / "target"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile",
                           "--target", target, wheel], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = _expected(wheel, target_layout(target, "mxnet"), target)
    assert "mxnet/libmxnet.so" in expected
    _compare(wheel, expected, target)


# ---------------------------------------------------------------------------------------------
# dependency top-level names, from the real wheels on the package index

REAL_DEPENDENCIES = ("numpy", "onnx")


@pytest.fixture(scope="module")
def dependency_wheels() -> dict:
    """The profile's numpy and onnx requirements, downloaded once (pip download --no-deps) into the
    harness cache, as the wheels pip would install for this interpreter."""
    specs = {canonicalize_name(Requirement(s).name): s for s in PROFILES["cuda"].hard_requirements}
    dest = HARNESS_CACHE / "dependency-wheels"
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    with FileLock(str(dest) + ".lock"):
        for name in REAL_DEPENDENCIES:
            have = sorted(dest.glob(f"{name}-*.whl"))
            have = [w for w in have if Requirement(specs[name]).specifier.contains(w.name.split("-")[1])]
            if not have:
                proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                       "-d", dest, specs[name]], capture_output=True, text=True)
                assert proc.returncode == 0, f"pip download {specs[name]} failed (network?):\n{proc.stderr[-2000:]}"
                have = [w for w in sorted(dest.glob(f"{name}-*.whl"))
                        if Requirement(specs[name]).specifier.contains(w.name.split("-")[1])]
            out[name] = have[-1]
    return out


@pytest.mark.parametrize("name", REAL_DEPENDENCIES)
def test_dependency_top_level_names_match_the_real_wheel(dependency_wheels, name):
    members, info = _wheel_info(dependency_wheels[name])
    real = set(build_install_map(members, info).top_level())
    assert real == set(dependency_top_level(name)), (name, dependency_wheels[name].name, sorted(real))


def test_wheel_shipping_a_real_dependency_package_fails_ownership(dependency_wheels, tmp_path):
    # onnx's own __init__.py, from its wheel, at the top level of an mxnet wheel that requires onnx.
    with zipfile.ZipFile(dependency_wheels["onnx"]) as zf:
        init = zf.read("onnx/__init__.py")
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "__init__.py").write_bytes(init)
    facts = collect_install_facts(tmp_path, ["mxnet/__init__.py", "onnx/__init__.py"], None, ["py3-none-any"],
                                  ["onnx>=1.7.0,<1.22; extra == 'onnx'"], PROFILES["cpu"])
    assert facts.top_level == ["mxnet", "onnx"]
    assert [p.split(" ", 1)[0] for p in facts.ownership_problems] == ["onnx/"], facts.ownership_problems
    assert "belongs to onnx" in facts.ownership_problems[0]


# ---------------------------------------------------------------------------------------------
# start-up files: refused, unless the profile lists one with a reason

def test_startup_file_allowed_by_profile(tmp_path):
    (tmp_path / "mxnet-hook.pth").write_text("import mxnet_hook\n")
    (tmp_path / "mxnet-2.data" / "data" / "share").mkdir(parents=True)
    (tmp_path / "mxnet-2.data" / "data" / "share" / "usercustomize.py").write_text("print('hi')\n")
    members = ["mxnet-hook.pth", "mxnet-2.data/data/share/usercustomize.py"]
    plain = collect_install_facts(tmp_path, members, None, [], [], PROFILES["cpu"])
    assert [(s["installed"], s["first_line"], s["allowed"]) for s in plain.startup] == [
        ("<data>/share/usercustomize.py", "print('hi')", ""), ("mxnet-hook.pth", "import mxnet_hook", "")]
    profile = dataclasses.replace(PROFILES["cpu"], startup_allowed={"mxnet-hook.pth": "registers the plugin"})
    allowed = collect_install_facts(tmp_path, members, None, [], [], profile)
    assert {s["installed"]: s["allowed"] for s in allowed.startup} == {
        "mxnet-hook.pth": "registers the plugin", "<data>/share/usercustomize.py": ""}


# ---------------------------------------------------------------------------------------------
# both readers agree: every local header field against the central directory

def _small_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mxnet/__init__.py", b"x = 1\n" * 50)
        zf.writestr("mxnet/lib/data.bin", b"\x00" * 100)
    return path


@pytest.mark.parametrize("offset, fmt, value, words", [
    (8, "<H", 0, "compression method 0 in the local header, 8 in the central directory"),
    (14, "<I", 0x12345678, "CRC-32 12345678 in the local header"),
    (18, "<I", 7, "sizes 7 stored / "),
    (22, "<I", 7, "/ 7 inflated in the local header"),
    (30, None, b"mxnet/__init__.pz", "the local header names it 'mxnet/__init__.pz', the central directory "
                                      "'mxnet/__init__.py'"),
])
def test_local_header_must_match_central_directory(tmp_path, offset, fmt, value, words):
    path = _small_zip(tmp_path / "w.whl")
    check_archive(path)  # as written: they agree
    data = bytearray(path.read_bytes())
    if fmt is None:
        data[offset:offset + len(value)] = value
    else:
        struct.pack_into(fmt, data, offset, value)
    path.write_bytes(bytes(data))
    with pytest.raises(HeaderMismatch) as err:
        check_archive(path)
    assert "member 'mxnet/__init__.py'" in str(err.value) and words in str(err.value), str(err.value)


def test_data_scheme_file_in_a_site_packages_path_is_a_layout_problem(tmp_path):
    # On the import path in a venv (prefix/lib/python3.11/site-packages), nowhere with --target,
    # and invisible to every site-packages rule: refused.
    members = ["mxnet/__init__.py", "mxnet-2.data/data/lib/python3.11/site-packages/mxnet_extra.py"]
    facts = collect_install_facts(tmp_path, members, None, [], [], PROFILES["cpu"])
    assert len(facts.layout_problems) == 1 and facts.layout_problems[0].startswith(
        "mxnet-2.data/data/lib/python3.11/site-packages/mxnet_extra.py: lands in <data>/lib/python3.11/"
        "site-packages/mxnet_extra.py, a site-packages directory"), facts.layout_problems
    assert facts.top_level == ["mxnet"]
