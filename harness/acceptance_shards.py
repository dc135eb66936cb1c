"""The fork's acceptance suite (tools/run_wheel_full_test.sh) as release gates: one gate per shard.

Options select shards and lanes; collection drops the shards the fork's script would not run on
this tree (a conditional file that is absent); the controller gathers every shard's row (xdist
workers send them in the reports' user_properties) into the per-shard table of the terminal
summary, ``summary.md``/``summary.json`` in the acceptance directory and the ``acceptance`` key of
``--provenance-json``.
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from build_steps import acceptance
from build_steps.errors import UsageError
from build_steps.source import resolve_source

from .common import harness_options, is_release_run, is_worker, shared_root

PLAN_KEY = pytest.StashKey[dict]()


def pytest_configure(config):
    try:
        suite = acceptance.load_suite(config.getoption("shards_file"))
        known = [s.id for s in suite.shards]
        ids = acceptance.parse_id_list(config.getoption("shards"), known, "shards")
        lanes = acceptance.parse_id_list(config.getoption("lanes"), acceptance.LANES, "lanes")
        parallel = acceptance.parse_parallel(config.getoption("shard_workers"), suite)
        split = acceptance.parse_shard_split(config.getoption("shard_split"), known)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    timeout = config.getoption("shard_timeout")
    if timeout is not None and timeout <= 0:
        raise pytest.UsageError(f"--shard-timeout {timeout}: must be a positive number of minutes")
    config.stash[PLAN_KEY] = {"suite": suite, "selected": acceptance.select(suite, ids, lanes), "parallel": parallel,
                              "timeout": timeout, "dir": config.getoption("acceptance_dir"), "split": split}
    if not is_worker(config):
        config.pluginmanager.register(ShardTable(), "mxnet-acceptance-table")


def source_root(config) -> Path | None:
    """The tree whose tests/ the shards run: --mxnet-src, or the cwd when it is an MXNet tree
    (None when neither). A --mxnet-src that is only a git checkout (the provenance audit's source
    tree, which needs no MXNet layout) runs no shard; a release run's tree gate then fails."""
    try:
        return resolve_source(harness_options(config).mxnet_src, Path(config.invocation_params.dir))
    except UsageError:
        return None


def selected_shards(config) -> list:
    plan = config.stash.get(PLAN_KEY, None)
    return plan["selected"] if plan else []


def inapplicable_shard_gates(config, gate_ids) -> dict:
    """gate id -> why, for the shard gates among ``gate_ids`` that the fork's own script would not
    run on this tree (a conditional file is absent). Read from the fork's shard data, whatever
    --shards-file named: the release set's shards are the fork's."""
    root = source_root(config)
    if root is None:
        return {}
    shards = acceptance.load_suite().shards
    out = {}
    for gate in gate_ids:
        for s in shards:
            if gate.endswith(f"::test_shard[{s.id}]") and (why := acceptance.not_applicable(s, root)):
                out[gate] = why
    return out


def split_parts(config) -> dict:
    """gate id suffix ``::test_shard[ID]`` -> "K/N" for each shard this run runs one part of."""
    plan = config.stash.get(PLAN_KEY, None)
    return {f"::test_shard[{sid}]": f"{k}/{n}" for sid, (k, n) in ((plan or {}).get("split") or {}).items()}


def shard_timeout_override(config) -> float | None:
    plan = config.stash.get(PLAN_KEY, None)
    return plan["timeout"] if plan else None


def pytest_collection_modifyitems(config, items):
    # Under xdist this runs on the workers only; the controller's table names the same shards
    # (ShardTable.notes), so nothing here writes report lines.
    ours = [i for i in items if i.get_closest_marker("acceptance") is not None]
    if not ours:
        return
    root = source_root(config)
    drop = []
    for item in ours:
        shard = getattr(item, "callspec", None) and item.callspec.params.get("shard")
        if root is None:
            # Without a tree there is nothing to run; only a release run insists (the tree gate fails).
            if shard is not None or not is_release_run(config):
                drop.append(item)
        elif shard is not None and acceptance.not_applicable(shard, root):
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        keep = set(map(id, drop))
        items[:] = [i for i in items if id(i) not in keep]


def acceptance_dir(config) -> Path:
    plan = config.stash[PLAN_KEY]
    if plan["dir"]:
        return Path(plan["dir"]).expanduser().resolve()
    # Beside the checkout, not in the run dir: a green run's run dir is removed at the end,
    # and the table's log paths must stay readable. Every xdist worker derives the same run name.
    run = shared_root(config).parent.name  # the run's dir (harness.common.RunDir)
    return config.rootpath / ".harness" / "acceptance" / run


@pytest.fixture(scope="session")
def acceptance_plan(request) -> dict:
    plan = dict(request.config.stash[PLAN_KEY])
    plan["root"] = source_root(request.config)
    plan["dir"] = acceptance_dir(request.config)
    return plan


@pytest.fixture(scope="session")
def acceptance_venv(release_venv, acceptance_plan, options, shared_dir) -> dict:
    """The release venv with the suite's test requirements, and the facts of the mxnet the shards
    import: from the venv (checked as the fork's script does), its Features and num_gpus()."""
    from build_steps.once import run_once
    suite = acceptance_plan["suite"]
    log = acceptance_plan["dir"] / "install-test-requirements.log"
    acceptance.install_test_requirements(release_venv, suite.test_requirements, pins=options.extra_requirements,
                                  find_links=options.find_links, index_url=options.index_url,
                                  no_index=options.no_index, log=log)
    facts = run_once(shared_dir, "acceptance-verify", lambda: acceptance.verify_installed_mxnet(
        release_venv, acceptance_plan["root"], suite.cwd))
    return {"venv": release_venv, **facts}


class ShardTable:
    """The controller's per-shard rows, the terminal table and the written summaries."""

    def __init__(self):
        self.rows: dict = {}
        self.mxnet: dict | None = None
        self.started = time.time()

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        shard = props.get("acceptance_shard")
        if shard is None or report.when == "teardown":
            return
        self.mxnet = props.get("acceptance_mxnet") or self.mxnet
        if "acceptance_result" in props:
            self.rows[shard["id"]] = props["acceptance_result"]
        elif not report.passed and shard["id"] not in self.rows:
            text = getattr(report, "longreprtext", "") or ""
            if report.skipped and isinstance(report.longrepr, tuple):
                text = str(report.longrepr[2])
            why = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:300]
            self.rows[shard["id"]] = {"id": shard["id"], "lane": shard["lane"], "seconds": 0.0, "log": "",
                                      "result": "SKIPPED" if report.skipped else "NOT_RUN",
                                      "summary": "", "reason": why, "failing": []}

    def notes(self, config) -> list:
        """The selected shards this run leaves out, and why (computed here, on the controller)."""
        root = source_root(config)
        if root is None:
            return ["acceptance shards not run: no MXNet source tree (--mxnet-src) holds the fork's tests"]
        return [f"acceptance shard {s.id} not applicable: {why}" for s in selected_shards(config)
                if (why := acceptance.not_applicable(s, root))]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        config = session.config
        self.lines = []
        if not self.rows:
            return
        rows = sorted(self.rows.values(), key=lambda r: r["id"])
        self.lines = acceptance.table_lines(rows) + self.notes(config)
        doc = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "shards_file": str(config.stash[PLAN_KEY]["suite"].source), "shards": rows,
               "mxnet": self.mxnet, "passed": all(r["result"] == "PASS" for r in rows)}
        out = acceptance_dir(config)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
        header = {"Shards file": doc["shards_file"], "When": doc["created"]}
        if self.mxnet:
            header["mxnet"] = f"{self.mxnet.get('version')} from {self.mxnet.get('file')}"
            header["num_gpus()"] = self.mxnet.get("num_gpus")
            header["Features enabled"] = " ".join(k for k, v in (self.mxnet.get("features") or {}).items() if v)
        (out / "summary.md").write_text(acceptance.summary_markdown(rows, header))
        self.lines.append(f"summary: {out / 'summary.md'}")
        self._add_to_provenance_json(config, doc)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        # A section of its own: the gate table (harness.gates) is the gates' verdicts, this is
        # the shards' pytest results, and it must print under xdist too.
        if getattr(self, "lines", None):
            terminalreporter.section("Acceptance shards (the fork's tools/run_wheel_full_test.sh)")
            for line in self.lines:
                terminalreporter.write_line(line)

    def _add_to_provenance_json(self, config, doc):
        options = harness_options(config)
        path = options.provenance_json
        if path is None:
            return
        from build_steps.readers.report import write_json_atomic
        data = {}
        # The provenance report of this same run (written just before, in its sessionfinish) keeps
        # its keys; a file left from an earlier run is replaced.
        if path.exists() and path.stat().st_mtime >= self.started:
            try:
                data = json.loads(path.read_text())
            except ValueError:
                data = {}
        data.setdefault("schema", 1)
        data["acceptance"] = doc
        write_json_atomic(path, data)
