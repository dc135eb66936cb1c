"""The macOS flavor: its wheel's libraries are Mach-O, so the Mach-O gates run and the ELF gates
(RUNPATH, DT_NEEDED, the CUDA fatbin) are left out of the run -- deselected, as the CPU profile
leaves out the GPU gates, because a promise the flavor does not make is no skip to count against
a release. A macOS wheel cannot be installed on another OS: its runtime gates skip with the reason.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from build_steps.release_manifest import FORMAT_MARKERS  # binary format -> its gates' marker

from ..state import the_run

if TYPE_CHECKING:
    from build_steps.readers.audit import Audit
    from build_steps.readers.macho_audit import MachoFacts


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    profile = the_run(config).options.profile
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        other = [m for f, m in FORMAT_MARKERS.items()
                 if f != profile.binary_format and item.get_closest_marker(m) is not None]
        (dropped if other else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    if profile.macho is not None and sys.platform != "darwin":
        skip = pytest.mark.skip(reason=f"a macOS wheel cannot be installed on this {sys.platform} host: "
                                       "run the runtime gates on a Mac")
        for item in items:
            # the runtime gates, and the install gates (they install into a venv of this host)
            if item.get_closest_marker("runtime") is not None or "install_report" in getattr(item, "fixturenames", ()):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def macho_facts(audit: Audit) -> MachoFacts:
    """The Mach-O facts of the macOS wheel (build_steps.readers.macho_audit.MachoFacts)."""
    if audit.macho is None:
        pytest.fail("this run's profile reads ELF; the Mach-O gates need --flavor macos", pytrace=False)
    return audit.macho
