"""Options and the run's common fixtures of the MXNet CUDA 13 wheel harness.

The chain is  mxnet source -> configured tree -> libmxnet.so -> staged package -> wheel -> venv;
with ``--wheel PATH`` it starts at the wheel and nothing is built. Each concern is a plugin in
``harness/plugins/`` (listed below); the work itself is done by ``build_steps``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

# Every harness module is rewritten for assertions wherever it is first imported (a plugin module may
# import another's helpers), so the order of the list below is no condition of anything.
pytest.register_assert_rewrite("harness")

from build_steps.development_settings import option_dests  # noqa: E402
from build_steps.errors import UsageError  # noqa: E402
from build_steps.options import RunOptions, make_options  # noqa: E402
from harness.common import disabled_harness_plugins, disabled_plugins_message, start_sandbox  # noqa: E402
from harness.plugins.cli_options import OPTION_DESTS  # noqa: E402
from harness.exits import refuse  # noqa: E402
from harness.state import open_run_dir, start_run, the_run  # noqa: E402

#: One module per concern: a thin adapter that files its own fields of the run's state
#: (harness.state.HarnessRun) and imports no other plugin of this list (selftest/test_import_graph.py);
#: the end of the run is one table (harness.plugins.finish.FINISH). Their order here is no condition of
#: anything (selftest/test_plugin_order.py runs the gates with this list reversed and shuffled).
pytest_plugins = [
    "harness.plugins.cli_options",  # every option, declared before pytest looks for conftests (pytest.ini's -p)
    "harness.plugins.plugin_guard",  # only the harness's plugins, conftests and gate modules take part
    "harness.plugins.supervision",  # the run's processes die with it; SIGINT/SIGTERM/SIGHUP are interrupts
    "harness.plugins.run_dir",   # the run's dir: pytest's basetemp and where xdist workers meet
    "harness.plugins.ledger",    # every gate's verdict, filed once by the reporting process (also under xdist)
    "harness.plugins.collected_gates",  # every release gate collected, before -m/-k deselect (the release set's)
    "harness.plugins.wheel_pin",  # the wheel's bytes hashed once; every later step checks them
    "harness.plugins.dir_locks",  # one run per build dir and per --venv-dir
    "harness.plugins.gpu_policy",  # selected GPU gates that skipped make the run non-green
    "harness.plugins.gates",     # strict release runs, the gate table
    "harness.plugins.gate_gpus",  # each GPU gate's report carries the GPU it ran on (the JSON report's GPU runs)
    "harness.plugins.review_clock",    # the review page's clock and its --gpu-reports, checked up front
    "harness.plugins.wheel_facts",     # the wheel extracted once, the static gates' facts, the provenance report
    "harness.plugins.chain",     # source -> configure -> compile -> stage -> package, then dist/ or rejected/
    "harness.plugins.runtime",   # the throwaway venv and its probes
    "harness.plugins.publish_run",   # --publish: preflight, the release version, the final line
    "harness.plugins.macos",     # the macOS flavor: Mach-O gates in, ELF gates out, its facts
    "harness.plugins.acceptance_shards",  # the fork's acceptance shards: selection, the per-shard table
    "harness.plugins.finish",    # the end of the run: one table of rows, the exit status set once
]


# tryfirst: the run's state exists before any plugin's pytest_configure reads it, and its dir decides
# pytest's --basetemp before pytest's tmp-path plugin reads it.
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # Fail closed: -p no:<a harness plugin> (on the command line, in PYTEST_ADDOPTS or in an ini's
    # addopts) would quietly drop a check, e.g. the GPU policy or the release set.
    disabled = disabled_harness_plugins(config)
    if disabled:
        refuse(disabled_plugins_message(disabled))
    raw = {dest: config.getoption(dest) for dest in OPTION_DESTS}
    # development options registered by other plugins (--shards-file, --no-sandbox)
    raw.update({d: config.getoption(d, None) for d in option_dests() if d not in raw})
    try:
        options = make_options(raw)
    except UsageError as exc:
        refuse(exc)
    run = start_run(config, options, tuple(pytest_plugins), open_run_dir(config))
    start_sandbox(config, options, run.dir.root)


@pytest.fixture(scope="session")
def options(request) -> RunOptions:
    return the_run(request.config).options


@pytest.fixture(scope="session")
def profile(options):
    return options.profile


@pytest.fixture(scope="session")
def shared_dir(request) -> Path:
    """Where xdist workers of this run meet: run-once records, the extracted wheel, the venv."""
    path = the_run(request.config).shared
    path.mkdir(exist_ok=True)
    return path
