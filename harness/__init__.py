"""The harness's pytest plugins, one per concern; the root ``conftest.py`` registers them.

- ``common``: the run's state (``harness_run``: options, run dir, report lines) and where xdist
  workers meet (no hooks of its own);
- ``run_dir``: the run's dir, made in pytest_configure and handed to xdist workers;
- ``gates``: strict release runs (a skipped gate fails) and the gate table at the end;
- ``wheel_facts``: the wheel under test, extracted once, the facts the static gates read, and the
  provenance report;
- ``steps``: the build chain as one table (source, CUDA root, configure, compile, stage, package): each
  row's session fixture, record, error name and summary label;
- ``chain``: the steps' session fixtures (from ``steps``), the checks before a build, and where the
  wheel goes after the gates (dist/ or dist/rejected/);
- ``runtime``: the throwaway venv and the probes that run in its interpreter;
- ``publish_plugin``: the publish preflight, the gate's view of every other verdict, the final line;
- ``ledger``: every gate's verdict and reason, decided where it ran, filed once by the reporting
  process (the same words with ``-n 2`` as serially);
- ``release_set``: the flavor's release set from its committed manifest (build_steps/release_sets/),
  for publish; as ``python -m harness.release_set --write|--check`` it makes or checks the manifests;
- ``wheel_pin``: the wheel's bytes hashed once; the end-of-run check that they did not change;
- ``dir_locks``: one run per build dir and per ``--venv-dir``; ``gpu_policy``: skipped GPU gates are not green.

The work itself is done by ``build_steps`` (plain functions, no pytest); the fixtures here are
thin wrappers that call one step and return its product.

PYTEST_DONT_REWRITE: this package file (only this one: it has no asserts) is imported before the
root conftest registers ``harness`` for assertion rewriting, by pytest.ini's ``-p harness.cli_options``
and by ``mxnet-release``; the marker keeps pytest from warning that it cannot be rewritten (a crash
under ``-W error``). Its modules are rewritten as before.
"""
