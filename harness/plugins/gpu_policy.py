"""A run that selected GPU gates on a host without a GPU is not green.

Outside ``-m release`` a GPU gate skips with its reason (no GPU, no driver); that is a gate that
verified nothing, so a run in which it happened ends non-zero with a line that says so, unless
the user asked for it with ``--allow-gpu-skips`` (a CPU-only runner that selects GPU gates on
purpose). The end of the run (harness.plugins.finish's GPU policy row) reads the verdict ledger, so it
holds under xdist too; this plugin says it in the summary.
"""
from __future__ import annotations

import pytest

from ..state import the_run


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: pytest.ExitCode,
                            config: pytest.Config) -> None:
    skipped = the_run(config).skipped_gpu
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
