"""The GPU gates' verdicts with the GPU each ran on (so reports of several GPU runners can be merged
per arch, ``build_steps.gpu_reports``), for the JSON report (build_steps.report.document.extra_sections).

Each GPU gate's report gets the GPU in ``user_properties`` where the test runs (an xdist worker
sends it to the controller with the report); the ledger files it (HarnessRun.gpu_runs).
"""
from __future__ import annotations

from collections.abc import Container, Generator

import pytest

from build_steps import gpu_reports

from ..verdicts import GPU_MARKS, GPU_PROPERTY



def _is_gpu_gate(keywords: Container[str]) -> bool:
    return any(m in keywords for m in GPU_MARKS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call" and _is_gpu_gate(item.keywords):
        funcargs = getattr(item, "funcargs", {})
        wheel = funcargs.get("wheel_path")
        report.user_properties.append((GPU_PROPERTY, {
            "gpu": gpu_reports.gpu_identity(funcargs.get("cuda_preflight")),
            "wheel": str(wheel) if wheel else None}))
    return report
