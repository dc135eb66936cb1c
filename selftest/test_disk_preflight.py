"""scripts/disk_preflight.py: .ci/run refuses a short disk up front instead of dying of ENOSPC.

The checks read the real free space of this machine's filesystems; what varies is the need.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = HARNESS_ROOT / "scripts" / "disk_preflight.py"

spec = importlib.util.spec_from_file_location("disk_preflight", SCRIPT)
disk_preflight = importlib.util.module_from_spec(spec)
spec.loader.exec_module(disk_preflight)


def needs(gb: float) -> dict:
    return {name: (gb, why) for name, (_, why) in disk_preflight.NEEDS.items()}


def test_a_disk_too_small_is_named_with_what_needs_the_space(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HARNESS_CACHE", str(tmp_path / "not-yet" / "cache"))
    problems = disk_preflight.shortfalls(HARNESS_ROOT, needs(1e9))
    assert problems, "a need beyond any disk must be refused"
    text = "\n".join(problems)
    assert "GB free on the filesystem of" in text
    assert "CUDA 13 wheels" in text and ".pytest_cache" in text and "temp dirs" in text


def test_needs_on_one_filesystem_add_up(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    where = disk_preflight.places(HARNESS_ROOT)
    if len({p.stat().st_dev for p in where.values()}) != 1:
        pytest.skip("checkout and tmp are on different filesystems here: no sum to show")
    free_gb = shutil.disk_usage(tmp_path).free / (1 << 30)
    # each place alone fits, all three together do not
    assert disk_preflight.shortfalls(HARNESS_ROOT, needs(free_gb / 2)), "the three needs share one disk"
    assert disk_preflight.shortfalls(HARNESS_ROOT, needs(free_gb / 4)) == []


def test_cli_exit_codes(tmp_path):
    ok = subprocess.run([sys.executable, str(SCRIPT), str(HARNESS_ROOT)], capture_output=True, text=True,
                        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MXNET_HARNESS_SKIP_DISK_CHECK": "1"})
    assert ok.returncode == 0, ok.stderr
    usage = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: disk_preflight.py CHECKOUT" in usage.stderr


def test_cli_refuses_with_the_fix(monkeypatch, capsys):
    monkeypatch.setattr(disk_preflight, "NEEDS", needs(1e9))
    monkeypatch.delenv("MXNET_HARNESS_SKIP_DISK_CHECK", raising=False)
    assert disk_preflight.main(["disk_preflight.py", str(HARNESS_ROOT)]) == 1
    err = capsys.readouterr().err
    assert "disk preflight:" in err and "point TMPDIR / MXNET_HARNESS_CACHE at a larger disk" in err
