"""Every command-line option of the harness, declared in one plugin that pytest.ini loads with
``-p`` (before pytest looks for conftests).

Why so early: pytest picks the conftests to import from the command line's positional arguments
before it reads the root conftest. An option it does not know yet takes no value, so in
``--mxnet-src /path/to/tree`` the tree was a positional argument and its ``conftest.py`` was imported
into the harness (issue 29). Declared here, every option's value is parsed as its value, in
``mxnet-release`` and plain ``python -m pytest`` alike, whatever the spelling. The root conftest
lists this module too, so a run given another ini still has the options (and harness.plugins.plugin_guard
then refuses any conftest that is not the harness's).
"""
from __future__ import annotations

import pytest

from build_steps.option_table import GROUPS

#: The dest names of the run's options (the first group): make_options receives exactly these.
OPTION_DESTS: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    for index, (name, description, options) in enumerate(GROUPS):
        group = parser.getgroup(name, description)
        for option in options:
            group.addoption(*option.flags, **option.kwargs)
        if index == 0:
            OPTION_DESTS[:] = [opt.dest for opt in group.options]
