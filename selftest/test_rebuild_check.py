"""Issue 31, points 3 and 4: the sample tree built in two directories with two TMPDIRs gives the
same wheel sha256 (nvcc and all), and ``mxnet-release rebuild-check`` exits 0 on a rebuild of the
sample tree and names the object of a tampered source."""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps import rebuild_check
from selftest.fixtures_build import copy_sample_tree, default_build

REQUIRES_NVCC = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                   reason="nvcc (CUDA 13) is needed to compile the sample's .cu")
#: the same commit in both copies: fixed author and committer dates
DATE = "2026-11-30T12:00:00Z"
BUILD = ("-m", "release and build", "-k", "not install", "-p", "no:randomly")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _out(result) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def _staged_wheel(build: Path) -> Path:
    wheels = sorted((build / "harness-wheel").glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.mark.slow
@REQUIRES_NVCC
def test_the_sample_tree_in_two_directories_with_two_tmpdirs_gives_one_wheel_sha256(gates, tmp_path, monkeypatch):
    shas, trees = [], []
    for name in ("one", "second/deeper"):
        src = copy_sample_tree(tmp_path / name / "mxnet", date=DATE)
        tmp = tmp_path / f"tmp-{len(trees)}"
        tmp.mkdir()
        monkeypatch.setenv("TMPDIR", str(tmp))
        # the release arch list: a narrower one is a development build, whose .cu objects may go
        # through sccache, which cannot compile them reproducibly (build_steps.reproducible)
        result = gates(*BUILD, f"--mxnet-src={src}", "--cuda-from-wheels", "--jobs=2",
                       "--wheel-version=2.0.0+cu13.bw.20261130")
        out = _out(result)
        assert re.search(r"reproducible compile: yes .*SOURCE_DATE_EPOCH=\d+", out), out[-4000:]
        build = default_build(src)
        assert (build / "CMakeFiles").is_dir() and any(build.rglob("kernel.cu.o")), "the .cu must be compiled"
        shas.append(_sha(_staged_wheel(build)))
        trees.append(src)
    assert trees[0] != trees[1]
    assert shas[0] == shas[1], "two directories, two TMPDIRs, one commit: the wheel bytes must be the same"


@pytest.mark.slow
def test_rebuild_check_passes_on_a_rebuild_and_names_the_tampered_object(gates, tmp_path):
    src = copy_sample_tree(tmp_path / "mxnet", date=DATE)
    version = "2.0.0+cpu.linux.20261130"
    first = gates(*BUILD, f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2", f"--wheel-version={version}")
    original = default_build(src, 'cpu')
    wheel = _staged_wheel(original)
    assert "reproducible compile: yes" in _out(first), _out(first)[-3000:]

    def check(build: str, *more):
        return subprocess.run([sys.executable, "-m", "harness.cli", "rebuild-check", f"--wheel={wheel}",
                               f"--mxnet-src={src}", f"--build-dir={tmp_path / build}",
                               f"--original-build-dir={original}", "--flavor=cpu", "--jobs=2",
                               # the OpenCV of the first build (gates: conftest.host_opencv)
                               "--opencv=system", *more],
                              capture_output=True, text=True, cwd=tmp_path)
    same = check("build-again")
    assert same.returncode == 0, same.stdout + same.stderr[-3000:]
    assert "IDENTICAL" in same.stdout

    # one object's source changes (a tampered rebuild): the check fails and names that object
    api = src / "src" / "c_api.cc"
    api.write_text(api.read_text() + "\nextern \"C\" int mxnet_tampered() { return 7; }\n")
    refused = check("build-tampered")
    assert refused.returncode == 4 and "tracked files changed" in refused.stderr, refused.stderr
    tampered = check("build-tampered", "--allow-dirty")
    assert tampered.returncode == 1, tampered.stdout + tampered.stderr[-3000:]
    lines = tampered.stdout
    assert "DIFFERENT" in lines and "libmxnet.so" in lines, lines
    named = re.findall(r"made by (\S+)", lines)
    assert named == ["CMakeFiles/mxnet.dir/src/c_api.cc.o"], lines


def test_a_wheel_of_another_commit_is_refused_with_the_checkout_to_run(tmp_path, monkeypatch, capsys):
    src = copy_sample_tree(tmp_path / "mxnet", date=DATE)
    monkeypatch.setattr(rebuild_check, "commit_of", lambda wheel, scratch: "0" * 40)
    wheel = tmp_path / "mxnet-2.0.0+cpu.linux.20261130-py3-none-linux_x86_64.whl"
    import zipfile
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    rc = rebuild_check.main([f"--wheel={wheel}", f"--mxnet-src={src}", f"--build-dir={tmp_path / 'b'}"])
    assert rc == 4
    assert f"but the wheel was built from 000000000000; run `git -C {src} checkout {'0' * 40}`" in capsys.readouterr().err


def test_differing_objects_are_named_by_their_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        (d / "o").mkdir(parents=True)
    log = "# ninja log v5\n{}\t{}\t0\t{}\t{}\n"
    (a / ".ninja_log").write_text(log.format(0, 1, "o/x.o", "h1") + log.format(0, 1, "o/y.o", "h2")[15:]
                                  + log.format(0, 1, "o/z.o", "h3")[15:])
    (b / ".ninja_log").write_text(log.format(0, 1, "o/x.o", "h1") + log.format(0, 1, "o/y.o", "CHANGED")[15:]
                                  + log.format(0, 1, "o/z.o", "h3")[15:])
    for d, tail in ((a, b"1"), (b, b"2")):
        (d / "o" / "x.o").write_bytes(b"same")
        (d / "o" / "y.o").write_bytes(b"same")
        (d / "o" / "z.o").write_bytes(b"z" + tail)
    # two build dirs: every command names its dir, so only the bytes decide
    assert rebuild_check.differing_objects(a, b) == ["o/z.o (bytes differ)"]
    (b / "o" / "y.o").write_bytes(b"changed")
    assert rebuild_check.differing_objects(a, b) == ["o/y.o (bytes differ)", "o/z.o (bytes differ)"]
    # one build dir rebuilt in place (the original kept as a copy of its log): the command counts too
    assert rebuild_check.differing_objects(b, b) == []


def test_a_missing_wheel_is_a_usage_error(tmp_path, capsys):
    rc = rebuild_check.main([f"--wheel={tmp_path / 'nope.whl'}", f"--mxnet-src={tmp_path}"])
    assert rc == 4 and "not a wheel file; pass the path of a built .whl" in capsys.readouterr().err
