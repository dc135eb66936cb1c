"""The wheel's bytes, pinned once per run (build_steps.pinning: a private read-only copy, hashed
while copied), and the end-of-run check that the file the user named is still the one the gates judged.

With ``--wheel`` the pin is made when the session starts, before any xdist worker exists; a built
wheel is pinned as soon as the build chain made it. Extraction, install, publish and dist/ read
the private copy after checking its hash; the JSON report and the release notes carry the sha256.
"""
from __future__ import annotations

import pytest

from build_steps.once import run_once
from build_steps.pinning import WheelPin, pin_wheel, source_changed, unlock, verify

from .common import add_report_lines, harness_options, is_worker, say, shared_root
from .ledger import produced_wheel
from .steps import WHEEL_STEP

PIN_RECORD = "wheel-pin"
PIN_KEY = pytest.StashKey[WheelPin]()


def _pin(shared, wheel) -> WheelPin:
    return WheelPin.from_json(run_once(shared, PIN_RECORD,
                                       lambda: pin_wheel(wheel, shared / "pinned-wheel").to_json()))


def load_pin(shared) -> WheelPin | None:
    """The run's pin (None when no wheel was pinned), from the run-once record."""
    import json
    record = shared / f"{PIN_RECORD}.json" if shared is not None else None
    if record is None or not record.exists():
        return None
    data = json.loads(record.read_text())
    return None if data.get("failed") else WheelPin.from_json(data["result"])


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    opts = harness_options(config)
    if opts.wheel is None or is_worker(config) or config.option.collectonly:
        return
    shared = shared_root(config)
    if shared is not None:
        _pin(shared, opts.wheel)


@pytest.fixture(scope="session")
def wheel_pin(options, shared_dir, request) -> WheelPin:
    """The pinned wheel: ``--wheel PATH`` (pinned at session start), else the chain's last step's."""
    wheel = options.wheel if options.wheel is not None else request.getfixturevalue(WHEEL_STEP.fixture)
    return _pin(shared_dir, wheel)


# tryfirst: the pin is checked (and stashed for _Unlock) before the plain sessionfinish hooks run.
@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    _check_at_end(session)


def pytest_configure(config):
    config.pluginmanager.register(_Unlock(), "mxnet-pin-unlock")


class _Unlock:
    """Makes the pin's directory removable again once dist/ (harness.chain, tryfirst) has read the
    copy; the run dir itself is removed after a green run at pytest_unconfigure (harness.common.RunDir)."""

    def pytest_sessionfinish(self, session):
        pin = session.config.stash.get(PIN_KEY, None)
        if pin is not None and not is_worker(session.config):
            unlock(pin)


def _check_at_end(session):
    config = session.config
    if is_worker(config):
        return
    pin = load_pin(shared_root(config))
    if pin is None:
        return
    config.stash[PIN_KEY] = pin
    problems = []
    try:
        verify(pin, "the end of the run")
    except Exception as exc:  # WheelChanged: the words are in the message
        problems.append(str(exc))
    changed = source_changed(pin)
    if changed:
        problems.append(changed)
    # A built wheel's path is said once, where it now lies (dist/ or set aside, harness.chain);
    # its staging path here would be a second wheel path for the same bytes.
    what = f"sha256 {pin.sha256}, {pin.size} bytes"
    lines = [f"wheel verified by this run: {what}" if produced_wheel(config)
             else f"wheel verified by this run: {pin.source} ({what})"]
    if problems:
        lines = ["WHEEL CHANGED DURING THE RUN: " + p for p in problems] + lines
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        for line in lines[:-1]:
            say(line)
    add_report_lines(config, [""] + lines)
