"""The readers type-check: ``mypy --strict build_steps/readers`` (with pyproject.toml's
[tool.mypy] overrides, which name what is not strict yet and why) finds nothing."""
from __future__ import annotations

import subprocess
import sys

import pytest

from selftest.conftest import HARNESS_ROOT


def test_readers_pass_mypy_strict():
    pytest.importorskip("mypy", reason="mypy is a selftest dependency: bash scripts/setup.sh installs it")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "build_steps/readers"], cwd=HARNESS_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (f"mypy --strict build_steps/readers exited {proc.returncode}; annotate what "
                                  f"it names (or fix the type error):\n{proc.stdout}{proc.stderr}")
