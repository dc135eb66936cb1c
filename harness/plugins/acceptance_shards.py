"""The fork's acceptance suite (tools/run_wheel_full_test.sh) as release gates: one gate per shard.

Options select shards and lanes; collection drops the shards the fork's script would not run on
this tree (a conditional file that is absent); the controller gathers every shard's row (xdist
workers send them in the reports' user_properties) into the per-shard table of the terminal
summary, ``summary.md``/``summary.json`` in the acceptance directory and the ``acceptance`` key of
``--provenance-json``.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from build_steps.acceptance.selection import SHARD_OPTIONS, shard_plan
from build_steps.acceptance.suite import not_applicable
from build_steps.acceptance.venv import install_test_requirements, verify_installed_mxnet
from build_steps.errors import UsageError

from ..exits import refuse
from ..shard_plan import SECTION, SHARD_GATE, acceptance_dir, source_root
from ..state import HarnessRun, the_run

if TYPE_CHECKING:
    from build_steps.options import RunOptions
    from build_steps.venv import Venv


def pytest_configure(config: pytest.Config) -> None:
    run = the_run(config)
    try:
        run.shard_plan = shard_plan({o: config.getoption(o) for o in SHARD_OPTIONS})
    except UsageError as exc:
        refuse(exc)
    if not run.is_worker:
        config.pluginmanager.register(ShardTable(run), "mxnet-acceptance-table")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Under xdist this runs on the workers only; the controller's table names the same shards
    # (ShardTable.notes), so nothing here writes report lines.
    ours = [i for i in items if i.get_closest_marker("acceptance") is not None]
    if not ours:
        return
    root = source_root(the_run(config))
    drop: list[pytest.Item] = []
    for item in ours:
        shard = getattr(item, "callspec", None) and item.callspec.params.get("shard")  # type: ignore[attr-defined]
        if root is None:
            # Without a tree there is nothing to run; only a release run insists (the tree gate fails).
            if shard is not None or not the_run(config).plan.release:
                drop.append(item)
        elif shard is not None and not_applicable(shard, root):
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        keep = set(map(id, drop))
        items[:] = [i for i in items if id(i) not in keep]


@pytest.fixture(scope="session")
def acceptance_plan(request: pytest.FixtureRequest) -> dict[str, Any]:
    run = the_run(request.config)
    plan = dict(run.shard_plan or {})
    plan["root"] = source_root(run)
    plan["dir"] = acceptance_dir(run)
    return plan


@pytest.fixture(scope="session")
def acceptance_venv(release_venv: Venv, acceptance_plan: dict[str, Any], options: RunOptions,
                    shared_dir: Path) -> dict[str, Any]:
    """The release venv with the suite's test requirements, and the facts of the mxnet the shards
    import: from the venv (checked as the fork's script does), its Features and num_gpus()."""
    from build_steps.once import run_once
    suite = acceptance_plan["suite"]
    log = acceptance_plan["dir"] / "install-test-requirements.log"
    install_test_requirements(release_venv, suite.test_requirements, pins=options.extra_requirements,
                                  find_links=options.find_links, index_url=options.index_url,
                                  no_index=options.no_index, log=log)
    facts = run_once(shared_dir, "acceptance-verify", lambda: verify_installed_mxnet(
        release_venv, acceptance_plan["root"], suite.cwd))
    return {"venv": release_venv, **facts}


class ShardTable:
    """Which shard gates were collected and which began (xdist forwards the workers' collection and
    logstart to the controller): a gate cut short by an interrupt never reports, and its shard
    must still be a row (harness.shard_plan.unreported_rows), never silently absent."""

    def __init__(self, run: HarnessRun) -> None:
        self.run = run

    def _shard_ids(self, nodeids: list[str]) -> None:
        for nodeid in nodeids:
            m = SHARD_GATE.search(nodeid)
            if m and m.group("id") not in self.run.shard_requested:
                self.run.shard_requested.append(m.group("id"))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # a run without xdist (an xdist controller collects nothing: its workers' ids come below)
        self._shard_ids([i.nodeid for i in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._shard_ids(ids)

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        m = SHARD_GATE.search(nodeid)
        if m:
            self.run.shard_started.setdefault(m.group("id"), time.monotonic())

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter, exitstatus: pytest.ExitCode,
                                config: pytest.Config) -> None:
        # A section of its own: the gate table (harness.plugins.gates) is the gates' verdicts, this is
        # the shards' pytest results, and it must print under xdist too.
        lines = self.run.sections.get(SECTION)
        if lines:
            terminalreporter.section(SECTION)
            for line in lines:
                terminalreporter.write_line(line)
