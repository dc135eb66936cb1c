"""The run's dir (harness.state.RunDir, made with the run's state): handed to xdist workers through
``workerinput``, removed or kept at the very end of the run."""
from __future__ import annotations

import pytest

from .state import RunDir, harness_run


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: each worker meets the others in the controller's run dir."""
    node.workerinput[RunDir.WORKER_INPUT] = str(harness_run(node.config).dir.root)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    run = harness_run(config)
    if run is not None and not run.is_worker:
        run.dir.finish(config, run.exitstatus)
