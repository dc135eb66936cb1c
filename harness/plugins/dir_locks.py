"""One run per build dir and per ``--venv-dir``: a second run naming either is refused up front.

The locks (build_steps.run_lock) are taken by the process that reports the run (the xdist
controller, before any worker starts) and held to the end of the session, so the workers of one
run share the build dir and the venv while another run can neither configure under this one's
compile nor delete or reinstall the venv under it.
"""
from __future__ import annotations

import pytest

from build_steps import run_lock
from build_steps.errors import UsageError

from ..common import say
from ..exits import refuse
from ..state import the_run

_LOCKS_KEY = pytest.StashKey[list[run_lock.HeldLock]]()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    run = the_run(config)
    # the build dir this run would build in; None when it builds nothing (--wheel) or names no
    # MXNet tree (collection then says why)
    build_dir = run.plan.paths.build_dir if run.plan.paths is not None else None
    run_lock.register_places(build_dir, run.options.venv_dir)
    if run.is_worker or config.option.collectonly:
        return
    held = config.stash.setdefault(_LOCKS_KEY, [])
    try:
        held += run_lock.take_run_locks(build_dir, run.plan.source, run.options.venv_dir, say)
    except UsageError as exc:
        refuse(exc)


def pytest_unconfigure(config: pytest.Config) -> None:
    run_lock.release_all(config.stash.get(_LOCKS_KEY, []))
