"""The harness's pytest plugins, one per concern, registered by the root ``conftest.py`` (its list
says what each owns); the work itself is ``build_steps``' (plain functions, no pytest).

PYTEST_DONT_REWRITE: this file (it has no asserts) is imported before the root conftest registers
``harness`` for assertion rewriting (pytest.ini's ``-p harness.cli_options``, ``mxnet-release``);
the marker keeps pytest from warning that it cannot be rewritten (a crash under ``-W error``).
"""
