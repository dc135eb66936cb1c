"""The wheel's bytes, pinned once per run (build_steps.pinning: a private read-only copy, hashed
while copied). The end of the run (harness.plugins.finish) checks that the file the user named is still
the one the gates judged, and makes the pin's dir removable again.

With ``--wheel`` the pin is made when the session starts, before any xdist worker exists; a built
wheel is pinned as soon as the build chain made it. Extraction, install, publish and dist/ read
the private copy after checking its hash; the JSON report and the release notes carry the sha256.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from build_steps.build_chain import WHEEL_STEP
from build_steps.pinning import WheelPin

from ..pin_record import pin_once
from ..state import the_run

if TYPE_CHECKING:
    from build_steps.options import RunOptions


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    run = the_run(session.config)
    if run.mode != "audit" or run.is_worker or session.config.option.collectonly:
        return
    pin_once(run.shared, run.options.wheel)  # type: ignore[arg-type]  # an audit has --wheel


@pytest.fixture(scope="session")
def wheel_pin(options: RunOptions, shared_dir: Path, request: pytest.FixtureRequest) -> WheelPin:
    """The pinned wheel: ``--wheel PATH`` (pinned at session start), else the chain's last step's."""
    run = the_run(request.config)
    wheel = options.wheel if run.mode == "audit" else request.getfixturevalue(WHEEL_STEP.fixture)
    return pin_once(shared_dir, wheel)  # type: ignore[arg-type]  # an audit has --wheel
