"""The release review page of every run that has a wheel (build_steps.review_page renders it).

This plugin gathers what only the run knows into the JSON report's ``review`` section (every
gate's verdict and reason from the ledger, the build steps' times, the development overrides, the
verdict's scope against the flavor's release set) and, at the end of the session, writes the page:
to ``--review-page PATH``, else into the build's ``harness-logs/review.html`` and beside the
``--provenance-json`` report (``report.html`` for ``report.json``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from build_steps import gpu_reports, review_page
from build_steps.errors import HarnessError, UsageError
from build_steps.overrides import broken_promises, development_option_promises

from .common import harness_options, is_worker, report_at_session_end, shared_root
from .ledger import ledger_of, produced_wheel
from .release_set import release_set_of
from .steps import CHAIN, chain_records

#: The report document harness.wheel_facts built at the end of the session (the page renders it).
DOC_KEY = pytest.StashKey[dict]()
#: The chain's steps the timeline shows, in order, with the summary's labels (all but the source check).
_TIMED_STEPS = tuple((step.record, step.label) for step in CHAIN[1:])


def pytest_configure(config):
    reports = config.getoption("gpu_reports", None)
    if reports is not None and not Path(reports).is_dir():
        raise pytest.UsageError(f"--gpu-reports {reports}: no such directory; pass the directory the "
                                "GPU runners' --provenance-json reports were collected in")


def _timeline(records: dict) -> dict:
    steps = []
    compile_result = {}
    for key, label in _TIMED_STEPS:
        rec = records.get(key) or {}
        if rec.get("failed"):
            steps.append({"name": label, "seconds": 0, "note": "INTERRUPTED" if rec.get("interrupted") else "FAILED"})
            continue
        result = rec.get("result") or {}
        if key == "compile":
            compile_result = result
        if isinstance(result.get("seconds"), (int, float)):
            note = "no work to do" if result.get("no_work") else ""
            steps.append({"name": label, "seconds": result["seconds"], "note": note})
    # The compile record's time data (build_steps.readers.ninja_log.build_time), when the compile
    # step measured it: read by key, since a record of an older build has none and the page then
    # says "not measured"; cpu_seconds is None when the compiles ran under sccache's server.
    measured = compile_result.get("build_time") or {}
    slowest = [s for s in measured.get("slowest_steps") or () if isinstance(s, dict)]
    cpu = measured.get("cpu_seconds")
    command = measured.get("command_seconds")
    return {"steps": steps, "slowest_steps": slowest,
            "cpu_seconds": cpu if isinstance(cpu, (int, float)) else None,
            "command_seconds": command if isinstance(command, (int, float)) else None,
            "commands": measured.get("commands")}


def _verdict(config, gates: list, exitstatus) -> dict:
    ran = [g for g in gates if g["verdict"] != "not run"]
    passed = sum(g["verdict"] == "passed" for g in ran)
    skipped = sum(g["verdict"] in ("skipped", "xfailed") for g in ran)
    # A skip fails a -m release run (harness.gates turned it into "failed" already); elsewhere it
    # is shown, not counted against the verdict.
    outcome = "PASS" if passed and passed + skipped == len(ran) else "FAIL"
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        outcome = "INTERRUPTED"
    rset = release_set_of(config)
    flavor = harness_options(config).profile.name
    out = {"outcome": outcome, "passed": passed, "skipped": skipped, "ran": len(ran)}
    if rset is not None and rset.size():
        missing = len(rset.not_passed({g["nodeid"]: "passed" for g in ran}))
        if missing:
            out["scope"] = f"{len(ran)} of the {flavor} release set's {rset.size()} gates ran"
            out["meaning"] = (f"{missing} gates of the release set did not run (deselected by -m/-k, or "
                              "their module not collected): this is the verdict of this selection, not "
                              "a release verdict; only a run of the whole set can publish")
        else:
            out["scope"] = f"the whole {flavor} release set ran"
    return out


def review_section(config, exitstatus=None, verdicts: dict | None = None) -> dict:
    """The JSON report's ``review`` section: what the page shows beyond the static facts.

    The gates are the ledger's (the reporting process's, at the end of the session), or
    ``verdicts`` (nodeid -> verdict) where the ledger is not the whole story yet (the publish gate)."""
    options = harness_options(config)
    if verdicts is None:
        gates = [{"nodeid": n, "verdict": e.verdict, "why": e.why, "markers": list(e.markers)}
                 for n, e in sorted(ledger_of(config).entries.items()) if "release" in e.markers]
    else:
        gates = [{"nodeid": n, "verdict": v, "why": "", "markers": []} for n, v in sorted(verdicts.items())]
    records = chain_records(shared_root(config))
    source = (records.get("source") or {}).get("result") or {}
    broken = development_option_promises(options) + broken_promises(options)
    development = bool(broken or options.allow_dirty)
    return {review_page.SECTION: {
        "verdict": _verdict(config, gates, exitstatus),
        "gates": gates,
        "timeline": _timeline(records),
        "overrides": {"cmake_defines": dict(options.cmake_defines),
                      "broken": broken,
                      "development_options": list(options.development_options),
                      "host_workarounds": options.host_workarounds,
                      "allow_dirty": options.allow_dirty, "development": development},
        "warnings": list(source.get("submodule_warnings") or ()),
    }}


def _destinations(config, records: dict) -> list[Path]:
    explicit = config.getoption("review_page", None)
    if explicit is not None:
        return [Path(explicit)]
    out = []
    log = ((records.get("configure") or {}).get("result") or {}).get("log")
    if log:
        out.append(Path(log).parent / "review.html")
    json_path = harness_options(config).provenance_json
    if json_path is not None:
        out.append(Path(json_path).with_suffix(".html"))
    return out


def wants_page(config) -> bool:
    """Whether this run writes a page (harness.wheel_facts builds the report document only then or for
    --provenance-json): a built wheel, --review-page or --provenance-json."""
    return bool(_destinations(config, chain_records(shared_root(config))))


def merged_gpu_runs(config, doc: dict):
    """This run's own GPU gates plus --gpu-reports, merged per arch (None: neither exists)."""
    sha = (doc.get("wheel") or {}).get("sha256")
    arch = (doc.get("expected") or {}).get("cuda_arch")
    reports = [(Path("this run"), doc)] if (doc.get(gpu_reports.SECTION) or {}).get("gates") else []
    directory = config.getoption("gpu_reports", None)
    if directory is not None:
        reports = [*gpu_reports.load_reports(directory), *reports]
    if not reports or not sha:
        return None
    return gpu_reports.merge(reports, sha, arch)


# Not tryfirst: harness.wheel_facts (tryfirst) builds the report document first. The run's records and
# pinned wheel stay until pytest_unconfigure (harness.common.RunDir).
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if is_worker(config) or exitstatus == pytest.ExitCode.USAGE_ERROR or config.option.collectonly:
        return
    doc = config.stash.get(DOC_KEY, None)
    if doc is None:
        return
    dests = _destinations(config, chain_records(shared_root(config)))
    if not dests:
        return
    from .wheel_pin import load_pin
    pin = load_pin(shared_root(config))
    wheel = Path(pin.path) if pin is not None and Path(pin.path).is_file() else None
    # Where the built wheel lies now: harness.chain places it (dist/ or set aside) after the JSON
    # report was written, so the page alone can say it.
    if produced_wheel(config):
        doc = {**doc, review_page.SECTION: {**(doc.get(review_page.SECTION) or {}),
                                            "wheel_location": produced_wheel(config)}}
    lines = []
    try:
        merged = merged_gpu_runs(config, doc)
        for dest in dests:
            review_page.write_page(dest, doc, wheel, merged)
            lines.append(f"review page: {dest}")
    except (HarnessError, UsageError) as exc:
        lines.append(f"review page NOT written: {exc}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    report_at_session_end(config, lines)


def publish_page(config, dest: Path, audit, verdicts: dict, pin) -> Path:
    """The page the publish gate attaches to the GitHub release: this run's facts and every other
    gate's verdict (all passed, or there is no publish), written before the release is made."""
    from build_steps.readers.report import provenance_document
    options = harness_options(config)
    doc = provenance_document(audit, {}, options)
    doc.update(review_section(config, None, verdicts))
    doc["wheel"] = {"filename": Path(pin.source).name, "file": pin.source, "sha256": pin.sha256, "size": pin.size}
    return review_page.write_page(dest, doc, Path(pin.path), merged_gpu_runs(config, doc))
