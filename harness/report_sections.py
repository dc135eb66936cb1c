"""The GPU gates' verdicts with the GPU each ran on (so reports of several GPU runners can be merged
per arch, ``build_steps.gpu_reports``), for the JSON report (harness.report_doc.extra_sections).

Each GPU gate's report gets the GPU in ``user_properties`` where the test runs (an xdist worker
sends it to the controller with the report); the controller files them in HarnessRun.gpu_runs.
"""
from __future__ import annotations

from collections.abc import Container, Generator
from typing import Any, cast

import pytest

from build_steps import gpu_reports

from .state import HarnessRun, the_run
from .verdicts import NOT_JUDGED, failure_reason, verdict_of

_GPU_MARKS = ("gpu", "cublas")
_PROP = "mxnet_gpu_run"


def _is_gpu_gate(keywords: Container[str]) -> bool:
    return any(m in keywords for m in _GPU_MARKS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call" and _is_gpu_gate(item.keywords):
        funcargs = getattr(item, "funcargs", {})
        wheel = funcargs.get("wheel_path")
        report.user_properties.append((_PROP, {
            "gpu": gpu_reports.gpu_identity(funcargs.get("cuda_preflight")),
            "wheel": str(wheel) if wheel else None}))
    return report


def _record(runs: dict[str, dict[str, Any]], report: pytest.TestReport) -> None:
    props = cast("dict[str, Any]", dict(report.user_properties).get(_PROP) or {})
    facts = verdict_of(report) or {}
    why = ""
    if not report.passed:
        # The reason decided where the gate ran (harness.ledger): under -n 2 the report's text on
        # the controller starts with the worker's banner, and a skip's is the longrepr tuple.
        why = facts.get("why") or failure_reason(getattr(report, "longreprtext", "") or "")
    # pytest says "failed" for a gate that raised NotJudged; the ledger's verdict says the host could
    # not judge it, and gpu_reports must not count the host's fault as the wheel's failure
    verdict = NOT_JUDGED if facts.get("verdict") == NOT_JUDGED else report.outcome
    if report.when == "call" or report.nodeid not in runs or not report.passed:
        runs[report.nodeid] = {"verdict": verdict, "message": why, "gpu": props.get("gpu"),
                               "wheel": props.get("wheel")}


class _Collector:
    """Files HarnessRun.gpu_runs. Registered on every process: reports reach the controller's hook
    with ``config`` unset, so the collector holds the run itself."""

    def __init__(self, run: HarnessRun) -> None:
        self.run = run

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if _is_gpu_gate(report.keywords) and not (report.when != "call" and report.passed):
            _record(self.run.gpu_runs, report)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Collector(the_run(config)), "mxnet-gpu-runs")
