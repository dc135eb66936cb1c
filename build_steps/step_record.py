"""The harness's own step log: one line per executed configure, compile or package step.

Written into the step's output dir (``.harness-steps.log``); how the selftests count how often a
step really ran (once across pytest-xdist workers, never again on a resumed build).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .own_files import open_log

STEP_LOG = ".harness-steps.log"


def record_step(build_dir: Path, step: str, detail: str = "") -> None:
    """Append one line per executed step: how the selftests count configure/compile runs."""
    # the dir is writable to the step's own sandbox: never through a link planted there
    with open_log(Path(build_dir) / STEP_LOG, "a") as fh:
        fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} {step} {detail}\n")
