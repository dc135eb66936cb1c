"""A run that selected GPU gates on a host without a GPU is not green.

Outside ``-m release`` a GPU gate skips with its reason (no GPU, no driver); that is a gate that
verified nothing, so a run in which it happened ends non-zero with a line that says so, unless
the user asked for it with ``--allow-gpu-skips`` (a CPU-only runner that selects GPU gates on
purpose). Read from the verdict ledger, so it holds under xdist too.
"""
from __future__ import annotations

import pytest

from .common import is_worker
from .ledger import ledger_of

GPU_MARKERS = ("gpu", "cublas")
_SKIPPED_KEY = pytest.StashKey[list]()


def skipped_gpu_gates(config) -> list:
    return sorted((nodeid, e.why) for nodeid, e in ledger_of(config).entries.items()
                  if e.verdict == "skipped" and any(m in e.markers for m in GPU_MARKERS))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if is_worker(config):
        return
    skipped = skipped_gpu_gates(config)
    config.stash[_SKIPPED_KEY] = skipped
    if skipped and not config.getoption("allow_gpu_skips", False) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = config.stash.get(_SKIPPED_KEY, [])
    if not skipped:
        return
    why = skipped[0][1]
    if config.getoption("allow_gpu_skips", False):
        terminalreporter.write_line(
            f"GPU gates: {len(skipped)} selected and skipped ({why}); accepted with --allow-gpu-skips",
            yellow=True)
        return
    terminalreporter.write_line(
        f"NOT GREEN: {len(skipped)} GPU gate(s) were selected but did not run ({why}). Run them on a "
        "GPU host, leave them out (-m \"... and not gpu and not cublas\"), or accept the skips "
        "explicitly with --allow-gpu-skips", red=True, bold=True)
