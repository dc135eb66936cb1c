"""Issue 11, point 4: rebuilding the same commit gives the same wheel bytes, and a wheel in dist/
whose version is already tagged is never overwritten."""
from __future__ import annotations

import hashlib
import re
import shutil
import sys
import time
import zipfile

import pytest

from build_steps import package, reproducible
from build_steps.profile_data import PROFILES
from selftest.fixtures_build import copy_sample_tree
from selftest.fixtures_publish import git

VERSION = "2.0.0+cu13.bw.20260614.1"


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stand_in_library(tree):
    # A real shared library where the build chain would stage libmxnet.so (the package step only
    # copies it into the wheel).
    import ctypes.util
    lib = ctypes.util.find_library("z")
    real = next(p for p in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64")
                if (__import__("pathlib").Path(p) / lib).exists())
    shutil.copyfile(f"{real}/{lib}", tree / "python" / "mxnet" / "libmxnet.so")


@pytest.mark.slow
def test_two_builds_of_the_same_tree_give_identical_wheels(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    tree = copy_sample_tree(tmp_path / "tree")
    _stand_in_library(tree)
    first = package.build_wheel(tree, VERSION, PROFILES["cuda"], tmp_path / "one", tmp_path / "logs", sys.executable)
    time.sleep(1.1)  # zip stamps have 2 s resolution; mtimes of the rewritten files move on
    (tree / "python" / "mxnet" / "libmxnet.so").touch()
    second = package.build_wheel(tree, VERSION, PROFILES["cuda"], tmp_path / "two", tmp_path / "logs", sys.executable)
    assert _sha(first.wheel) == _sha(second.wheel)
    commit_time = int(git(tree, "log", "-1", "--format=%ct"))
    assert reproducible.stray_stamps(first.wheel, commit_time) == []
    assert f"SOURCE_DATE_EPOCH={commit_time}" in first.log.read_text()


def _wheel(path, stamp):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in (("mxnet/__init__.py", b"x = 1\n"), ("mxnet-1.dist-info/RECORD", b"r\n")):
            zf.writestr(zipfile.ZipInfo(name, date_time=stamp), data)
    return path


def test_a_backend_that_ignores_source_date_epoch_is_restamped(tmp_path):
    a = _wheel(tmp_path / "a.whl", (2024, 1, 2, 3, 4, 6))
    b = _wheel(tmp_path / "b.whl", (2025, 6, 7, 8, 9, 10))
    assert _sha(a) != _sha(b)
    for w in (a, b):
        assert "restamped" in reproducible.make_reproducible(w, 1700000000)
        assert reproducible.stray_stamps(w, 1700000000) == []
    assert _sha(a) == _sha(b)
    with zipfile.ZipFile(a) as zf:
        assert zf.namelist()[-1].endswith("RECORD") and zf.read("mxnet/__init__.py") == b"x = 1\n"


def _dist_with_release(tmp_path, tagged: bool):
    tree = copy_sample_tree(tmp_path / "tree")
    if tagged:
        git(tree, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "tag", "-a", f"v{VERSION}", "-m", "r")
    name = f"mxnet-{VERSION}-cp311-cp311-linux_x86_64.whl"
    released = tree / "dist" / name
    released.parent.mkdir()
    released.write_bytes(b"the released bytes")
    rebuilt = tmp_path / "staging" / name
    rebuilt.parent.mkdir()
    rebuilt.write_bytes(b"other bytes of the same version")
    return tree, released, rebuilt


def test_a_tagged_release_in_dist_is_never_overwritten(tmp_path):
    tree, released, rebuilt = _dist_with_release(tmp_path, tagged=True)
    with pytest.raises(package.ReleasedWheel, match=re.escape(f"release v{VERSION} (the tag exists)")):
        package.publish_to_dist(rebuilt, tree / "dist", sha256=_sha(rebuilt), src=tree)
    assert released.read_bytes() == b"the released bytes"
    assert sorted(p.name for p in released.parent.iterdir()) == [released.name]


def test_an_untagged_wheel_in_dist_is_replaced(tmp_path):
    tree, released, rebuilt = _dist_with_release(tmp_path, tagged=False)
    package.publish_to_dist(rebuilt, tree / "dist", sha256=_sha(rebuilt), src=tree)
    assert released.read_bytes() == b"other bytes of the same version"
