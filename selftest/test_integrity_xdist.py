"""Issue 11, point 5: the gate table, the provenance report and the JSON messages of a run are the
same with ``-n 2`` as serially (the reporting process files what the workers decided)."""
from __future__ import annotations

import json

import pytest


def _report(result) -> list:
    """The gate table and the provenance report: everything from the gate-table header on, up to
    pytest's own short summary."""
    lines = result.outlines
    start = next((i for i, ln in enumerate(lines) if "MXNet release gates" in ln), None)
    assert start is not None, "no gate table in the output:\n" + "\n".join(lines[-60:])
    end = next((i for i in range(start + 1, len(lines)) if "short test summary info" in lines[i]
                or lines[i].startswith("RELEASE ") or lines[i].startswith("=")), len(lines))
    return lines[start + 1:end]


def _messages(path) -> dict:
    doc = json.loads(path.read_text())
    return {nodeid: (g["verdict"], g["message"]) for nodeid, g in doc["gates"].items()}


@pytest.mark.slow
def test_report_under_xdist_equals_the_serial_one(gates, selftest_wheels, tmp_path):
    # A wheel that fails several gates, so the table and the JSON carry real messages.
    wheel = selftest_wheels["variants"]["closure_not_bundled"]
    args = ["-m", "provenance", f"--wheel={wheel}", f"--mxnet-src={selftest_wheels['src']}",
            "-p", "no:randomly"]
    serial = gates(*args, f"--provenance-json={tmp_path / 'serial.json'}")
    spread = gates(*args, "-n", "2", f"--provenance-json={tmp_path / 'xdist.json'}")
    assert serial.ret == spread.ret == pytest.ExitCode.TESTS_FAILED

    # the JSON and the review page beside it are named for the run; everything else must be equal
    serial_report = [ln.replace("serial.json", "X.json").replace("serial.html", "X.html") for ln in _report(serial)]
    spread_report = [ln.replace("xdist.json", "X.json").replace("xdist.html", "X.html") for ln in _report(spread)]
    assert any(ln.startswith("FAILED ") for ln in serial_report), serial_report
    assert any("Provenance report:" in ln for ln in serial_report), serial_report
    assert spread_report == serial_report

    serial_msgs, spread_msgs = _messages(tmp_path / "serial.json"), _messages(tmp_path / "xdist.json")
    assert not any(msg.startswith("[gw") for _, msg in spread_msgs.values()), spread_msgs
    assert any(v == "failed" and msg for v, msg in serial_msgs.values())
    assert spread_msgs == serial_msgs
