"""The harness's pytest side: its plugins in ``harness/plugins/`` (one per concern, registered by
the root ``conftest.py``, whose list says what each owns) and, here, the plain modules they share
(``state``, ``run_record``, ``verdicts``, ...) and the ``mxnet-release`` command (``cli``); the
work itself is ``build_steps``' (plain functions, no pytest).

PYTEST_DONT_REWRITE: this file (it has no asserts) is imported before the root conftest registers
``harness`` for assertion rewriting (pytest.ini's ``-p harness.plugins.cli_options``, ``mxnet-release``);
the marker keeps pytest from warning that it cannot be rewritten (a crash under ``-W error``).
"""
