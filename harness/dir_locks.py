"""One run per build dir and per ``--venv-dir``: a second run naming either is refused up front.

The locks (build_steps.run_lock) are taken by the process that reports the run (the xdist
controller, before any worker starts) and held to the end of the session, so the workers of one
run share the build dir and the venv while another run can neither configure under this one's
compile nor delete or reinstall the venv under it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from build_steps import filesystem, run_lock, source
from build_steps.errors import UsageError

from .common import harness_options, is_worker, say

_LOCKS_KEY = pytest.StashKey[list]()


def build_dir_of(config) -> Path | None:
    """The build dir this run would build in, or None when it builds nothing (``--wheel``) or
    names no MXNet tree (collection then says why)."""
    from .steps import BuildPaths
    options = harness_options(config)
    if options.wheel is not None:
        return None
    try:
        src = source.resolve_source(options.mxnet_src, Path(config.invocation_params.dir))
    except UsageError:
        return None
    return BuildPaths(options, src).build_dir


def _writable_parent(path: Path) -> bool:
    """Whether the lock beside ``path`` can be made (else preflight refuses the build dir)."""
    return filesystem.writable(path.parent) is None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    if is_worker(config) or config.option.collectonly:
        return
    options = harness_options(config)
    wanted = []
    build_dir = build_dir_of(config)
    if build_dir is not None and _writable_parent(build_dir):
        wanted.append((build_dir, "build dir",
                       "Two runs on one build dir configure and compile over each other. Wait for it to "
                       "finish (or stop it), or give this run its own --build-dir=DIR"))
    if options.venv_dir is not None:
        wanted.append((options.venv_dir, "--venv-dir",
                       "Two runs sharing a venv would reinstall and delete it under each other. Give this "
                       "run its own --venv-dir (or leave it out for a temporary one), or wait for the "
                       "other run to finish"))
    held = config.stash.setdefault(_LOCKS_KEY, [])
    for directory, what, fix in wanted:
        try:
            lock = run_lock.take(directory, what, fix)
        except UsageError as exc:
            _release(held)
            raise pytest.UsageError(str(exc)) from None
        held.append(lock)
        if lock.note:
            say(f"==> {lock.note}")


def _release(held: list) -> None:
    while held:
        held.pop().release()


def pytest_unconfigure(config):
    _release(config.stash.get(_LOCKS_KEY, []))
