"""Every release gate collected, filed before any deselection (HarnessRun.collected), for the
flavor's release set (harness.release_scope): the publish gate's release set and the review
page's gates that did not run, by marker. The manifests themselves are made and checked by
``python -m harness.release_set --write`` / ``--check`` (harness/release_set.py)."""
from __future__ import annotations

import pytest

from ..state import the_run


def pytest_itemcollected(item: pytest.Item) -> None:
    if item.get_closest_marker("release") is not None:
        the_run(item.config).collected[item.nodeid] = sorted({m.name for m in item.iter_markers()})
