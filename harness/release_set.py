"""The flavor's release set: every gate a release of this flavor must pass, whatever the run selected.

The set is the committed manifest of the flavor (build_steps.release_manifest), not this run's
collection: ``-m``/``-k``, ``--sw``, ``--lf``, ``--shards``, an ini's ``python_functions`` or a
disabled plugin change what is collected or run, never what a publish needs. The publish gate
compares the verdicts of the run, once every other gate has finished, with this set and lists
every id that did not pass. Release gates the run collected from elsewhere (a site's own) are
added to the set, never taken from it.

Run as a module it (re)generates the manifests from the gate modules' markers, or checks them:
``python -m harness.release_set --write`` / ``--check``.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from build_steps.publish import gates_not_passed
from build_steps.release_manifest import (FLAVORS, build_manifest, differences, left_out_by_flavor,
                                          load_manifest, manifest_path)

from .common import harness_options

HARNESS_ROOT = Path(__file__).resolve().parent.parent
_EXTRA_KEY = pytest.StashKey[dict]()


@dataclass
class ReleaseSet:
    flavor: str = ""
    #: the manifest's gate ids, then release gates this run collected from elsewhere
    gates: list = field(default_factory=list)

    def including(self, nodeids) -> "ReleaseSet":
        return ReleaseSet(flavor=self.flavor, gates=list(dict.fromkeys([*self.gates, *nodeids])))

    def size(self) -> int:
        return len(self.gates)

    def not_passed(self, verdicts: dict, excused: dict | None = None) -> list:
        """``(id, verdict)`` of every gate of the set that did not pass in ``verdicts`` (``not run``
        when it has none). ``excused`` (id -> why) are shards the fork's own script would not run
        on this tree; they count as done."""
        excused = excused or {}
        return [(n, v) for n, v in gates_not_passed(self.gates, verdicts) if n not in excused]


def release_set_of(config) -> ReleaseSet:
    """The flavor's manifest plus the other release gates this run collected."""
    profile = harness_options(config).profile
    manifest = load_manifest(profile.name)
    extra = [n for n, marks in config.stash.get(_EXTRA_KEY, {}).items()
             if left_out_by_flavor(marks, profile) is None]
    return ReleaseSet(flavor=profile.name, gates=list(manifest.gates)).including(extra)


def scope_line(config, verdicts: dict) -> str | None:
    """One line saying what a verdict over ``verdicts`` (nodeid -> verdict) covers, when that is not
    the whole release set: "46 of the cuda release set's 104 gates ran: not a release verdict"."""
    rset = release_set_of(config)
    if rset is None or not rset.size():
        return None
    ran = sum(1 for n in rset.gates if verdicts.get(n, "not run") != "not run")
    if ran == rset.size():
        return None
    return (f"{ran} of the {rset.flavor} release set's {rset.size()} gates ran: not a release verdict "
            "(the review page lists the rest by marker)")


def pytest_itemcollected(item):
    # Every release gate collected, before any deselection; only those outside the manifest matter.
    if item.get_closest_marker("release") is None or item.get_closest_marker("publish") is not None:
        return
    item.config.stash.setdefault(_EXTRA_KEY, {})[item.nodeid] = sorted({m.name for m in item.iter_markers()})


# --------------------------------------------------------------------------------------------
# Generating and checking the manifests
# --------------------------------------------------------------------------------------------
class _Recorder:
    """Records every release gate's markers before any plugin deselects, then empties the run."""

    def __init__(self):
        self.gates: dict = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        for item in items:
            if item.get_closest_marker("release") is not None:
                self.gates[item.nodeid] = sorted({m.name for m in item.iter_markers()})
        items[:] = []


def collect_gate_markers(root: Path = HARNESS_ROOT) -> dict:
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


def generate(root: Path = HARNESS_ROOT) -> dict:
    """flavor -> Manifest, from the gate modules' markers and the default shard data."""
    from build_steps.acceptance import load_suite
    from build_steps.profiles import get_profile
    gates = collect_gate_markers(root)
    shards = load_suite().shards
    return {f: build_manifest(f, get_profile(f), gates, shards, root=root) for f in FLAVORS}


def main(argv=None) -> int:
    import argparse
    import json
    parser = argparse.ArgumentParser(prog="python -m harness.release_set",
                                     description="generate or check the per-flavor release manifests")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write build_steps/release_sets/<flavor>.json")
    mode.add_argument("--check", action="store_true", help="exit 1 naming every disagreement")
    args = parser.parse_args(argv)
    generated = generate()
    if args.write:
        for flavor, manifest in generated.items():
            path = manifest_path(flavor)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(manifest.to_json(), indent=1) + "\n")
            print(f"{path}: {len(manifest.gates)} gates, {len(manifest.shards)} shards")
        return 0
    problems = []
    for flavor, manifest in generated.items():
        try:
            problems += differences(load_manifest(flavor), manifest)
        except Exception as exc:  # UsageError: missing or unreadable file
            problems.append(str(exc))
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} disagreement(s) between the gate modules and build_steps/release_sets/: "
              "regenerate with python -m harness.release_set --write and review the diff")
        return 1
    print("release manifests agree with the gate modules: "
          + ", ".join(f"{f} {len(m.gates)} gates" for f, m in generated.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
