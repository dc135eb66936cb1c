"""The verdict ledger, the run's one record: every gate's outcome and the facts of its kind (the
GPU it ran on, its shard's row), filed once, in the process that reports the run. It is the only
listener to test reports (selftest/test_import_graph.py holds that).

The verdict, its one-line reason and the facts are decided where the gate ran (the xdist worker, or
the only process) and travel with the report (``user_properties`` is serialized by xdist: pytest-
xdist's own channel); the controller, or the single process, files them. So the gate table, the
provenance report, the JSON, the shard table and the publish row read the same words with ``-n 2``
as serially: a reason taken from the report's text on the controller would start with xdist's
``[gw1] linux -- Python ...`` header instead.
"""
from __future__ import annotations

from collections.abc import Generator
from typing import Any, cast

import pytest

from build_steps.errors import HarnessError, NotJudged
from build_steps.gate_ledger import Entry

from ..common import LIVE
from ..shard_plan import SHARD_GATE
from ..state import HarnessRun, the_run
from ..verdicts import (CHAIN_NODE, CHAIN_STEP_PROPERTY, GPU_MARKS, GPU_PROPERTY, NOT_JUDGED, OUTCOME_PROPERTY,
                       PLAN_PROPERTY, VERDICT_PROPERTY, failure_reason, skip_reason, verdict_of)

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

    # tryfirst makes this the outermost wrapper: it sees the report after harness.plugins.gates turned a
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
                # A HarnessError's message is its explanation (harness.plugins.gates shows it without the
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

    # A wrapper, tryfirst: what it does before its yield comes before every plain listener (the
    # terminal reporter, the cache's, the JSON report's): they see a chain step's report under the
    # step's name and the progress line resumed.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        if self.reporting:
            _file_under_its_step(report)
        # before the terminal reporter writes the result letter (build output ended its line)
        LIVE.resume_progress_line(report.nodeid)
        clock = self.run.clock
        if clock is not None and report.when in ("setup", "call"):
            # the gates' summed setup and call times (the review page's timeline)
            setattr(clock, report.when, getattr(clock, report.when) + float(getattr(report, "duration", 0) or 0))
        # Runs in the worker and again on the controller; only the reporting process files.
        if self.reporting:
            self._file(report)
        return (yield)

    def _file(self, report: pytest.TestReport) -> None:
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
            # whatever a later attempt says (harness.plugins.plugin_guard refuses one in a release run).
            entry.rerun = entry.rerun or (facts["why"] or "failed before a rerun")
        if facts["verdict"] is not None and (report.when == "call" or entry.verdict in ("not run", "passed")):
            entry.verdict, entry.why, entry.when = facts["verdict"], facts["why"], report.when
        if entry.rerun and facts["verdict"] is not None:
            entry.verdict, entry.why = "failed", f"rerun after a failure, which counts as a failure ({entry.rerun})"
        if report.when == "teardown":
            entry.finished = True
        if report.when == "call" or not report.passed:
            _file_provenance(entry, report, facts)
            _file_gpu_run(entry, report, facts)
        _file_shard(self.run, entry, report)


def _file_under_its_step(report: pytest.TestReport) -> None:
    """A failed build step's report, filed under ``chain::<step>`` (harness.plugins.gates marks it where
    the gate ran): the gate did not fail, it never ran."""
    step = next((v for k, v in report.user_properties if k == CHAIN_STEP_PROPERTY), None)
    if step is not None:
        report.nodeid = f"{CHAIN_NODE}::{step}"
        report.location = (report.location[0], None, f"build step {step}")


def _why(report: pytest.TestReport, facts: dict[str, Any]) -> str:
    # The reason decided where the gate ran: the same with -n 2 as serially.
    return "" if report.passed else (facts.get("why") or failure_reason(getattr(report, "longreprtext", "") or ""))


def _file_provenance(entry: Entry, report: pytest.TestReport, facts: dict[str, Any]) -> None:
    """A static gate's (outcome, why) for the provenance report (harness.plugins.finish.build_report)."""
    if "provenance" in report.keywords and (report.when == "call" or entry.provenance is None or not report.passed):
        entry.provenance = (report.outcome, _why(report, facts))


def _file_gpu_run(entry: Entry, report: pytest.TestReport, facts: dict[str, Any]) -> None:
    """A GPU gate's verdict with the GPU it ran on (so reports of several GPU runners merge per arch)."""
    if not any(m in report.keywords for m in GPU_MARKS):
        return
    props = cast("dict[str, Any]", dict(report.user_properties).get(GPU_PROPERTY) or {})
    # pytest says "failed" for a gate that raised NotJudged; the ledger's verdict says the host could
    # not judge it, and gpu_reports must not count the host's fault as the wheel's failure
    verdict = NOT_JUDGED if facts.get("verdict") == NOT_JUDGED else report.outcome
    if report.when == "call" or entry.gpu_run is None or not report.passed:
        entry.gpu_run = {"verdict": verdict, "message": _why(report, facts), "gpu": props.get("gpu"),
                         "wheel": props.get("wheel")}


def _file_shard(run: HarnessRun, entry: Entry, report: pytest.TestReport) -> None:
    """An acceptance shard gate's row of the shard table (the end of the run writes the table);
    a report without the gate's properties (its setup failed, or xdist reports its worker crashed)
    is found by its node id."""
    props: dict[str, Any] = dict(report.user_properties)
    shard = props.get("acceptance_shard") or _shard_of(run, report.nodeid)
    if shard is None or report.when == "teardown":
        return
    entry.shard_id = shard["id"]
    run.shard_mxnet = props.get("acceptance_mxnet") or run.shard_mxnet
    # why in the words the gate's own process filed (a HarnessError's first line, pytest's E line, the
    # skip's reason): the first line of a setup error's traceback is the fixture's source and locals
    # ("options = RunOptions(profile=Profile(..." for an install the host kept from judging)
    facts = verdict_of(report) or {}
    text = getattr(report, "longreprtext", "") or ""
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
    why = (facts.get("why") or next((ln.strip() for ln in text.splitlines() if ln.strip()), ""))[:300]
    if not report.passed:
        # its gate ended (a setup error, or xdist's report of a crashed worker): not cut short
        run.shard_reported.setdefault(shard["id"], why)
    if "acceptance_result" in props:
        entry.shard_row = props["acceptance_result"]
    elif not report.passed and entry.shard_row is None and (props or report.when != "setup"):
        # a setup error without the gate's properties gets its row only where the table is
        # written anyway (harness.shard_plan.unreported_rows): a run whose build failed has none
        entry.shard_row = {"id": shard["id"], "lane": shard["lane"], "seconds": 0.0, "log": "",
                           "result": "SKIPPED" if report.skipped else "NOT_RUN",
                           "summary": "", "reason": why, "failing": []}


def _shard_of(run: HarnessRun, nodeid: str) -> dict[str, str] | None:
    """{id, lane} of the shard gate ``nodeid`` names, None for any other gate."""
    m = SHARD_GATE.search(nodeid)
    suite = (run.shard_plan or {}).get("suite")
    shard = suite.by_id().get(m.group("id")) if m and suite is not None else None
    return {"id": shard.id, "lane": shard.lane} if shard is not None else None
