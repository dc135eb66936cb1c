"""Publishing after a green release run: the preflight, the gate's view of every other verdict
(also under xdist), and the one closing line of the run.

``tests/test_publish.py`` is the gate itself; this plugin fixes the release version before any
build starts (so the chain builds exactly the version that will be tagged), keeps the publish
gate last, and hands it every other gate's final verdict.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from build_steps import publish
from build_steps.errors import UsageError

from .exits import refuse
from .common import fix_release_options, harness_options, is_release_run, is_worker
from .release_scope import scope_line
from .state import the_run
from .verdicts import NOT_JUDGED_EXIT
from .steps import chain_stop_of

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
    opts = harness_options(config)
    release: publish.ReleaseVersion | None = None
    src: Path | None = opts.mxnet_src
    results: Path | None = None
    shipped = getattr(config, "workerinput", {}).get("mxnet_publish")
    if shipped is not None:
        release = shipped["release"] and publish.ReleaseVersion(**shipped["release"])
        src = Path(shipped["mxnet_src"]) if shipped["mxnet_src"] else src
        results = Path(shipped["results"]) if shipped["results"] else None
    elif opts.publish and not is_worker(config):
        if the_run(config).mode == "audit":
            # Issue 19, item 4: the release set's build gates verify the build of this run (its
            # CMake cache, compile, bundle, package); a wheel built elsewhere has none here, so
            # they could only skip, which a release counts as failed. Refused before anything runs.
            refuse(
                f"--publish with --wheel {opts.wheel.name}: only a full build publishes. The release "  # type: ignore[union-attr]
                "set's build gates verify the build made in the same run, which an existing wheel "
                "does not have; run pytest -m release --mxnet-src=<the checkout> --publish (it builds, "
                "verifies and publishes in one run), or audit this wheel without --publish")
        report = config.getoption("release_report")
        if opts.yes:
            # Issue 29: the run that builds and verifies never holds the token; publishing is a step
            # of its own, as in CI (docs/release_procedure.md).
            refuse(
                "--publish --yes: the verify run publishes nothing itself any more; run it with "
                "--publish --release-report=R, then publish with mxnet-release publish --report=R --yes")
        if not opts.dry_run and not report:
            refuse(
                "--publish needs --release-report=PATH (the report mxnet-release publish --report=PATH "
                "publishes from) or --dry-run (prints the commands)")
        try:
            state = publish.preflight(opts.mxnet_src or Path(config.invocation_params.dir),
                                      opts.remote, dry_run=True)
            release = publish.resolve_release_version(
                state, opts.profile, explicit=opts.wheel_version, wheel=opts.wheel)
        except UsageError as exc:
            refuse(exc)
        src = opts.mxnet_src or state.repo
        # In the run dir, which no sandbox of the tree's or the wheel's code sees (build_steps.sandbox)
        results = Path(tempfile.mkdtemp(prefix="publish-", dir=the_run(config).dir.root)) / "verdicts.json"
    elif (opts.dry_run or opts.yes or config.getoption("release_report")) and not opts.publish:
        refuse("--dry-run, --yes and --release-report only apply together with --publish")
    if release:
        fix_release_options(config, release.version, src)
    config.pluginmanager.register(PublishPlugin(config, release or None, src, results), PLUGIN_NAME)


class PublishPlugin:
    """The publish gate's bookkeeping, as a plugin object so it can keep state.

    The controller (or the single process) records every gate's verdict from its reports; under
    xdist it also writes them to ``results`` for the worker that runs the publish gate.
    """

    def __init__(self, config: pytest.Config, release: publish.ReleaseVersion | None, src: Path | None,
                 results: Path | None) -> None:
        self.config = config
        self.run = the_run(config)
        self.release = release
        self.src = src
        self.results = results
        self.worker = is_worker(config)
        self.verdicts: dict[str, str] = {}      # nodeid -> passed / failed / skipped / xfailed / ...
        self.finished: set[str] = set()   # nodeids whose teardown was reported
        self.publish_ids: set[str] = set()
        self.wheel: str | None = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: WorkerController) -> None:
        node.workerinput["mxnet_publish"] = {
            "release": dataclasses.asdict(self.release) if self.release else None,
            "mxnet_src": str(self.src) if self.src else None,
            "results": str(self.results) if self.results else None,
        }

    # The outermost wrapper: its reordering comes after every other plugin's, --ff's and --nf's
    # (cacheprovider's wrappers) included, which ran the publish gate first otherwise (issue 29).
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> Generator[None, None, None]:
        yield
        gates = [i for i in items if i.get_closest_marker("publish")]
        rest = [i for i in items if not i.get_closest_marker("publish")]
        if gates and not harness_options(config).publish:
            # Without --publish the gate is not part of the run (a skip would fail -m release).
            config.hook.pytest_deselected(items=gates)
            items[:] = rest
        elif gates:
            items[:] = rest + gates  # last: it needs every other verdict

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
                             ) -> Generator[None, Any, Any]:
        value = yield  # a fixture that raised raises here, and on
        if fixturedef.argname == "wheel_pin":
            self.wheel = value.source
        return value

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if self.wheel and report.when == "teardown":
            # A new list: the report shares item.user_properties otherwise.
            report.user_properties = [*report.user_properties, ("mxnet_wheel", self.wheel)]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker:
            return  # the controller records; it gets every worker's reports
        for key, value in report.user_properties:
            if key == "mxnet_wheel":
                self.wheel = cast(str, value)
            elif key == "mxnet_publish":
                self.run.publish_outcome = cast("dict[str, Any]", value)  # what the publish gate reported
        nodeid = report.nodeid
        if "publish" in report.keywords:
            self.publish_ids.add(nodeid)
        if report.when == "setup" and not report.passed:
            self.verdicts[nodeid] = report.outcome
        elif report.when == "call" and self.verdicts.get(nodeid) != "rerun":
            # a rerun (pytest-rerunfailures' outcome) stays: the attempt that failed is the verdict
            self.verdicts[nodeid] = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        elif report.when == "teardown":
            if report.failed:
                self.verdicts[nodeid] = "failed"
            self.verdicts.setdefault(nodeid, "not run")
            self.finished.add(nodeid)
            if self.results is not None:
                tmp = self.results.with_suffix(".tmp")
                tmp.write_text(json.dumps({n: self.verdicts[n] for n in self.finished}))
                tmp.replace(self.results)

    def verdicts_of(self, nodeids: Iterable[str], poll_s: float = 2.0, limit_s: float = 24 * 3600) -> dict[str, str]:
        """Final verdicts of ``nodeids``; a worker waits until the controller has them all."""
        wanted = set(nodeids)
        if not self.worker:
            return {n: self.verdicts[n] for n in wanted & self.finished}
        deadline = time.monotonic() + limit_s
        while True:
            try:
                seen = json.loads(self.results.read_text()) if self.results else {}
            except (OSError, ValueError):
                seen = {}
            if wanted <= seen.keys() or time.monotonic() > deadline or self.results is None:
                return {n: v for n, v in seen.items() if n in wanted}
            time.sleep(poll_s)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.results is not None and not self.worker:
            shutil.rmtree(self.results.parent, ignore_errors=True)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter, exitstatus: pytest.ExitCode,
                                config: pytest.Config) -> None:
        opts = harness_options(config)
        if self.worker or not (opts.publish or is_release_run(config)) \
                or exitstatus == pytest.ExitCode.USAGE_ERROR or config.option.collectonly:
            return
        tr = terminalreporter
        out = self.run.publish_outcome or {}
        if out.get("commands"):
            tr.section("publish: dry run (nothing was changed); a real run executes")
            for line in out["commands"]:
                tr.write_line(line)
        gates = {n: v for n, v in self.verdicts.items() if n not in self.publish_ids}
        passed = sum(v == "passed" for v in gates.values())
        verdict = "PASS" if gates and passed == len(gates) else "FAIL"
        counted = f"{passed}/{len(gates)} gates passed"
        if "set_size" in out:
            # A publish run is judged against the flavor's release set, not against what it ran.
            verdict = "PASS" if verdict == "PASS" and out["set_passed"] == out["set_size"] else "FAIL"
            counted = f"{out['set_passed']}/{out['set_size']} gates of the {out['flavor']} release set passed"
        if self.run.exitstatus == NOT_JUDGED_EXIT and self.run.not_judged:
            # the host kept gates from judging and none judged FAIL (harness.finish.judge); under
            # xdist the stop after the fault reaches this hook as an interrupt
            verdict = "ERROR (not judged)"
            counted += f"; {len(self.run.not_judged)} not judged"
        elif exitstatus == pytest.ExitCode.INTERRUPTED:
            verdict = "INTERRUPTED"
        if not opts.publish:
            published = "not published (--publish not given)"
        elif out.get("published"):
            published = f"PUBLISHED as {out.get('tag')} ({out.get('url')})"
        elif out.get("dry_run"):
            published = f"not published (dry run of {out.get('tag')})"
        elif out.get("prepared"):
            published = (f"not published yet: release report {out.get('report')} written for {out.get('tag')}; "
                         f"publish with mxnet-release publish --report={out.get('report')} --yes")
        elif out.get("reason"):
            published = f"NOT published: {out['reason']}"
        else:
            published = "NOT published (the publish gate did not run)"
            verdict = "FAIL" if verdict == "PASS" else verdict
        placed = self.run.placed_wheel
        wheel = placed or out.get("wheel") or self.wheel or (str(opts.wheel) if opts.wheel else "no wheel")
        stopped = chain_stop_of(self.run.records)
        if stopped and not placed:
            # the gates that ran before the chain stopped are no tally of a release
            tr.write_line(f"RELEASE no wheel: {stopped}; {published}", bold=True, red=True)
            return
        tr.write_line(f"RELEASE {wheel}: {verdict} ({counted}); {published}",
                      bold=True, green=verdict == "PASS", red=verdict != "PASS")
        scope = scope_line(self.run, gates)
        if scope:  # what the verdict covers, said where it is read (issue 36)
            tr.write_line(scope, bold=True)

