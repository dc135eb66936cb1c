"""One line for the commonest newcomer mistake: the harness's options given to a pytest that did not
load the harness (run from another directory, or inside an MXNet tree with its own pytest.ini).

pytest would say only ``unrecognized arguments: --mxnet-src``. This module is registered as a
``pytest11`` entry point (pyproject.toml), so it loads in every pytest of the harness's venv before
the command line is parsed, whatever the directory; when an argument pytest does not know is one
of the harness's options, it names the fix instead. With the harness loaded those options are
known and it does nothing.
"""
from __future__ import annotations

from collections.abc import Generator

import pytest

#: Options only this harness defines (conftest.py and harness/*): their presence says the user
#: meant the harness.
HARNESS_OPTIONS = ("--mxnet-src", "--wheel", "--cuda-from-wheels", "--provenance-json", "--cmake-cache",
                   "--flavor", "--publish", "--review-page", "--gpu-reports", "--compiler-launcher")


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> Generator[None, object, object]:
    result = yield
    _, unknown = parser.parse_known_and_unknown_args(args)
    ours = [a for a in unknown if a.split("=", 1)[0] in HARNESS_OPTIONS]
    if ours:
        raise pytest.UsageError(
            f"{ours[0].split('=', 1)[0]} is an option of the MXNet release harness, which this pytest did not load "
            f"(rootdir {early_config.rootpath}): run `mxnet-release {' '.join(args)}` (from any directory), or "
            "cd to the harness checkout first")
    return result
