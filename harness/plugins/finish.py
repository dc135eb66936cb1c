"""The end of a run as one table, modelled on the build chain's (build_steps.build_chain.CHAIN).

``FINISH`` lists what happens after the last gate, in order. Each row is a plain function of the
run's state (harness.state.HarnessRun) returning an ``Outcome``: the summary lines it adds, and
whether it fails the run (``failed``: a green run becomes exit 1) or sets its exit status
(``exit``). A row files its product in the run's state (the report document, the placed wheel, the
skipped GPU gates) for the rows after it and for the terminal summary. One sessionfinish hook runs
the table and sets the session's exit status once; no other plugin has one.

Adding "sign the wheel" at the end is one function and one row.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, replace
from pathlib import Path
from collections.abc import Generator, Iterable
from typing import Any, Callable

import pytest

from build_steps.build_chain import after_chain_records, chain_records
from build_steps import package, publish
from build_steps.errors import HarnessError, PublishRefused, UsageError
from build_steps.pinning import source_changed, unlock, verify
from build_steps.release_report import release_content, write_report
from build_steps.readers.report import write_json_atomic
from build_steps.report.document import (driver_stub_lines, page_of, provenance_lines, publish_page,
                                         report_document, wants_document, write_pages)
from build_steps.report.record import HostFacts, RunRecord
from build_steps.report.placement import place_built_wheel

from ..common import say
from ..pin_record import load_pin
from ..release_scope import release_set_of
from ..run_record import record_of
from ..shard_plan import SECTION as SHARD_SECTION, has_table, inapplicable_shard_gates, write_summary
from ..state import HarnessRun, harness_run
from ..verdicts import GPU_MARKS, NOT_JUDGED, NOT_JUDGED_EXIT


@dataclass(frozen=True)
class Outcome:
    """What one row of the end of the run decided."""
    #: lines for the end of the gate table (or for ``section``'s own block of the summary)
    lines: tuple[str, ...] = ()
    #: the run is not green: an exit status of 0 becomes 1 (any other stays)
    failed: bool = False
    #: the run's exit status becomes this, whatever it was
    exit: int | None = None
    #: also said at once when there is no gate table to print the lines (an xdist controller
    #: whose workers filed no release gate)
    loud: bool = False
    #: the summary's section the lines go to, instead of the gate table's end
    section: str | None = None


NOTHING = Outcome()


@dataclass(frozen=True)
class Row:
    name: str
    run: Callable[[HarnessRun], Outcome]
    #: run on an xdist worker too (every other row runs in the process that reports the run)
    on_workers: bool = False


# --------------------------------------------------------------------------------------------
# The rows
# --------------------------------------------------------------------------------------------
def classify_stop(run: HarnessRun) -> Outcome:
    """A session stopped for a failed chain step reaches an xdist controller as an interrupt
    (exit 2); it is a failure (exit 1). A real Ctrl-C keeps its 2 (harness.plugins.gates files which)."""
    if run.stopped_for_step and run.exitstatus == pytest.ExitCode.INTERRUPTED:
        return Outcome(exit=pytest.ExitCode.TESTS_FAILED)
    return NOTHING


def judge(run: HarnessRun) -> Outcome:
    """The run's outcome of three: FAIL (a gate judged the wheel bad: exit 1), ERROR (no gate
    judged it bad, and the host kept one from judging: exit 3, NOT_JUDGED_EXIT), else what pytest
    says. A not-judged gate is said in one line here, with its reason; the reason itself was
    said once where it happened (harness.plugins.gates stops the run after a step's environment fault)."""
    run.not_judged = sorted((n, e.why) for n, e in run.ledger.entries.items() if e.verdict == NOT_JUDGED)
    if not run.not_judged:
        return NOTHING
    # another process's gate names the same fault as "already failed in this run ...: <it>"
    reasons = list(dict.fromkeys(why.split("(reported once, above): ", 1)[-1] for _n, why in run.not_judged))
    judged_bad = [n for n, e in run.ledger.entries.items() if e.verdict == "failed"]
    # the reason in a few words (its first clause): the whole of it was said where it happened
    what = f"{len(run.not_judged)} gate(s) not judged ({reasons[0].split(': ', 1)[0]}" + (
        f", and {len(reasons) - 1} other reason(s): see the gate table)" if len(reasons) > 1 else ")")
    if judged_bad:
        return Outcome(lines=("", f"FAIL: {len(judged_bad)} gate(s) failed; also {what}"))
    return Outcome(lines=("", f"ERROR (not judged): {what}. The host, not the wheel, failed: fix it and "
                          f"re-run (exit {NOT_JUDGED_EXIT})"), exit=NOT_JUDGED_EXIT, loud=True)


def check_pin(run: HarnessRun) -> Outcome:
    """The wheel the gates judged is still the file they were given (harness.plugins.wheel_pin)."""
    pin = run.pin
    if pin is None:
        return NOTHING
    problems = []
    try:
        verify(pin, "the end of the run")
    except Exception as exc:  # WheelChanged: the words are in the message
        problems.append(str(exc))
    changed = source_changed(pin)
    if changed:
        problems.append(changed)
    # A built wheel's path is said once, where it now lies (dist/ or set aside: the placement row);
    # its staging path here would be a second wheel path for the same bytes.
    what = f"sha256 {pin.sha256}, {pin.size} bytes"
    lines = [f"wheel verified by this run: {what}" if run.mode == "build"
             else f"wheel verified by this run: {pin.source} ({what})"]
    if not problems:
        return Outcome(lines=("", *lines))
    lines = ["WHEEL CHANGED DURING THE RUN: " + p for p in problems] + lines
    for line in lines[:-1]:
        say(line)
    return Outcome(lines=("", *lines), failed=True)


#: the run record, read once by the row "read the run record"; private to this table (a key of its
#: own, not a HarnessRun field: harness.run_record imports harness.state)
_RECORD = pytest.StashKey[RunRecord]()


def read_record(run: HarnessRun) -> Outcome:
    """The run record every report row is a function of (harness.run_record), read once."""
    run.config.stash[_RECORD] = record_of(run)
    return NOTHING


def the_record(run: HarnessRun) -> RunRecord:
    """The run record as the rows before this one left it: the exit status, the placed wheel (and
    the clock's reading now, for the page's timeline)."""
    read = run.config.stash.get(_RECORD, None)
    if read is None:
        raise RuntimeError("the run record was not read (the row 'read the run record' failed)")
    return replace(read, exitstatus=run.exitstatus, placed_wheel=run.placed_wheel, ended=time.monotonic())


def build_report(run: HarnessRun) -> Outcome:
    """The provenance report's summary lines; the report document (HarnessRun.doc) when the run
    writes the JSON report or a review page (build_steps.report.document)."""
    rec = the_record(run)
    if wants_document(rec):
        run.doc = report_document(replace(rec, host=HostFacts.measure()))
    return Outcome(lines=tuple(provenance_lines(rec)))


def write_json(run: HarnessRun) -> Outcome:
    """``--provenance-json``: written whole or not at all (a full filesystem is one line, exit 1)."""
    path = run.options.provenance_json
    if path is None or run.doc is None:
        return NOTHING
    try:
        write_json_atomic(path, run.doc)
    except HarnessError as exc:
        return Outcome(lines=(f"  provenance JSON NOT written: {exc}",), exit=pytest.ExitCode.TESTS_FAILED)
    run.json_written = True
    return Outcome(lines=(f"  provenance JSON written to {path}",))


def driver_stub_note(run: HarnessRun) -> Outcome:
    """Said when the CPU-side runtime gates ran with the stand-in libcuda.so.1 (harness.plugins.runtime)."""
    return Outcome(lines=tuple(driver_stub_lines(the_record(run))))


def place_wheel(run: HarnessRun) -> Outcome:
    """The chain's summary, and the built wheel to dist/ or set aside (build_steps.report.placement)."""
    placement = place_built_wheel(the_record(run))
    if placement is None:
        return NOTHING
    run.placed_wheel = placement.placed
    return Outcome(lines=placement.lines, exit=pytest.ExitCode.TESTS_FAILED if placement.failed else None,
                   loud=True)


def write_page(run: HarnessRun) -> Outcome:
    """The review page, from the report document, with where the built wheel now lies (build_steps.report.document)."""
    lines: list[str] = []
    try:
        page = page_of(the_record(run), run.doc)
        if page is None:
            return NOTHING
        for line in write_pages(page):
            lines.append(line)
    except (HarnessError, UsageError) as exc:
        lines.append(f"review page NOT written: {exc}")
        return Outcome(lines=tuple(lines), exit=pytest.ExitCode.TESTS_FAILED, loud=True)
    return Outcome(lines=tuple(lines), loud=True)


def gpu_policy(run: HarnessRun) -> Outcome:
    """Selected GPU gates that skipped make the run non-green, unless --allow-gpu-skips
    (harness.plugins.gpu_policy says so in the summary)."""
    run.skipped_gpu = sorted((nodeid, e.why) for nodeid, e in run.ledger.entries.items()
                             if e.verdict == "skipped" and any(m in e.markers for m in GPU_MARKS))
    allowed = run.config.getoption("allow_gpu_skips", False)
    return Outcome(failed=bool(run.skipped_gpu) and not allowed)


def shard_table(run: HarnessRun) -> Outcome:
    """The acceptance shards' table, summary.md/summary.json, and the JSON report's ``acceptance``."""
    if not has_table(run):
        return NOTHING
    lines, doc = write_summary(run)
    path = run.options.provenance_json
    if path is not None:
        # The provenance report this row's predecessors wrote keeps its keys; a file left from an
        # earlier run is replaced.
        data = dict(run.doc) if run.json_written and run.doc is not None else {}
        data.setdefault("schema", 1)
        data["acceptance"] = doc
        write_json_atomic(path, data)
    return Outcome(lines=tuple(lines), section=SHARD_SECTION)


def publish_release(run: HarnessRun) -> Outcome:
    """--publish: the release, once every gate reported (harness.plugins.publish_run): the commands of
    a dry run, or the signed release report. Refused (the run is not green) unless every gate of the
    flavor's release set passed; a run whose publish gate failed or never ran (deselected by --sw,
    -k, -o python_functions) published nothing."""
    lines, failed = _release_after_the_gates(run)
    return Outcome(lines=tuple(lines), failed=failed)


def _release_after_the_gates(run: HarnessRun) -> tuple[list[str], bool]:
    """The FINISH row "publish": (lines, failed). With --publish, once every gate has reported: the
    flavor's release set (the gate's PLAN_PROPERTY names it) against the run's verdicts; only when
    every gate of it passed, the wheel to dist/, the review page, and the commands (--dry-run) or
    the signed release report. What it decided is HarnessRun.publish_outcome (the closing line);
    a refusal is also the publish gate's verdict in the ledger, in the gate table's words."""
    if not run.options.publish or run.config.option.collectonly:
        return [], False
    plan = run.publish_plan
    if plan is None or run.release is None:
        # the gate failed (its outcome says why) or never ran (deselected by --sw, -k, -o python_functions)
        return [], True
    verdicts = run.ledger.verdicts()
    rset = release_set_of(run).including(plan["gates"])
    excused = inapplicable_shard_gates(run, rset.gates)
    not_passed = rset.not_passed(verdicts, excused=excused)
    flavor = run.options.profile.name
    outcome: dict[str, Any] = {"set_size": rset.size(), "set_passed": rset.size() - len(not_passed), "flavor": flavor}
    run.publish_outcome = outcome
    try:
        if not_passed:
            listing = "\n".join(f"  {verdict.upper():13} {nodeid}" for nodeid, verdict in not_passed)
            raise PublishRefused(
                f"publish refused: {len(not_passed)} of {rset.size()} gates of the {flavor} release set did "
                f"not pass in this run (the set is build_steps/release_sets/{flavor}.json; every gate of it "
                f"must run and pass in one run)\n{listing}")
        outcome.update(_release(run, rset.gates, verdicts, excused))
    except (HarnessError, UsageError) as exc:
        why = str(exc)
        outcome.update(published=False, reason=(why.splitlines() or ["?"])[0])
        run.ledger.refuse(plan["nodeid"], outcome["reason"])
        return ["", *why.splitlines()], True
    return [], False


def _release(run: HarnessRun, gates: list[str], verdicts: dict[str, str], excused: dict[str, str]
             ) -> dict[str, Any]:
    """Every gate of the set passed: the release's commands, or its signed report."""
    opts = run.options
    pin, release, profile = run.pin, run.release, opts.profile
    if pin is None or release is None:
        raise PublishRefused("publish refused: this run pinned no wheel")
    wheel = Path(pin.source)
    if publish.wheel_version(wheel) != release.version:
        raise PublishRefused(
            f"publish refused: {wheel.name} carries version {publish.wheel_version(wheel)}, but this run "
            f"releases {release.version} ({release.source}); the build did not use the release version "
            "(options.wheel_version)")
    rec = the_record(run)
    facts = publish.release_facts(rec.audit)
    # Re-read the repository now, right before the report: HEAD, a clean tree and free tags (an
    # hour-long build leaves time for someone else to publish). No gh and no token here.
    state = publish.preflight(run.release_src or Path(run.config.invocation_params.dir), opts.remote, dry_run=True)
    publish.resolve_release_version(state, profile, explicit=release.version)
    publish.check_commit(facts, state.head)
    # The file the release uploads: the run's private copy of the wheel, the bytes the gates
    # judged, checked now and again right before the upload (publish.execute). dist/ gets the same
    # bytes first (the report names dist/'s copy: the run's own dir is removed after a green run).
    upload = verify(pin, "the publish")
    paths = run.plan.paths
    if not opts.dry_run and paths is not None:
        upload = package.publish_to_dist(upload, paths.dist, sha256=pin.sha256, src=paths.src,
                                         remote_tags=state.remote_tags)
    # Where the release's review page is written: --review-page, else the build's harness-logs/,
    # else (an existing --wheel) the run's shared dir.
    explicit = run.config.getoption("review_page", None)
    page_path = Path(explicit) if explicit is not None else (
        paths.logs / "review.html" if paths is not None else run.shared / "review.html")
    # The review page goes up with the wheel: what the reviewer saw is what the release shows.
    page = publish_page(replace(rec, host=HostFacts.measure(), exitstatus=None), page_path, verdicts)
    ran = sorted(g for g in gates if verdicts.get(g) == "passed")
    rplan = publish.plan_release(state, release, profile, facts, upload, gates=ran, digest=pin.sha256,
                                 assets=[page])
    if opts.dry_run:
        return {"published": False, "dry_run": True, "tag": rplan.tag, "wheel": str(rplan.wheel),
                "commands": rplan.printable()}
    report = run.config.getoption("release_report")
    write_report(report, release_content(
        flavor=profile.name, repo=state.repo, remote=state.remote, version=release.version, tag=rplan.tag,
        commit=state.head, wheel=upload, sha256=pin.sha256, facts=dataclasses.asdict(facts),
        gates_passed=ran, verdicts={g: verdicts.get(g, "not run") for g in gates}, excused=excused,
        assets=[page]))
    return {"published": False, "prepared": True, "report": str(report), "tag": rplan.tag, "wheel": str(upload)}


def unlock_pin(run: HarnessRun) -> Outcome:
    """The pin's dir removable again (dist/ has read the copy); the run dir itself goes at
    pytest_unconfigure (harness.plugins.run_dir)."""
    if run.pin is not None:
        unlock(run.pin)
    return NOTHING


#: The end of the run, in order.
FINISH = (
    Row("classify the stop", classify_stop, on_workers=True),
    Row("judge", judge),
    Row("read the run record", read_record),
    Row("check the pin", check_pin),
    # after every gate reported, before the wheel is placed (the release's copy goes to dist/ first)
    Row("publish", publish_release),
    Row("build the report", build_report),
    Row("write the JSON", write_json),
    Row("driver stub note", driver_stub_note),
    Row("place the wheel", place_wheel),
    Row("write the page", write_page),
    Row("GPU policy", gpu_policy),
    Row("shard table", shard_table),
    Row("unlock", unlock_pin),
)


def apply(run: HarnessRun, outcome: Outcome) -> None:
    """One row's outcome into the run's summary and exit status."""
    if outcome.section is not None:
        run.sections.setdefault(outcome.section, []).extend(outcome.lines)
    else:
        run.report_lines.extend(outcome.lines)
        if outcome.loud and not run.ledger.results():
            for line in outcome.lines:
                say(line)
    if outcome.exit is not None:
        run.exitstatus = outcome.exit
    elif outcome.failed and run.exitstatus == pytest.ExitCode.OK:
        run.exitstatus = pytest.ExitCode.TESTS_FAILED


def finish_run(run: HarnessRun, exitstatus: int, rows: Iterable[Row] = FINISH) -> int:
    """Runs ``rows`` for ``run`` and returns the exit status they settled on. The chain's records
    and the pin are read once, here. A row that raises fails the run (exit 1) and the rows after it
    still run (the pin is unlocked, the page written)."""
    run.exitstatus = exitstatus
    if not run.is_worker:
        run.records = chain_records(run.shared)
        run.after_records = after_chain_records(run.shared)
        run.pin = load_pin(run.shared)
    for row in rows:
        if run.is_worker and not row.on_workers:
            continue
        try:
            outcome = row.run(run)
        except Exception as exc:  # noqa: BLE001 - fail closed, name the row, go on
            outcome = Outcome(lines=(f"end of the run: {row.name} FAILED: {type(exc).__name__}: {exc}",),
                              exit=pytest.ExitCode.TESTS_FAILED, loud=True)
        apply(run, outcome)
    return run.exitstatus


# tryfirst wrapper: the table runs before any other plugin's sessionfinish (the terminal reporter
# prints the summary after its own yield), and the run dir's fate is the exit status the session
# ends with.
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    run = harness_run(session.config)
    if run is not None:
        session.exitstatus = finish_run(run, session.exitstatus)
    result = yield
    if run is not None:
        run.exitstatus = session.exitstatus
    return result
