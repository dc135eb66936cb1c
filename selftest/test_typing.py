"""The readers, the profile modules (build_steps.profile_data, build_steps.arch), every other
build_steps module but those NOT_YET_STRICT names (issue 47 item 8) and the harness's plugins
type-check under ``mypy --strict`` (with pyproject.toml's [tool.mypy] overrides, which name what
is not strict yet and why) and mypy finds nothing."""
from __future__ import annotations

import subprocess
import sys

import pytest

from selftest.conftest import HARNESS_ROOT


def _mypy_strict(*args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is a selftest dependency: bash scripts/setup.sh installs it")
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", *args], cwd=HARNESS_ROOT,
                          capture_output=True, text=True, timeout=600)


def test_readers_pass_mypy_strict():
    proc = _mypy_strict("build_steps/readers")
    assert proc.returncode == 0, (f"mypy --strict build_steps/readers exited {proc.returncode}; annotate what "
                                  f"it names (or fix the type error):\n{proc.stdout}{proc.stderr}")


def test_harness_passes_mypy_strict():
    # harness/ alone: the build_steps modules it imports give their types (follow-imports=silent)
    # but are judged where they are checked themselves (the readers above), not here.
    proc = _mypy_strict("--follow-imports=silent", "harness")
    assert proc.returncode == 0, (f"mypy --strict harness exited {proc.returncode}; annotate what it names "
                                  f"(or fix the type error):\n{proc.stdout}{proc.stderr}")


def test_profile_modules_pass_mypy_strict():
    # named as files, so mypy judges them whatever the readers' run follows; the modules they
    # import (versions, cuda_stack, ...) are followed as pyproject.toml's [tool.mypy] says
    proc = _mypy_strict("build_steps/profile_data.py", "build_steps/arch.py")
    assert proc.returncode == 0, (f"mypy --strict build_steps/profile_data.py build_steps/arch.py exited "
                                  f"{proc.returncode}; annotate what it names (or fix the type error):\n"
                                  f"{proc.stdout}{proc.stderr}")


#: build_steps modules not yet clean under ``mypy --strict`` (issue 47 item 8), each with why it waits.
#: Every other build_steps module (the readers have their own test above) is checked, a new one
#: included; a module leaves this list when it becomes clean.
#: Empty now: configure, compile and toolchain, the last to wait (for the File API rewrite), are typed.
NOT_YET_STRICT: dict[str, str] = {}


def strict_steps() -> list[str]:
    """Every build_steps module outside the readers and NOT_YET_STRICT, relative to the harness root."""
    return sorted(str(p.relative_to(HARNESS_ROOT)) for p in (HARNESS_ROOT / "build_steps").rglob("*.py")
                  if "readers" not in p.relative_to(HARNESS_ROOT / "build_steps").parts
                  and str(p.relative_to(HARNESS_ROOT)) not in NOT_YET_STRICT)


def test_not_yet_strict_names_existing_modules():
    # a module renamed or moved must not stay excused under its old name
    missing = sorted(name for name in NOT_YET_STRICT if not (HARNESS_ROOT / name).is_file())
    assert not missing, f"NOT_YET_STRICT names modules that do not exist: {missing}"
    assert len(strict_steps()) > 50, strict_steps()


def test_typed_build_steps_pass_mypy_strict():
    # each module is judged on its own code; the modules it imports give their types
    # (follow-imports=silent) and are judged where they are checked themselves
    steps = strict_steps()
    proc = _mypy_strict("--follow-imports=silent", *steps)
    assert proc.returncode == 0, (f"mypy --strict over {len(steps)} build_steps modules exited "
                                  f"{proc.returncode}; annotate what it names (or fix the type error):\n"
                                  f"{proc.stdout}{proc.stderr}")
