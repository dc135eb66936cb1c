"""The run's dir (build_steps.run_dirs.RunDir, made with the run's state): handed to xdist workers through
``workerinput``, removed or kept at the very end of the run."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from build_steps.run_dirs import RunDir

from ..state import harness_run, the_run

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: WorkerController) -> None:
    """pytest-xdist: each worker meets the others in the controller's run dir."""
    # the controller's run exists: its pytest_configure made it before xdist starts a worker
    node.workerinput[RunDir.WORKER_INPUT] = str(the_run(node.config).dir.root)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    run = harness_run(config)
    if run is not None and not run.is_worker:
        status = run.exitstatus  # None: refused before its session started, nothing ran
        run.dir.finish(green=status is None or (
            status == 0 and config.getini("tmp_path_retention_policy") == "failed"))
