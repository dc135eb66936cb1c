"""`gpu/real_fork_run.sh sha`: two GPU holds' builds compared object by object, and its output kept.

Issue 44 compares a second hold's build of the real fork with the first's. The first features-ON hold
(docs/gpu_runs/real_fork_features_2026-12-06.md) printed its libmxnet.so hash, but a device call keeps
only the tail of its output and the GPU lane's output came after: the line was lost. So `sha` keeps
everything it prints in $W/sha.txt (which `collect` brings back), and compares every object with the
first hold's manifest (gpu/hold1.objects.sha256), naming those that differ: the object a rebuild
check then looks at. Run here with the script itself on real files.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from selftest.conftest import HARNESS_ROOT


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout holding the script, and a work dir with a build of three objects and a libmxnet.so."""
    root, work = tmp_path / "checkout", tmp_path / "realfork"
    (root / "gpu").mkdir(parents=True)
    shutil.copy2(HARNESS_ROOT / "gpu" / "real_fork_run.sh", root / "gpu" / "real_fork_run.sh")
    for rel, text in {"src/a.cc.o": "a", "src/b.cu.o": "b", "3rdparty/c.cc.o": "c"}.items():
        (work / "build" / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / "build" / rel).write_text(text)
    (work / "build" / "libmxnet.so").write_text("lib")
    lib_sha = hashlib.sha256(b"lib").hexdigest()
    (root / "gpu" / "hold1.sha256").write_text(f"{lib_sha}  build/libmxnet.so\n")
    lines = sorted(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  ./{p.relative_to(work / 'build')}"
                   for p in (work / "build").rglob("*.o"))
    (root / "gpu" / "hold1.objects.sha256").write_text("\n".join(lines) + "\n")
    return root, work


def _sha(root: Path, work: Path) -> str:
    proc = subprocess.run(["bash", "gpu/real_fork_run.sh", "sha"], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "REAL_FORK_WORK": str(work)}, timeout=120)
    assert (work / "sha.txt").read_text() == proc.stdout, "sha.txt holds what sha printed"
    return proc.stdout


def test_the_same_build_is_same_object_by_object(tmp_path):
    root, work = _layout(tmp_path)
    out = _sha(root, work)
    assert "the first hold's bytes: SAME" in out
    assert "objects: every one SAME as the first hold's" in out
    assert "objects: 3 hashed" in out


def test_an_object_that_differs_is_named(tmp_path):
    root, work = _layout(tmp_path)
    (work / "build" / "src" / "b.cu.o").write_text("b, rebuilt otherwise")
    out = _sha(root, work)
    assert "objects: 1 DIFFERENT from the first hold's (or new), the first 20:" in out
    assert "  ./src/b.cu.o" in out
    assert "./src/a.cc.o" not in out.split("DIFFERENT from")[1]
