"""One run per build dir and per ``--venv-dir``: a second run naming either is refused up front.

The locks (build_steps.run_lock) are taken by the process that reports the run (the xdist
controller, before any worker starts) and held to the end of the session, so the workers of one
run share the build dir and the venv while another run can neither configure under this one's
compile nor delete or reinstall the venv under it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from build_steps import filesystem, run_lock
from build_steps.errors import UsageError

from .exits import refuse
from .common import say
from .state import HarnessRun, the_run

_LOCKS_KEY = pytest.StashKey[list[run_lock.HeldLock]]()


def _can_hold_lock(run: HarnessRun, build_dir: Path) -> bool:
    """Whether the lock inside the build dir can be made (where the build dir is, or would be
    made): a build dir that cannot be written (a read-only tree's default one) is preflight's
    refusal, in its words, not the lock's; so is one in the source tree, which gets no lock file."""
    from build_steps.preflight import build_dir_in_tree
    return filesystem.writable(build_dir) is None and not build_dir_in_tree(run.plan.tree(), build_dir)


def _register_places(config: pytest.Config, build_dir: Path | None) -> None:
    """Where this run writes, each with what moves it: a full or read-only disk's advice."""
    from build_steps.cuda_root import default_cache_dir
    filesystem.forget_places()
    filesystem.place(default_cache_dir(), "MXNET_HARNESS_CACHE")
    if build_dir is not None:
        filesystem.place(build_dir, "--build-dir=DIR")
    venv_dir = the_run(config).options.venv_dir
    if venv_dir is not None:
        filesystem.place(venv_dir, "--venv-dir=DIR")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    run = the_run(config)
    # the build dir this run would build in; None when it builds nothing (--wheel) or names no
    # MXNet tree (collection then says why)
    build_dir = run.plan.paths.build_dir if run.plan.paths is not None else None
    _register_places(config, build_dir)
    if run.is_worker or config.option.collectonly:
        return
    options = run.options
    wanted: list[tuple[Path, str, str, bool]] = []
    if build_dir is not None and _can_hold_lock(run, build_dir):
        wanted.append((build_dir, "build dir",
                       "Two runs on one build dir configure and compile over each other. Wait for it to "
                       "finish (or stop it), or give this run its own --build-dir=DIR", True))
    if options.venv_dir is not None:
        wanted.append((options.venv_dir, "--venv-dir",
                       "Two runs sharing a venv would reinstall and delete it under each other. Give this "
                       "run its own --venv-dir (or leave it out for a temporary one), or wait for the "
                       "other run to finish", False))
    held = config.stash.setdefault(_LOCKS_KEY, [])
    for directory, what, fix, inside in wanted:
        try:
            lock = run_lock.take(directory, what, fix, inside=inside)
        except UsageError as exc:
            _release(held)
            refuse(exc)
        held.append(lock)
        if lock.note:
            say(f"==> {lock.note}")


def _release(held: list[run_lock.HeldLock]) -> None:
    while held:
        held.pop().release()


def pytest_unconfigure(config: pytest.Config) -> None:
    _release(config.stash.get(_LOCKS_KEY, []))
