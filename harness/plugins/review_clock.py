"""The release review page of every run that has a wheel (build_steps.report.review_page renders it).

This plugin checks ``--gpu-reports`` up front and keeps the run's clock (HarnessRun.clock: the
wall time, and the gates' setup and call times for the page's timeline). What the page shows is
gathered into the JSON report's ``review`` section by build_steps.report.document, and the end of the run
(harness.plugins.finish) writes the page: to ``--review-page PATH``, else into the build's
``harness-logs/review.html`` and beside the ``--provenance-json`` report (``report.html`` for
``report.json``).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from build_steps.gate_ledger import Clock

from ..exits import refuse
from ..state import HarnessRun, the_run


def pytest_configure(config: pytest.Config) -> None:
    reports = config.getoption("gpu_reports", None)
    if reports is not None and not Path(reports).is_dir():
        refuse(f"--gpu-reports {reports}: no such directory; pass the directory the "
               "GPU runners' --provenance-json reports were collected in")
    config.pluginmanager.register(_ClockKeeper(the_run(config)), "mxnet-review-clock")


class _ClockKeeper:
    """Starts the run's clock; the ledger (the one listener to test reports) adds the gates' times."""

    def __init__(self, run: HarnessRun) -> None:
        self.run = run

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.run.clock = Clock(start=time.monotonic())
