"""The wheel under test, extracted once, the facts every static gate reads, and the provenance
report (terminal summary and ``--provenance-json``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from build_steps.readers.audit import collect
from build_steps.once import load_shared, shared_product
from build_steps.errors import HarnessError, WheelUnusable
from build_steps.pinning import verify
from build_steps.readers.report import provenance_document, summary_lines, write_json_atomic
from build_steps.readers.wheel import extract_wheel

from . import report_sections, review
from .common import add_report_lines, harness_run, is_worker, shared_root
from .ledger import failure_reason, verdict_of
from .wheel_pin import load_pin


@pytest.fixture(scope="session")
def wheel_path(wheel_pin) -> Path:
    """The wheel under test (``--wheel PATH``, else the chain's build), as pinned for this run
    (harness.wheel_pin): same name, the bytes hashed when the run started."""
    return Path(wheel_pin.path)


@pytest.fixture(scope="session")
def extracted_wheel(wheel_pin, shared_dir):
    """The wheel, extracted (RECORD verified while extracting) once for all xdist workers. A wheel
    that cannot be extracted is one fault: the first gate reports it and the run stops."""
    def extract():
        try:
            return extract_wheel(verify(wheel_pin, "extraction"), shared_dir / "wheel")
        except WheelUnusable:
            raise
        except HarnessError as exc:
            raise WheelUnusable(str(exc)) from None
    return shared_product(shared_dir, "extracted-wheel", extract)


@pytest.fixture(scope="session")
def audit(extracted_wheel, options, shared_dir):
    """Every fact the static gates judge (build_steps.readers.audit.collect), computed once."""
    return shared_product(shared_dir, "audit", lambda: collect(extracted_wheel, options))


@pytest.fixture(scope="session")
def libmxnet_info(audit):
    """libmxnet.so's dynamic facts; a gate that needs them fails with the reason they are missing."""
    if audit.libmxnet_error or audit.libmxnet is None:
        pytest.fail(f"cannot check: {audit.libmxnet_error}", pytrace=False)
    return audit.libmxnet


class ProvenanceReport:
    """Collects the static gates' verdicts (on the xdist controller: every worker's) and writes
    the report at the end of the session."""

    def __init__(self):
        self.verdicts: dict = {}

    def pytest_runtest_logreport(self, report):
        if "provenance" not in report.keywords or (report.when != "call" and report.passed):
            return
        why = ""
        if not report.passed:
            # The reason decided where the gate ran (harness.ledger): the same with -n 2 as serially.
            facts = verdict_of(report) or {}
            why = facts.get("why") or failure_reason(getattr(report, "longreprtext", "") or "")
        if report.when == "call" or report.nodeid not in self.verdicts or not report.passed:
            self.verdicts[report.nodeid] = (report.outcome, why)

    # tryfirst: the report document is built before harness.review renders it. The records under
    # shared_root last until pytest_unconfigure (harness.common.RunDir).
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        config = session.config
        if is_worker(config) or harness_run(config) is None:
            return  # the controller reports for everyone
        if not self.verdicts and not report_sections.has_gpu_runs(config):
            return
        options = harness_run(config).options
        shared = shared_root(config)
        facts = load_shared(shared, "audit") if shared is not None else None
        add_report_lines(config, ["", "Provenance report:"]
                         + ["  " + ln for ln in summary_lines(facts, self.verdicts)])
        if options.provenance_json is not None or review.wants_page(config):
            doc = provenance_document(facts, self.verdicts, options)
            doc.update(report_sections.extra_sections(config, facts))
            doc.update(review.review_section(config, session.exitstatus))
            pin = load_pin(shared)
            # The bytes the gates judged (harness.wheel_pin), so the report names one exact file.
            if pin is not None:
                doc["wheel"] = {**(doc.get("wheel") or {}), "filename": Path(pin.source).name,
                                "file": pin.source, "sha256": pin.sha256, "size": pin.size}
            config.stash[review.DOC_KEY] = doc  # the review page renders it (harness.review)
        if options.provenance_json is not None:
            try:
                write_json_atomic(options.provenance_json, doc)
            except HarnessError as exc:  # a full filesystem: one block, no traceback, no partial file
                add_report_lines(config, [f"  provenance JSON NOT written: {exc}"])
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
                return
            add_report_lines(config, [f"  provenance JSON written to {options.provenance_json}"])


def pytest_configure(config):
    config.pluginmanager.register(ProvenanceReport(), "mxnet-provenance-report")
