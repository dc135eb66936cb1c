"""A run's processes live and die with it (build_steps.supervise), and SIGINT, SIGTERM and SIGHUP are
interrupts, the first one only (build_steps.interrupts)."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from build_steps import supervise
from build_steps.interrupts import Interrupts

_KEY = pytest.StashKey[dict[str, Any]]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    state = config.stash.setdefault(_KEY, {})
    if threading.current_thread() is threading.main_thread():
        state["interrupts"] = interrupts = Interrupts()
        interrupts.install()
    if not hasattr(config, "workerinput") and not config.option.collectonly and supervise.current() is None:
        state["supervision"] = supervise.start()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_KEY, {})
    if state.pop("supervision", None) is not None:
        supervise.finish()
    interrupts = state.pop("interrupts", None)
    if interrupts is not None:
        interrupts.restore()
