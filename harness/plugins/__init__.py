"""The harness's pytest plugins, one module per concern: the root ``conftest.py``'s
``pytest_plugins`` lists them with what each owns (``cli_options`` and ``plugin_guard`` are also
loaded early with pytest.ini's ``-p``; ``usage_hint`` is the ``pytest11`` entry point). A plugin
imports no other plugin (selftest/test_import_graph.py): what they share is the plain modules one
level up, in ``harness/``.

PYTEST_DONT_REWRITE: this file (it has no asserts) is imported before the root conftest registers
``harness`` for assertion rewriting (pytest.ini's ``-p harness.plugins.cli_options``); the marker
keeps pytest from warning that it cannot be rewritten (a crash under ``-W error``).
"""
