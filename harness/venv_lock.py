"""One run per ``--venv-dir``: a second run that names the same directory is refused up front.

The lock is taken by the process that reports the run (the xdist controller, before any worker
starts) and held to the end of the session, so the workers of one run share the venv while
another run cannot delete or reinstall it under them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from .common import harness_options, is_worker

_LOCK_KEY = pytest.StashKey[tuple]()


def lock_path(venv_dir: Path) -> Path:
    return venv_dir.parent / f".{venv_dir.name}.harness-lock"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    venv_dir = harness_options(config).venv_dir
    if venv_dir is None or is_worker(config) or config.option.collectonly:
        return
    path = lock_path(venv_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    owner = path.with_suffix(".owner")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        who = owner.read_text().strip() if owner.exists() else "another process"
        raise pytest.UsageError(
            f"--venv-dir {venv_dir} is in use by another harness run ({who}); two runs sharing a "
            "venv would reinstall and delete it under each other. Give this run its own --venv-dir "
            "(or leave it out for a temporary one), or wait for the other run to finish") from None
    owner.write_text(f"pid {os.getpid()}\n")
    config.stash[_LOCK_KEY] = (lock, owner)


def pytest_unconfigure(config):
    held = config.stash.get(_LOCK_KEY, None)
    if held:
        lock, owner = held
        owner.unlink(missing_ok=True)
        lock.release()
