"""Issue 40, defect 5: a bundled library is never shadowed by a copy the process already has loaded.

Two real wheels of one libmxnet.so (gcc, NEEDing the host's OpenCV 4.6, whose closure reaches
OpenSSL and zlib): the bundle step's, grafted (``libcrypto-<hash8>.so.3``), and the same wheel
ungrafted back to the plain SONAMEs, as the bundle step made it before. The audit gate
tests/test_bundle_grafted.py passes the first and fails the second; and in a venv's interpreter
that has the host's libcrypto.so.3 and libz.so.1 loaded first (``ctypes.CDLL``), ``import mxnet``
gets every library of the grafted wheel from the wheel (read from /proc/self/maps by the probes'
own origin check), while the ungrafted one gets the host's libcrypto: the error every runtime gate
of the real fork's wheel failed with.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps.bundle import patch_names
from build_steps.readers.elf import is_elf, read_dynamic
from selftest.conftest import HARNESS_ROOT
from selftest.fixtures_wheels import (OPENCV_DIR, OPENCV_LIBS, VERSION, metadata_text, stage_package,
                                      wheel_name, write_wheel)

GATE = "test_no_commonly_loaded_library_under_its_plain_soname"
GRAFTED = re.compile(r"^(?P<stem>.+)-[0-9a-f]{8}(?P<suffix>\.so.*)$")
#: mxnet/__init__.py of the wheels: loads libmxnet.so as the fork's base.py does (ctypes.CDLL, RTLD_LOCAL)
INIT = '''"""mxnet (selftest): loads its libmxnet.so as the fork's base.py does."""
import ctypes, os
__version__ = "2.0.0"
_LIB = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "libmxnet.so"))
'''


def _ungraft(stage: Path) -> None:
    """The bundle as it was before grafting: every library back under its host SONAME."""
    lib_dir = stage / "mxnet" / "lib"
    back = {}
    for f in sorted(lib_dir.iterdir()):
        m = GRAFTED.match(f.name)
        assert m, f"{f.name} is not grafted"
        back[f.name] = m["stem"] + m["suffix"]
    for grafted, plain in back.items():
        (lib_dir / grafted).rename(lib_dir / plain)
        patch_names(lib_dir / plain, back, soname=plain)
    patch_names(stage / "mxnet" / "libmxnet.so", back)


def _wheel(stage: Path, dest: Path) -> Path:
    files = {p.relative_to(stage).as_posix(): p.read_bytes() for p in sorted(stage.rglob("*")) if p.is_file()}
    files["mxnet/__init__.py"] = INIT.encode()
    files[f"mxnet-{VERSION['cpu']}.dist-info/METADATA"] = metadata_text("cpu", VERSION["cpu"]).encode()
    return write_wheel(dest / wheel_name(VERSION["cpu"]), files, version=VERSION["cpu"])


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("grafted")
    (d / "f.c").write_text("int mxnet_selftest(void) { return 0; }\n")
    lib = d / "libmxnet.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(d / "f.c"), "-Wl,--no-as-needed",
                    *[str(OPENCV_DIR / n) for n in OPENCV_LIBS]], check=True)
    stage_package(d / "stage-grafted", lib, "cpu")
    names = {f.name for f in (d / "stage-grafted" / "mxnet" / "lib").iterdir()}
    assert any(n.startswith("libcrypto-") for n in names) and any(n.startswith("libz-") for n in names), names
    stage_package(d / "stage-plain", lib, "cpu")
    _ungraft(d / "stage-plain")
    plain_names = {f.name for f in (d / "stage-plain" / "mxnet" / "lib").iterdir()}
    assert {"libcrypto.so.3", "libz.so.1"} <= plain_names
    assert all(read_dynamic(d / "stage-plain" / "mxnet" / "lib" / n).soname == n for n in plain_names
               if is_elf(d / "stage-plain" / "mxnet" / "lib" / n))
    return {"grafted": _wheel(d / "stage-grafted", d / "wheels" / "grafted"),
            "plain": _wheel(d / "stage-plain", d / "wheels" / "plain")}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["grafted", "plain"])
def test_the_audit_fails_a_plain_soname_of_a_commonly_loaded_library(gates, wheels, kind):
    r = gates("-m", "provenance", f"--wheel={wheels[kind]}", "--flavor=cpu", "-k", GATE)
    out = r.stdout.str()
    if kind == "grafted":
        assert r.ret == 0, out[-4000:]
        r.assert_outcomes(passed=1)
    else:
        assert r.ret != 0, out[-4000:]
        r.assert_outcomes(failed=1)
        assert "mxnet/lib/libcrypto.so.3 (SONAME libcrypto.so.3): OpenSSL, loaded by Python's _ssl" in out, out[-4000:]
        assert "mxnet/lib/libz.so.1 (SONAME libz.so.1): zlib" in out


#: run by the venv's interpreter: the host's OpenSSL and zlib first, then mxnet, then the probes' check
PRELOADED_IMPORT = '''
import ctypes, json, sys
sys.path.insert(0, sys.argv[1])
ctypes.CDLL("libcrypto.so.3")
ctypes.CDLL("libz.so.1")
import probe_common
import mxnet
report = probe_common.origin_report(mxnet)
maps = [l.split(None, 5)[5].strip() for l in open("/proc/self/maps") if len(l.split(None, 5)) == 6]
report["crypto_mapped"] = sorted({p for p in maps if "libcrypto" in p})
print(json.dumps(report))
'''


@pytest.fixture(scope="module")
def venvs(wheels, tmp_path_factory) -> dict:
    out = {}
    for kind, wheel in wheels.items():
        venv = tmp_path_factory.mktemp(f"venv-{kind}")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / "bin" / "python"
        # the wheel only: pip of this interpreter installs into the venv's site-packages
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--target", site, str(wheel)], check=True)
        out[kind] = python
    return out


@pytest.mark.slow
def test_a_process_that_has_the_hosts_libcrypto_loaded_gets_the_wheels(venvs):
    probes = HARNESS_ROOT / "tests" / "probes"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    reports = {}
    for kind, python in venvs.items():
        proc = subprocess.run([str(python), "-c", PRELOADED_IMPORT, str(probes)], capture_output=True, text=True,
                              env=env, cwd="/")
        assert proc.returncode == 0, proc.stderr
        reports[kind] = json.loads(proc.stdout)
    grafted, plain = reports["grafted"], reports["plain"]
    pkg = grafted["package_dir"]
    assert grafted["ok"], grafted["problems"]
    # both the host's OpenSSL (loaded first) and the wheel's grafted copy are in the process
    assert any(p.startswith(pkg + "/lib/libcrypto-") for p in grafted["crypto_mapped"]), grafted["crypto_mapped"]
    assert any(not p.startswith(pkg) for p in grafted["crypto_mapped"]), grafted["crypto_mapped"]
    assert len(grafted["bundled_loaded"]) > 100 and all(p.startswith(pkg + "/") for p in grafted["bundled_loaded"])
    # the regression, as the GPU run met it
    assert not plain["ok"]
    assert [p for p in plain["problems"] if re.match(
        r"libcrypto\.so\.3 was loaded from /\S+/libcrypto\.so\.3, not from the installed package ", p)], plain["problems"]
    assert not any(p.startswith(plain["package_dir"]) for p in plain["crypto_mapped"]), plain["crypto_mapped"]
