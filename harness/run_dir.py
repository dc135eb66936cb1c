"""The run's dir (harness.common.RunDir): made before pytest's tmp-path plugin reads ``--basetemp``,
handed to xdist workers through ``workerinput``, removed or kept at the very end of the run."""
from __future__ import annotations

import pytest

from .common import RunDir, is_worker, open_run_dir

_RUN_DIR_KEY = pytest.StashKey[RunDir]()


def run_dir_of(config) -> RunDir:
    return config.stash[_RUN_DIR_KEY]


# tryfirst: the run's dir decides pytest's --basetemp, which pytest's tmp-path plugin reads in its own.
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.stash[_RUN_DIR_KEY] = open_run_dir(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: each worker meets the others in the controller's run dir."""
    node.workerinput[RunDir.WORKER_INPUT] = str(run_dir_of(node.config).root)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    result = yield
    # after every plugin's sessionfinish: the exit status they settled on
    run_dir_of(session.config).exitstatus = session.exitstatus
    return result


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    run = config.stash.get(_RUN_DIR_KEY, None)
    if run is not None and not is_worker(config):
        run.finish(config)
