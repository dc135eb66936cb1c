"""Strict release runs and the gate table.

In a run selected with ``-m release`` a gate that skipped counts as failed: a release cannot
pass on a gate that did not run. The terminal summary lists every gate with its verdict and why.
"""
from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from build_steps.build_chain import STEP_NAMES
from build_steps.errors import (EnvironmentFault, HarnessError, ProductFailed, StepError, StepFailedElsewhere,
                                UsageError, WheelUnusable)
from build_steps.release_manifest import left_out_by_flavor

from ..state import HarnessRun, harness_run, the_run
from ..verdicts import CHAIN_STEP_PROPERTY

#: Steps every gate of a build run stands on: when one fails, no further gate can run.
CHAIN_STEPS = STEP_NAMES
#: How the session stop for a failed chain step starts, so the xdist controller can tell it from Ctrl-C.
STOP_PREFIX = "build step failed"


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(StepStop(the_run(config)), "mxnet-step-stop")


def _stops_the_chain(exc: BaseException) -> bool:
    # WheelUnusable/ProductFailed: the wheel could not be extracted (a full disk, a zip bomb, a
    # corrupt member); every gate would say it again, 29 times.
    # EnvironmentFault: a step the host kept from running (an unreachable index for the venv):
    # every gate that needs it would say it again; the run is not judged (harness.plugins.finish)
    return (isinstance(exc, StepError) and exc.step in CHAIN_STEPS) or isinstance(
        exc, (StepFailedElsewhere, UsageError, WheelUnusable, ProductFailed, EnvironmentFault))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _judge(item, call, report)
    return report


def _judge(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """A chain step's failure stops the session; a release run's skipped gate is a failed one."""
    if report.when == "setup" and report.failed and call.excinfo is not None \
            and _stops_the_chain(call.excinfo.value):
        # One failure, said once: every later gate would repeat the same error, so the session
        # stops after this one (exit 1); the message above is the whole report.
        exc = call.excinfo.value
        step = getattr(exc, "step", None) or ("source" if isinstance(exc, UsageError) else
                                              "wheel" if isinstance(exc, ProductFailed) else "build")
        item.session.shouldfail = f"{STOP_PREFIX} ({step}): the error above is the whole report"
        if isinstance(exc, StepFailedElsewhere):
            # another process said the step's failure; here it is one line, not a traceback per
            # xdist worker (the GPU host's -n 14 run printed fourteen)
            report.longrepr = str(exc).splitlines()[0]
        if isinstance(exc, StepError) and exc.step in CHAIN_STEPS:
            # Filed under the step, not under whichever gate first asked for its product: the
            # gate did not fail, it never ran ("ERROR at setup of build step configure").
            # Renamed where it is logged (harness.plugins.ledger), not here: an xdist worker
            # checks that each report it sends is of the item it ran (an INTERNALERROR otherwise,
            # seen on the GPU host).
            report.user_properties = [*report.user_properties, (CHAIN_STEP_PROPERTY, step)]
    # A release run's skipped gate is a failed one. The verdict itself is filed by harness.plugins.ledger,
    # whose makereport wraps this one and so sees the converted outcome.
    if item.get_closest_marker("release") is None or not report.skipped or report.when == "teardown":
        return
    if the_run(item.config).plan.release:
        why = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"release run: gate skipped, which counts as a failure ({why})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The GPU and cuBLAS gates are promises of the CUDA profile only. A CPU wheel does not make
    # them, so they are left out of its run (rather than skipped, which -m release counts as failed).
    # The rule is the one the release manifests are made by (build_steps.release_manifest).
    profile = the_run(config).options.profile
    if profile.is_cuda:
        return
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        is_gate = item.get_closest_marker("release") is not None
        left_out = is_gate and left_out_by_flavor({m.name for m in item.iter_markers()}, profile)
        (dropped if left_out else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: pytest.ExitCode,
                            config: pytest.Config) -> None:
    run = harness_run(config)
    results = run.ledger.results() if run is not None else {}
    if run is None or not results:
        return
    tr = terminalreporter
    tr.section("MXNet release gates")
    for nodeid, (verdict, why) in sorted(results.items()):
        tr.write_line(f"{verdict.upper():8} {nodeid}" + (f"  -- {why}" if why and verdict != "passed" else ""))
    for line in run.report_lines:
        tr.write_line(line)


class StepStop:
    """Under xdist a worker's stop for a failed step reaches the controller as an interrupt
    (exit 2); the end of the run (harness.plugins.finish) makes it a failure (exit 1) from
    HarnessRun.stopped_for_step. A real Ctrl-C keeps its 2."""

    def __init__(self, run: HarnessRun) -> None:
        self.run = run

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.run.stopped_for_step = str(excinfo.value).startswith(STOP_PREFIX)


def pytest_exception_interact(node: pytest.Item | pytest.Collector, call: pytest.CallInfo[Any],
                              report: pytest.CollectReport | pytest.TestReport) -> None:
    # HarnessError messages are complete explanations; the traceback adds only noise.
    if call.excinfo is not None and isinstance(call.excinfo.value, HarnessError):
        report.longrepr = str(call.excinfo.value)
