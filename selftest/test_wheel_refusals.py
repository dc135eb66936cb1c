"""Every wheel the audit cannot read safely is one clear line and exit 4, before any gate runs
(issue 43): an absolute, a '..', a symlink, an encrypted or a duplicate member, a zip bomb and a
bad CRC-32, each in a real zip (zipfile, and Info-ZIP's ``zip`` for the symlink and the
encryption, as a release engineer's tools would make them).

The wheels are small: the refusal comes before the wheel's contents matter, so no libmxnet is
needed (a gate that ran would say that it is missing; none may run).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import warnings
import zipfile
from pathlib import Path

import pytest

from selftest.fixtures_wheels import VERSION, wheel_name, write_wheel, wrong_crc

FILES = {"mxnet/__init__.py": b'"""mxnet"""\n',
         f"mxnet-{VERSION['cpu']}.dist-info/METADATA": b"Metadata-Version: 2.1\nName: mxnet\n"
                                                      b"Version: " + VERSION["cpu"].encode() + b"\n\n"}


def _good(dest: Path) -> Path:
    return write_wheel(dest / wheel_name(VERSION["cpu"]), FILES, version=VERSION["cpu"])


def _append(wheel: Path, info: zipfile.ZipInfo | str, data: bytes, level: int = 1) -> None:
    with warnings.catch_warnings():  # zipfile warns of a duplicate name: that is the point of one case
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
            zf.writestr(info, data)


def _info_zip(tmp: Path, name: str, *args: str, stage) -> Path:
    """A wheel written by Info-ZIP's ``zip`` from a staged tree (``stage(dir)`` adds the odd part)."""
    tree = tmp / "tree"
    for member, data in FILES.items():
        (tree / member).parent.mkdir(parents=True, exist_ok=True)
        (tree / member).write_bytes(data)
    stage(tree)
    wheel = tmp / name / wheel_name(VERSION["cpu"])
    wheel.parent.mkdir(parents=True)
    subprocess.run(["zip", "-q", "-r", *args, str(wheel), "."], cwd=tree, check=True)
    return wheel


def absolute(tmp: Path) -> Path:
    wheel = _good(tmp)
    _append(wheel, zipfile.ZipInfo("/tmp/mxnet-selftest-evil.pth"), b"import os\n")
    return wheel


def dotdot(tmp: Path) -> Path:
    wheel = _good(tmp)
    _append(wheel, zipfile.ZipInfo("mxnet/../../evil.pth"), b"import os\n")
    return wheel


def symlink(tmp: Path) -> Path:
    return _info_zip(tmp, "symlink", "-y", stage=lambda t: os.symlink("/etc/passwd", t / "mxnet" / "passwd"))


def encrypted(tmp: Path) -> Path:
    return _info_zip(tmp, "encrypted", "-P", "secret", stage=lambda t: None)


def duplicate(tmp: Path) -> Path:
    wheel = _good(tmp)
    _append(wheel, "mxnet/__init__.py", b"import os; os.system('true')\n")
    return wheel


def bomb(tmp: Path) -> Path:
    wheel = _good(tmp)
    _append(wheel, "mxnet/zeros.bin", bytes(64 << 20), level=9)
    return wheel


def bad_crc(tmp: Path) -> Path:
    good = _good(tmp / "good")
    return wrong_crc(good, tmp / "crc" / good.name, "mxnet/__init__.py")


CASES = {
    "absolute": (absolute, "member '/tmp/mxnet-selftest-evil.pth' has an absolute path"),
    "dotdot": (dotdot, "member 'mxnet/../../evil.pth' has a '..' component"),
    "symlink": (symlink, "member 'mxnet/passwd' is a symbolic link"),
    "encrypted": (encrypted, "info/METADATA' is encrypted (pip cannot read it"),
    "duplicate": (duplicate, "member 'mxnet/__init__.py' appears twice in the archive"),
    "bomb": (bomb, "member 'mxnet/zeros.bin' declares 67108864 bytes stored in"),
    "bad_crc": (bad_crc, "member 'mxnet/__init__.py' is corrupt (CRC-32 mismatch: the zip says"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unreadable_wheel_is_one_line_and_exit_4(gates, tmp_path, case):
    make, fragment = CASES[case]
    wheel = make(tmp_path)
    result = gates("-m", "provenance", f"--wheel={wheel}", "--flavor=cpu",
                   f"--provenance-json={tmp_path / 'report.json'}")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, text
    lines = [ln for ln in text.splitlines() if fragment in ln]
    assert len(lines) == 1, text
    assert lines[0].startswith(f"ERROR: --wheel {wheel}: "), lines
    assert "Traceback" not in text, text
    # before any gate: nothing collected or run, no report written
    assert "PASSED" not in text and "FAILED" not in text and "passed" not in text, text
    assert not (tmp_path / "report.json").exists()


def test_the_tools_made_what_each_case_says(tmp_path):
    # The odd part is in the zip as written (a case that silently lost it would prove nothing).
    with zipfile.ZipFile(symlink(tmp_path / "s")) as zf:
        info = zf.getinfo("mxnet/passwd")
        assert (info.external_attr >> 16) & 0o170000 == 0o120000 and zf.read(info) == b"/etc/passwd"
    with zipfile.ZipFile(encrypted(tmp_path / "e")) as zf:
        assert all(i.flag_bits & 0x1 for i in zf.infolist() if not i.is_dir())
    with zipfile.ZipFile(duplicate(tmp_path / "d")) as zf:
        assert [i.filename for i in zf.infolist()].count("mxnet/__init__.py") == 2
    with zipfile.ZipFile(bad_crc(tmp_path / "c")) as zf:
        assert zf.testzip() == "mxnet/__init__.py"
    assert shutil.which("zip")


def test_refusal_under_xdist_is_said_once_by_the_controller(gates, tmp_path):
    # The extraction that finds a bad CRC runs in the controller when the session starts: one line
    # and exit 4 with -n 2 as serially, no worker reporting it again.
    wheel = bad_crc(tmp_path)
    result = gates("-m", "provenance", f"--wheel={wheel}", "--flavor=cpu", "-n", "2")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, text
    assert text.count("is corrupt (CRC-32 mismatch") == 1 and "Traceback" not in text, text
    assert "[gw0]" not in text and "[gw1]" not in text, text
