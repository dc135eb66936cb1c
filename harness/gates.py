"""Strict release runs and the gate table.

In a run selected with ``-m release`` a gate that skipped counts as failed: a release cannot
pass on a gate that did not run. The terminal summary lists every gate with its verdict and why.
"""
from __future__ import annotations

import pytest

from build_steps.errors import HarnessError

from .common import REPORT_LINES_KEY, RESULTS_KEY, harness_options, is_release_run


def pytest_configure(config):
    config.stash[RESULTS_KEY] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("release") is None:
        return
    results = item.config.stash[RESULTS_KEY]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        verdict, why = report.outcome, ""
        if report.skipped:
            why = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
            if is_release_run(item.config):
                report.outcome = "failed"
                report.longrepr = f"release run: gate skipped, which counts as a failure ({why})"
                verdict = "failed"
        elif report.failed:
            why = first_line(report)
        results[item.nodeid] = (verdict, why)


def pytest_collection_modifyitems(config, items):
    # The GPU and cuBLAS gates are promises of the CUDA profile only. A CPU wheel does not make
    # them, so they are left out of its run (rather than skipped, which -m release counts as failed).
    if harness_options(config).profile.is_cuda:
        return
    keep, dropped = [], []
    for item in items:
        is_gate = item.get_closest_marker("release") is not None
        is_gpu = item.get_closest_marker("gpu") or item.get_closest_marker("cublas")
        (dropped if is_gate and is_gpu else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def first_line(report) -> str:
    """The line of a failure that names the regression."""
    text = getattr(report, "longreprtext", "") or ""
    for line in text.splitlines():
        if line.startswith("E "):
            return line[2:].strip()
    # pytest.fail(..., pytrace=False) gives the bare message: its first line names the regression.
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return (lines or [""])[0][:200]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    results = config.stash.get(RESULTS_KEY, {})
    if not results:
        return
    tr = terminalreporter
    tr.section("MXNet release gates")
    for nodeid, (verdict, why) in sorted(results.items()):
        tr.write_line(f"{verdict.upper():8} {nodeid}" + (f"  -- {why}" if why and verdict != "passed" else ""))
    for line in config.stash.get(REPORT_LINES_KEY, []):
        tr.write_line(line)


def pytest_exception_interact(node, call, report):
    # HarnessError messages are complete explanations; the traceback adds only noise.
    if call.excinfo is not None and isinstance(call.excinfo.value, HarnessError):
        report.longrepr = str(call.excinfo.value)
