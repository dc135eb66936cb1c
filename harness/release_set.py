"""The release sets' command: ``python -m harness.release_set --write`` (re)generates the
manifests (build_steps/release_sets/<flavor>.json) from the gate modules' markers, ``--check``
fails when they disagree. Not a plugin: the run's own collection of release gates is
harness.plugins.collected_gates.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from build_steps.release_manifest import FLAVORS, build_manifest, write_or_check

if TYPE_CHECKING:
    from collections.abc import Sequence

    from build_steps.release_manifest import Manifest

HARNESS_ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------------
# Generating and checking the manifests
# --------------------------------------------------------------------------------------------
class _Recorder:
    """Records every release gate's markers before any plugin deselects, then empties the run."""

    def __init__(self) -> None:
        self.gates: dict[str, list[str]] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        for item in items:
            if item.get_closest_marker("release") is not None:
                self.gates[item.nodeid] = sorted({m.name for m in item.iter_markers()})
        items[:] = []


def collect_gate_markers(root: Path = HARNESS_ROOT) -> dict[str, list[str]]:
    """nodeid -> marker names of every release gate in ``root``/tests, with default options
    (every shard of the default shard data). The user's PYTEST_ADDOPTS is not read."""
    recorder = _Recorder()
    saved = os.environ.pop("PYTEST_ADDOPTS", None)
    try:
        rc = pytest.main(["-c", str(root / "pytest.ini"), "--rootdir", str(root), "-p", "no:cacheprovider",
                          "--collect-only", "-q", str(root / "tests")], plugins=[recorder])
    finally:
        if saved is not None:
            os.environ["PYTEST_ADDOPTS"] = saved
    if rc not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED) or not recorder.gates:
        raise SystemExit(f"collecting {root / 'tests'} failed (exit {int(rc)}); fix the gate modules first")
    return recorder.gates


def generate(root: Path = HARNESS_ROOT) -> dict[str, Manifest]:
    """flavor -> Manifest, from the gate modules' markers and the default shard data."""
    from build_steps.acceptance.suite import load_suite
    from build_steps.profile_data import get_profile
    gates = collect_gate_markers(root)
    shards = load_suite().shards
    return {f: build_manifest(f, get_profile(f), gates, shards, root=root) for f in FLAVORS}


def main(argv: Sequence[str] | None = None) -> int:
    return write_or_check(generate, argv)


if __name__ == "__main__":
    sys.exit(main())
