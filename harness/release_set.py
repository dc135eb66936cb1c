"""The flavor's release set: every gate a release of this flavor must pass, whatever the run selected.

Read from the collection before ``-m``/``-k`` deselect anything, so the publish gate
can tell a complete release run from a narrowed one: a gate deselected by ``-m``/``-k``, a gate
module of the harness not on the command line, a skip, are all gates that did not verify the wheel.
Under xdist every worker collects the same items, so the worker that runs the publish gate knows
the set too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from build_steps.publish import gates_not_passed

HARNESS_TESTS = Path(__file__).resolve().parent.parent / "tests"
RELEASE_SET_KEY = pytest.StashKey["ReleaseSet"]()
_MODULES_KEY = pytest.StashKey[set]()


@dataclass
class ReleaseSet:
    #: nodeids of the release gates collected (before deselection), the publish gate excluded
    gates: list = field(default_factory=list)
    #: the harness's gate modules that were not collected at all (not on the command line)
    modules_missing: list = field(default_factory=list)

    def including(self, nodeids) -> "ReleaseSet":
        """The set plus ``nodeids`` (gates this run collected from elsewhere, e.g. a site's own)."""
        return ReleaseSet(gates=list(dict.fromkeys([*self.gates, *nodeids])),
                          modules_missing=list(self.modules_missing))

    def size(self) -> int:
        return len(self.gates) + len(self.modules_missing)

    def not_passed(self, verdicts: dict) -> list:
        """``(what, verdict)`` for every gate of the set without a ``passed`` verdict in ``verdicts``
        (``not run`` when it has none: deselected, or never reached), then the missing modules."""
        return gates_not_passed(self.gates, verdicts) + [(m, "not collected") for m in self.modules_missing]


def release_set_of(config) -> ReleaseSet | None:
    return config.stash.get(RELEASE_SET_KEY, None)


# Not tryfirst: the plugins of this harness that leave gates out for a flavor (harness.gates: GPU
# gates of a CPU wheel; harness.macos: ELF gates of a macOS wheel) are registered after this one
# and so run before it; pytest's own -m/-k deselection is a builtin plugin's and runs after all
# of them. So the set is the flavor's gates, before the user's selection.
def pytest_collection_modifyitems(session, config, items):
    gates = [i.nodeid for i in items if i.get_closest_marker("release") is not None
             and i.get_closest_marker("publish") is None]
    collected = config.stash.get(_MODULES_KEY, set())
    missing = sorted(str(p.relative_to(HARNESS_TESTS.parent)) for p in HARNESS_TESTS.glob("test_*.py")
                     if p.resolve() not in collected)
    config.stash[RELEASE_SET_KEY] = ReleaseSet(gates=gates, modules_missing=missing)


def pytest_itemcollected(item):
    # Every module that yielded an item, before any deselection (a flavor's or the user's).
    item.config.stash.setdefault(_MODULES_KEY, set()).add(Path(str(item.path)).resolve())
