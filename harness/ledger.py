"""The verdict ledger: every gate's outcome, recorded once, in the process that reports the run.

The verdict and its one-line reason are decided where the gate ran (the xdist worker, or the only
process) and travel with the report (``user_properties`` is serialized by xdist); the controller,
or the single process, files them. So the gate table, the provenance report, the JSON and the
publish gate read the same words with ``-n 2`` as serially: a reason taken from the report's text
on the controller would start with xdist's ``[gw1] linux -- Python ...`` header instead.
"""
from __future__ import annotations

from collections.abc import Generator
from typing import Any, cast

import pytest

from build_steps.errors import HarnessError, NotJudged

from .state import Entry, the_run
from .verdicts import (NOT_JUDGED, OUTCOME_PROPERTY, PLAN_PROPERTY, VERDICT_PROPERTY, failure_reason,
                       skip_reason, verdict_of)

PLUGIN_NAME = "mxnet-ledger"


def _marker_names(item: pytest.Item) -> list[str]:
    return sorted({m.name for m in item.iter_markers()})


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LedgerPlugin(config), PLUGIN_NAME)


class LedgerPlugin:
    """Files the run's ledger (HarnessRun.ledger; its release gates are the gate table)."""

    def __init__(self, config: pytest.Config) -> None:
        self.run = the_run(config)
        self.ledger = self.run.ledger
        self.reporting = not self.run.is_worker

    # tryfirst makes this the outermost wrapper: it sees the report after harness.gates turned a
    # release run's skip into a failure.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        verdict: str | None = None
        why = ""
        if report.when == "call" or not report.passed:
            if report.skipped:
                why = skip_reason(report)
            elif report.failed:
                exc = call.excinfo.value if call.excinfo is not None else None
                # A HarnessError's message is its explanation (harness.gates shows it without the
                # traceback); its first line is the reason.
                why = ((str(exc).splitlines() or [""])[0] if isinstance(exc, HarnessError) else
                       failure_reason(getattr(report, "longreprtext", "") or str(report.longrepr or "")))
            verdict = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
            if report.failed and call.excinfo is not None and isinstance(call.excinfo.value, NotJudged):
                # the host kept the gate from judging (build_steps.errors.NotJudged): a third outcome
                verdict = NOT_JUDGED
        facts = {"when": report.when, "verdict": verdict, "why": why, "markers": _marker_names(item)}
        # A new list: the report shares item.user_properties otherwise.
        report.user_properties = [*report.user_properties, (VERDICT_PROPERTY, facts)]
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Runs in the worker and again on the controller; only the reporting process files.
        if not self.reporting:
            return
        facts = verdict_of(report)
        if facts is None and report.passed:
            return
        entry = self.ledger.entries.setdefault(report.nodeid, Entry())
        if facts is None:
            # a report no gate's process made (xdist's of a crashed worker): failed, in its words
            facts = {"when": report.when, "verdict": report.outcome, "markers": entry.markers,
                     "why": failure_reason(getattr(report, "longreprtext", "") or str(report.longrepr or ""))}
        entry.markers = tuple(facts["markers"])
        for key, value in report.user_properties:
            if key == PLAN_PROPERTY:
                self.run.publish_plan = cast("dict[str, Any]", value)  # tests/test_publish.py's
            elif key == OUTCOME_PROPERTY:
                self.run.publish_outcome = cast("dict[str, Any]", value)
        if report.outcome == "rerun":  # type: ignore[comparison-overlap]  # pytest-rerunfailures' own
            # A rerun plugin (pytest-rerunfailures) retries a failed gate: the failure stands,
            # whatever a later attempt says (harness.plugin_guard refuses one in a release run).
            entry.rerun = entry.rerun or (facts["why"] or "failed before a rerun")
        if facts["verdict"] is not None and (report.when == "call" or entry.verdict in ("not run", "passed")):
            entry.verdict, entry.why, entry.when = facts["verdict"], facts["why"], report.when
        if entry.rerun and facts["verdict"] is not None:
            entry.verdict, entry.why = "failed", f"rerun after a failure, which counts as a failure ({entry.rerun})"
        if report.when == "teardown":
            entry.finished = True
