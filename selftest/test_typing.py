"""The readers, the profile modules (build_steps.profile_data, build_steps.arch) and the harness's
plugins type-check under ``mypy --strict`` (with pyproject.toml's [tool.mypy] overrides, which name
what is not strict yet and why) and mypy finds nothing."""
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


#: build_steps modules outside the readers that are clean under ``mypy --strict`` (issue 47 item 8):
#: each is judged on its own code; the modules it imports give their types (follow-imports=silent)
#: and are judged where they are listed. A module joins the list when it becomes clean.
STRICT_STEPS = (
    "build_steps/bundle.py", "build_steps/credentials.py", "build_steps/deterministic_compile.py",
    "build_steps/processes.py", "build_steps/release_manifest.py", "build_steps/release_report.py",
    "build_steps/sandbox.py", "build_steps/source.py", "build_steps/supervise.py",
    "build_steps/development_settings.py", "build_steps/options.py", "build_steps/rebuild_check.py", "build_steps/cuda_lock.py", "build_steps/cuda_root.py",
    "build_steps/driver_stub.py", "build_steps/fast_compile.py", "build_steps/filesystem.py",
    "build_steps/heartbeat.py", "build_steps/launcher.py", "build_steps/once.py", "build_steps/overrides.py", "build_steps/package.py",
    "build_steps/pinning.py", "build_steps/preflight.py", "build_steps/publish_step.py",
    "build_steps/reproducible.py", "build_steps/run_lock.py", "build_steps/shard_part/mxnet_shard_part.py",
)


def test_typed_build_steps_pass_mypy_strict():
    proc = _mypy_strict("--follow-imports=silent", *STRICT_STEPS)
    assert proc.returncode == 0, (f"mypy --strict over {len(STRICT_STEPS)} build_steps modules exited "
                                  f"{proc.returncode}; annotate what it names (or fix the type error):\n"
                                  f"{proc.stdout}{proc.stderr}")
