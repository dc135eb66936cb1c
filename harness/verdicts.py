"""What a gate's report says about its verdict: the reason lines and the user property a verdict
travels under from the process that ran the gate to the one that files it (harness.ledger)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import pytest

#: The user_properties key the verdict travels under.
VERDICT_PROPERTY = "mxnet_verdict"

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
            return cast("dict[str, Any]", value)  # harness.ledger's facts
    return None
