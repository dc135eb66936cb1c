"""What a gate's report says about its verdict: the reason lines and the user property a verdict
travels under from the process that ran the gate to the one that files it (harness.plugins.ledger)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NoReturn, cast

from build_steps.errors import NOT_JUDGED, NOT_JUDGED_EXIT, NotJudged

if TYPE_CHECKING:
    import pytest

#: The user_properties key the verdict travels under.
VERDICT_PROPERTY = "mxnet_verdict"
#: ... and those the publish gate files (tests/test_publish.py): the release set as its process
#: collected it, and why it refused (the end of the run's "publish" row reads both).
PLAN_PROPERTY = "mxnet_publish_plan"
OUTCOME_PROPERTY = "mxnet_publish"
#: ... the GPU a GPU gate ran on (harness.plugins.gate_gpus attaches it where the gate ran)
GPU_PROPERTY = "mxnet_gpu_run"
#: ... and the chain step whose failure a worker's report carries (harness.plugins.gates)
CHAIN_STEP_PROPERTY = "mxnet_chain_step"
#: The node a failed build step is reported under (``chain::configure``).
CHAIN_NODE = "chain"
#: The GPU gates' markers.
GPU_MARKS = ("gpu", "cublas")

#: NOT_JUDGED ("not judged", from build_steps.errors): the third outcome beside passed and failed,
#: the harness could not judge the wheel (the host failed, not the wheel). The ledger files it,
#: the gate table says NOT JUDGED.
__all__ = ["NOT_JUDGED", "NOT_JUDGED_EXIT", "NotJudged", "not_judged", "failure_reason", "skip_reason",
           "verdict_of", "VERDICT_PROPERTY", "PLAN_PROPERTY", "OUTCOME_PROPERTY",
           "GPU_PROPERTY", "CHAIN_STEP_PROPERTY", "CHAIN_NODE", "GPU_MARKS"]
#: NOT_JUDGED_EXIT (3, from build_steps.errors, NotJudged.exit_code): the exit status of a run where a
#: gate or step could not judge and none judged FAIL.


def not_judged(reason: str) -> NoReturn:
    """End the calling gate (or fixture) as NOT JUDGED: ``reason`` says what of the host kept it
    from judging the wheel and how to fix it (one line, e.g. "the driver 550.54 is below the
    wheel's cuBLAS floor 580: run on a host with driver >= 580"). Not a failure of the wheel:
    the run ends ERROR with exit 3 unless another gate judged FAIL, and no wheel is rejected.
    A skip would count as a failure in a release run; this does not."""
    raise NotJudged(reason)

_WORKER_HEADER = re.compile(r"^\[gw\d+\] ")


def failure_reason(text: str) -> str:
    """The line of a failure's text that names the regression (pytest's ``E`` line, else the
    first line of a bare ``pytest.fail(..., pytrace=False)`` message)."""
    lines = [ln for ln in (text or "").splitlines() if not _WORKER_HEADER.match(ln)]
    for line in lines:
        if line.startswith("E "):
            return line[2:].strip()[:300]
    stripped = [ln.strip() for ln in lines if ln.strip()]
    return (stripped or [""])[0][:300]


def skip_reason(report: pytest.TestReport) -> str:
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(report.longrepr or "")


def verdict_of(report: pytest.TestReport) -> dict[str, Any] | None:
    """The verdict the gate's own process attached to ``report`` (None for reports without one)."""
    for key, value in getattr(report, "user_properties", ()):
        if key == VERDICT_PROPERTY:
            return cast("dict[str, Any]", value)  # harness.plugins.ledger's facts
    return None
