"""Publishing after a green release run: the preflight, the release itself (a row of the end of
the run, harness.plugins.finish), and the one closing line of the run.

``tests/test_publish.py`` is the gate's slot: it files the release set its process collected. This
plugin fixes the release version before any build starts (so the chain builds exactly the version
that will be tagged); the end of the run's "publish" row (harness.plugins.finish.publish_release) compares
every gate's verdict in the run's one record (harness.plugins.ledger) with the flavor's release set, then
prints the commands (--dry-run) or writes the signed release report. Under xdist the verdicts reach
the controller with the workers' reports, which is where the row runs: nothing waits for a file.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from build_steps.build_chain import chain_stop_of
from build_steps.closing_line import closing_line
from build_steps import publish
from build_steps.errors import UsageError

from ..exits import refuse
from ..common import fix_release_options
from ..release_scope import scope_line
from ..state import the_run
from ..verdicts import NOT_JUDGED_EXIT

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

#: tests/test_publish.py finds the plugin object by this name.
PLUGIN_NAME = "mxnet-publish"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """With --publish: refuse early (before any fixture builds) and fix the release version.

    The version is stored as ``options.wheel_version``, so the build chain builds exactly the
    version that will be tagged. xdist workers get the controller's choice (no second pick).
    """
    config = session.config
    run = the_run(config)
    opts = run.options
    release: publish.ReleaseVersion | None = None
    src: Path | None = opts.mxnet_src
    shipped = getattr(config, "workerinput", {}).get("mxnet_publish")
    if shipped is not None:
        release = shipped["release"] and publish.ReleaseVersion(**shipped["release"])
        src = Path(shipped["mxnet_src"]) if shipped["mxnet_src"] else src
    elif opts.publish and not run.is_worker:
        try:
            release, src = publish.choose_release(opts, Path(config.invocation_params.dir),
                                                  config.getoption("release_report"))
        except UsageError as exc:
            refuse(exc)
    elif (opts.dry_run or opts.yes or config.getoption("release_report")) and not opts.publish:
        refuse("--dry-run, --yes and --release-report only apply together with --publish")
    if release:
        fix_release_options(config, release.version, src)
    config.pluginmanager.register(PublishPlugin(config, release or None, src), PLUGIN_NAME)


class PublishPlugin:
    """The release version and tree a --publish run chose at session start (every process), and
    the run's closing line (the reporting process)."""

    def __init__(self, config: pytest.Config, release: publish.ReleaseVersion | None, src: Path | None) -> None:
        self.config = config
        self.run = the_run(config)
        self.release = release
        self.src = src
        # the end of the run's publish row reads them from the run (harness.plugins.finish)
        self.run.release, self.run.release_src = release, src
        self.worker = self.run.is_worker

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: WorkerController) -> None:
        node.workerinput["mxnet_publish"] = {
            "release": dataclasses.asdict(self.release) if self.release else None,
            "mxnet_src": str(self.src) if self.src else None,
        }

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        # Without --publish the gate is not part of the run (a skip would fail -m release). With it,
        # its place in the run does not matter: the release is decided after every gate (FINISH).
        gates = [i for i in items if i.get_closest_marker("publish")]
        if gates and not self.run.options.publish:
            config.hook.pytest_deselected(items=gates)
            items[:] = [i for i in items if not i.get_closest_marker("publish")]

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter, exitstatus: pytest.ExitCode,
                                config: pytest.Config) -> None:
        opts = self.run.options
        if self.worker or not (opts.publish or self.run.plan.release) \
                or exitstatus == pytest.ExitCode.USAGE_ERROR or config.option.collectonly:
            return
        out = self.run.publish_outcome or {}
        if out.get("commands"):
            terminalreporter.section("publish: dry run (nothing was changed); a real run executes")
            for line in out["commands"]:
                terminalreporter.write_line(line)
        gates = self.run.ledger.verdicts()
        pin, stopped = self.run.pin, chain_stop_of(self.run.records)
        line, green = closing_line(
            gates, out, publish=opts.publish, interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
            not_judged=len(self.run.not_judged) if self.run.exitstatus == NOT_JUDGED_EXIT else 0,
            wheel=self.run.placed_wheel or out.get("wheel") or (pin.source if pin else None)
            or (str(opts.wheel) if opts.wheel else "no wheel"),
            placed=bool(self.run.placed_wheel), stopped=stopped)
        terminalreporter.write_line(line, bold=True, green=green, red=not green)
        scope = None if stopped and not self.run.placed_wheel else scope_line(self.run, gates)
        if scope:  # what the verdict covers, said where it is read (issue 36)
            terminalreporter.write_line(scope, bold=True)
