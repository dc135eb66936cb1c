"""The one place a pytest run of the harness is refused: a build_steps.errors.UsageError (or the
words of one) becomes pytest's usage error, which pytest prints as one ``ERROR:`` line and ends
with exit 4 (``UsageError.exit_code``, build_steps.errors.REFUSED), no traceback, before the build.

The other exits have their one place too: a command's status is ``build_steps.errors.exit_status``
(harness.cli), and a run's is set once, by the end of the run's table (harness.plugins.finish).
selftest/test_errors_module.py holds that nothing else makes a pytest.UsageError, calls pytest.exit
or sets the session's exit status. This module imports nothing of the harness's plugins: the
plugin guard, loaded with ``-p`` before any conftest, refuses through it too.
"""
from __future__ import annotations

from typing import NoReturn

import pytest

from build_steps.errors import REFUSED, UsageError

# pytest's number for a usage error is the harness's "refused before the build": one status, two names
assert int(pytest.ExitCode.USAGE_ERROR) == REFUSED == UsageError.exit_code


def refuse(cause: str | UsageError) -> NoReturn:
    """End the run before its build: ``cause``'s words as pytest's usage error (exit 4). Called
    while handling another exception, that one is not shown (its message is ``cause``)."""
    raise pytest.UsageError(str(cause)) from None
