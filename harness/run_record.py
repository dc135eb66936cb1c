"""``record_of(run)``: the one place that reads a run (its config, its shared dir) into the run
record (build_steps.report.record.RunRecord). The end of the run (harness.plugins.finish) calls it once,
after every gate reported; the reports are functions of the record (build_steps.report).
"""
from __future__ import annotations

import time
from pathlib import Path

from build_steps import gpu_reports
from build_steps.driver_stub import STUB_RECORD
from build_steps.once import load_result, load_shared
from build_steps.report.record import ChainProducts, RunRecord

from .release_scope import release_set_of
from .shard_plan import inapplicable_shard_gates, split_parts
from .state import HarnessRun

#: harness.plugins.wheel_facts' shared product: every fact the static gates judged
AUDIT_PRODUCT = "audit"


def _driver_stub(shared: Path) -> str | None:
    """harness.plugins.runtime's stand-in record: why the stub was used, None when it was not."""
    result = load_result(shared, STUB_RECORD)
    return str(result.get("why") or "?") if result and result.get("stub") else None


def record_of(run: HarnessRun) -> RunRecord:
    """The run's record: its state, its config's few facts, and its shared dir's products read once."""
    config = run.config
    shared = run.shared
    return RunRecord(
        options=run.options, entries=run.ledger.entries,
        chain=ChainProducts.from_records(run.records, run.after_records),
        pin=run.pin,
        audit=load_shared(shared, AUDIT_PRODUCT), release_set=release_set_of(run), collected=run.collected,
        selection=config.getoption("markexpr", None) or None,
        review_page=_path(config.getoption("review_page", None)),
        gpu_reports=_path(config.getoption("gpu_reports", None)),
        xdist=bool(getattr(config.option, "numprocesses", None)),
        collect_only=bool(config.option.collectonly),
        allow_gpu_skips=bool(config.getoption("allow_gpu_skips", False)),
        clock=run.clock, ended=time.monotonic(), split_parts=split_parts(run),
        excused_gpu=inapplicable_shard_gates(run, _gpu_gates_of_run(run)),
        driver_stub=_driver_stub(shared), exitstatus=run.exitstatus, placed_wheel=run.placed_wheel)


def _gpu_gates_of_run(run: HarnessRun) -> tuple[str, ...]:
    """The GPU gates of this run's own flavor's release set. Only that manifest is read: the collection
    run of ``python -m harness.release_set --write`` that makes a new flavor's first manifest has
    none to read for it (reading every CUDA flavor's failed that run before it wrote anything)."""
    if run.options is None:
        return ()
    return gpu_reports.required_gpu_gates(run.options.profile.name)


def _path(value: object) -> Path | None:
    return Path(str(value)) if value is not None else None
