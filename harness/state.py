"""The run's state: one typed object per process (``HarnessRun``), made once in the root conftest's
pytest_configure and reached by every plugin through ``harness_run(config)``.

Each field says who writes it. A plugin writes only its own fields and reads any; the end of the
run (harness.plugins.finish) reads what the plugins filed, reads the chain's records and the pin once, and
files what each of its rows decided. No plugin keeps run state in ``config.stash`` besides this
object (the supervision's signal handlers, the plugin guard's module hashes and the directory
locks are private to their plugin and read by no other).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from build_steps.errors import UsageError
from build_steps.run_dirs import RunDir
from build_steps.gate_ledger import Clock, Ledger

from .exits import refuse

if TYPE_CHECKING:
    from build_steps.options import RunOptions
    from build_steps.pinning import WheelPin
    from build_steps.publish import ReleaseVersion
    from build_steps.run_plan import RunPlan

Mode = Literal["build", "audit"]
Role = Literal["controller", "worker"]


@dataclass
class HarnessRun:
    """Everything one process of a run knows, filed by its owner (the comment above each group)."""

    config: pytest.Config
    #: the run's options; replaced once, at session start, by a publish run's (fix_release_options)
    options: RunOptions
    #: the plugin modules the root conftest registers (conftest.py's pytest_plugins)
    plugins: tuple[str, ...]
    #: the run's dir, common to every xdist worker (build_steps.run_dirs.RunDir)
    dir: RunDir
    role: Role
    #: what the options and -m settle (build_steps.run_plan), made with the options (settle)
    plan: RunPlan
    release_fixed: bool = False

    # harness.plugins.ledger: every gate's verdict (the gate table's rows are Ledger.results)
    ledger: Ledger = field(default_factory=Ledger)
    # harness.plugins.collected_gates: nodeid -> marker names of every release gate collected, before deselection
    collected: dict[str, list[str]] = field(default_factory=dict)
    # harness.plugins.review_clock starts the run's clock; the ledger adds the gates' times
    clock: Clock | None = None
    # harness.plugins.acceptance_shards: the shard plan (selection, lanes, parallelism, split); the ledger:
    # the MXNet the shards' venv holds (from the shard gates' reports)
    shard_plan: dict[str, Any] | None = None
    shard_mxnet: dict[str, Any] | None = None
    # ... the shard gates this run collected (shard ids), and those whose gate began (id -> its
    # start, time.monotonic()): a requested shard without a row was cut short or never started
    shard_requested: list[str] = field(default_factory=list)
    shard_started: dict[str, float] = field(default_factory=dict)
    # the ledger: those whose gate ended without passing before a row was filed (id -> the first line of why)
    shard_reported: dict[str, str] = field(default_factory=dict)
    # harness.plugins.gates: the session stopped because a chain step failed (not a Ctrl-C)
    stopped_for_step: bool = False
    # harness.plugins.publish_run: the release a --publish run chose at session start, and its tree
    release: ReleaseVersion | None = None
    release_src: Path | None = None
    # harness.plugins.ledger, from the publish gate's report: the release set it collected (None: it did
    # not pass), and what it or the end of the run's publish row decided (None: it did not run)
    publish_plan: dict[str, Any] | None = None
    publish_outcome: dict[str, Any] | None = None

    # harness.plugins.finish: read once at the end of the run, then each row's product
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    after_records: dict[str, dict[str, Any]] = field(default_factory=dict)
    pin: WheelPin | None = None
    #: the JSON report's document (the page renders it); None when no report was wanted
    doc: dict[str, Any] | None = None
    #: --provenance-json holds ``doc`` (the shard table adds its key to it)
    json_written: bool = False
    #: the wheel this run built, where the gates' verdict put it (dist/ or set aside)
    placed_wheel: str | None = None
    #: (nodeid, why) of the GPU gates that were selected and skipped
    skipped_gpu: list[tuple[str, str]] = field(default_factory=list)
    #: the gates the host kept from judging the wheel (nodeid, why): harness.plugins.finish's verdict row
    not_judged: list[tuple[str, str]] = field(default_factory=list)
    #: lines for the end of the gate table, and for the summary's own sections (title -> lines)
    report_lines: list[str] = field(default_factory=list)
    sections: dict[str, list[str]] = field(default_factory=dict)
    #: the exit status the finish table settled on (None until it ran)
    exitstatus: int | None = None

    # Views of the ledger, each in the words its report used before the stores were one (issue 47).
    @property
    def gpu_runs(self) -> dict[str, dict[str, Any]]:
        """nodeid -> the GPU gate's verdict and the GPU it ran on."""
        return {n: e.gpu_run for n, e in self.ledger.entries.items() if e.gpu_run is not None}

    @property
    def provenance_verdicts(self) -> dict[str, tuple[str, str]]:
        """nodeid -> (outcome, why) of every provenance gate."""
        return {n: e.provenance for n, e in self.ledger.entries.items() if e.provenance is not None}

    @property
    def shard_rows(self) -> dict[str, dict[str, Any]]:
        """shard id -> its row of the shard table."""
        return {e.shard_id: e.shard_row for e in self.ledger.entries.values() if e.shard_row is not None}

    @property
    def mode(self) -> Mode:
        """``audit`` with ``--wheel PATH`` (nothing is built), else ``build``."""
        return "audit" if self.options.wheel is not None else "build"

    @property
    def is_worker(self) -> bool:
        return self.role == "worker"

    @property
    def shared(self) -> Path:
        """Where xdist workers of this run meet: run-once records, the pinned and extracted wheel."""
        return self.dir.shared


_RUN_KEY = pytest.StashKey[HarnessRun]()


def open_run_dir(config: pytest.Config) -> RunDir:
    """The run's dir, made once in pytest_configure before pytest's tmp-path plugin reads
    ``--basetemp`` (build_steps.run_dirs.RunDir); a worker gets its controller's (harness.plugins.run_dir)."""
    if hasattr(config, "workerinput"):
        return RunDir(Path(config.workerinput[RunDir.WORKER_INPUT]), given=True)
    try:
        run_dir = RunDir.make(config.option.basetemp, keep=int(config.getini("tmp_path_retention_count")) - 1)
    except UsageError as exc:
        refuse(exc)
    # pytest's basetemp (tmp_path, xdist's per-worker dirs) inside the run's dir, beside the shared dir.
    config.option.basetemp = str(run_dir.root / "tmp")
    return run_dir



def start_run(config: pytest.Config, options: RunOptions, plugins: tuple[str, ...], run_dir: RunDir) -> HarnessRun:
    """The run's state, once per process (the root conftest's pytest_configure)."""
    role: Role = "worker" if hasattr(config, "workerinput") else "controller"
    run = HarnessRun(config=config, options=options, plugins=tuple(plugins), dir=run_dir, role=role,
                     plan=plan_of(config, options))
    config.stash[_RUN_KEY] = run
    return run


def plan_of(config: pytest.Config, options: RunOptions) -> RunPlan:
    """The run plan of ``options``: made with them, in pytest_configure and when a publish run's
    options are fixed (harness.common.fix_release_options), never anywhere else."""
    from build_steps.run_plan import make_plan
    return make_plan(options, config.option.markexpr, Path(config.invocation_params.dir))


def harness_run(config: pytest.Config) -> HarnessRun | None:
    """This run's state; None when pytest_configure refused the run before making it."""
    return config.stash.get(_RUN_KEY, None)


def the_run(config: pytest.Config) -> HarnessRun:
    """This run's state, where it must exist (every hook after the root conftest's configure)."""
    return config.stash[_RUN_KEY]
