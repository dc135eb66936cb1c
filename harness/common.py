"""What every plugin of the harness shares: the run's options (its state is harness.state), where
xdist workers meet, the checks of the plugin list, and live progress past pytest's capture."""
from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from build_steps.errors import SandboxUnavailable
from build_steps.options import RunOptions

from .exits import refuse
from .state import harness_run, plan_of, the_run


def start_sandbox(config: pytest.Config, options: RunOptions, run_dir: Path) -> None:
    """Once per process: the sandbox on (or off under --no-sandbox) with the run dir hidden from it;
    a host where none can be made refuses the run (exit 4) unless --no-sandbox was given, and a
    --no-sandbox run says so once."""
    from build_steps import sandbox
    sandbox.configure(enabled=not options.no_sandbox, hidden=[run_dir])
    if hasattr(config, "workerinput"):
        return
    if options.no_sandbox:
        why = sandbox.probe() or "a sandbox could be made here"
        say(f"WARNING: --no-sandbox: the tree's build and the wheel's code run unsandboxed ({why}); "
            "a development run, it cannot publish")
        return
    try:
        sandbox.check()
    except SandboxUnavailable as exc:
        refuse(exc)


#: name prefixes of this harness's plugins: its modules and the plugin objects they register
_PLUGIN_PREFIXES = ("harness.", "mxnet-")


def disabled_harness_plugins(config: pytest.Config) -> list[str]:
    """The harness plugins blocked with ``-p no:NAME`` (command line, PYTEST_ADDOPTS or an ini's
    addopts: pytest reads all three before configuring)."""
    names = []
    for name, plugin in config.pluginmanager.list_name_plugin():
        base = name.removeprefix("pytest_")
        if plugin is None and base.startswith(_PLUGIN_PREFIXES) and base not in names:
            names.append(base)
    return names


def inactive_harness_plugins(config: pytest.Config) -> list[str]:
    """Blocked harness plugins, and plugin modules of the conftest's list that are not registered."""
    run = harness_run(config)
    missing = [n for n in (run.plugins if run else ()) if not config.pluginmanager.has_plugin(n)]
    return list(dict.fromkeys([*disabled_harness_plugins(config), *missing]))


def disabled_plugins_message(names: Sequence[str]) -> str:
    """One message, whatever put the ``-p no:`` there."""
    shown = ", ".join(names)
    return (f"harness plugin(s) not active: {shown}. Every plugin of this harness takes part in its "
            "verdicts (the release set, the wheel pin, the GPU policy, the ledger...), so a run "
            f"without one is refused; remove -p no:{names[0]} from the command line, PYTEST_ADDOPTS "
            "or the ini's addopts")


def fix_release_options(config: pytest.Config, version: str, mxnet_src: Path | None) -> None:
    """Install the publish run's options (RunOptions.for_release): the one replacement of the
    options made in pytest_configure, at session start, before any fixture has read them."""
    run = the_run(config)
    if run.release_fixed:
        raise RuntimeError("the release options were already fixed in this session")
    run.options = run.options.for_release(version, mxnet_src)
    run.plan = plan_of(config, run.options)
    run.release_fixed = True


def _end_progress_line(config: pytest.Config) -> bool:
    """Finish pytest's progress line (``tests/test_x.py ..``) before a live line is written, so
    build output starts on its own line instead of being spliced into the dots. True when a line
    was ended (LiveStream.resume_progress_line then starts the next dots with the file name)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and getattr(tr, "currentfspath", None) is not None:
        tr.ensure_newline()
        tr.flush()
        return True
    return False


class LiveStream:
    """Writes straight to the terminal while pytest's capture is on (as live logging does)."""

    def __init__(self) -> None:
        self.config: pytest.Config | None = None
        self.line_ended = False

    def resume_progress_line(self, nodeid: str) -> None:
        """After live lines, pytest's next result letter would stand alone on a line: write the
        test file's name first, as pytest does for a new file (harness.plugins.chain calls this)."""
        if not self.line_ended or self.config is None:
            return
        self.line_ended = False
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and getattr(tr, "currentfspath", None) is None:
            tr.write_fspath_result(nodeid, "")

    def write(self, text: str) -> None:
        capman = self.config.pluginmanager.getplugin("capturemanager") if self.config else None
        if capman is None:
            (sys.__stderr__ or sys.stderr).write(text)
            return
        with capman.global_and_fixture_disabled():
            # a capture manager was found through the config: it is set
            self.line_ended = _end_progress_line(self.config) or self.line_ended  # type: ignore[arg-type]
            sys.stderr.write(text)
            sys.stderr.flush()

    def flush(self) -> None:
        pass


#: Progress of long steps for the person watching; harness.plugins.chain points it at the run's config.
LIVE = LiveStream()

#: The harness's logger: the long steps' progress and the run's warnings, for the person watching.
LOG = logging.getLogger("mxnet_harness")


class _LiveHandler(logging.Handler):
    """Shows the harness's records while pytest captures output. pytest attaches its own handlers
    to a logger that does not propagate, while it runs the session's phases: with its live logging
    on (``--log-cli-level``, ``log_cli``) pytest shows the records itself, in its format and its
    "live log" sections, and ``--log-file`` gets them. Otherwise this handler writes them to the
    terminal as they are, past the capture (LIVE)."""

    def emit(self, record: logging.LogRecord) -> None:
        config = LIVE.config
        plugin = config.pluginmanager.get_plugin("logging-plugin") if config is not None else None
        live = getattr(plugin, "log_cli_handler", None)
        try:
            if plugin is not None and getattr(plugin, "_log_cli_enabled", lambda: False)() \
                    and live in LOG.handlers:
                return  # pytest's live log shows it
            print(record.getMessage(), file=LIVE, flush=True)
        except Exception:  # noqa: BLE001 - a broken terminal must not fail the step that reported
            self.handleError(record)


LOG.addHandler(_LiveHandler())
LOG.setLevel(logging.INFO)
LOG.propagate = False


def say(line: str, level: int = logging.INFO) -> None:
    """Report ``line`` through the harness's logger (shown live, see _LiveHandler)."""
    LOG.log(level, line)
