"""Run an expensive step once for all pytest-xdist workers, and remember failures.

The pattern is pytest-xdist's documented one: every worker runs the session fixture, the first to
take a file lock does the work and writes a small JSON record, the others wait on the lock and
read the record. A failure is recorded too, so a failed build is reported once, in full, by the
worker that ran it, and the others report a one-line pointer instead of building again.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from filelock import FileLock

from .errors import BuildInterrupted, HarnessError


class StepFailedElsewhere(HarnessError):
    """The step failed in the worker that ran it; the full report is in that worker's output."""


def run_once(shared_dir: Path, key: str, produce: Callable[[], dict]) -> dict:
    """Return ``produce()``'s JSON-able dict, computed by exactly one process per ``shared_dir``.

    ``shared_dir`` must be common to all workers of one test run (the parent of pytest's
    basetemp under xdist), so a second ``pytest`` run does the work again; caching across runs
    is each step's own business (an unchanged tree is a no-op compile).
    """
    shared_dir.mkdir(parents=True, exist_ok=True)
    record = shared_dir / f"{key}.json"
    with FileLock(str(record) + ".lock"):
        if record.exists():
            data = json.loads(record.read_text())
            if data.get("failed"):
                raise StepFailedElsewhere(
                    f"step {key!r} already failed in this run (reported once, above): {data['error']}")
            return data["result"]
        try:
            result = produce()
        except BaseException as exc:
            first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
            record.write_text(json.dumps({"failed": True, "error": first_line,
                                          "interrupted": isinstance(exc, BuildInterrupted)}))
            raise
        record.write_text(json.dumps({"failed": False, "result": result}))
        return result
