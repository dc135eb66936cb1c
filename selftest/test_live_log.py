"""The harness reports through logging (harness.common.LOG, issue 35): pytest's own live logging
shows its records when the user turns it on, --log-file gets them, and otherwise they reach the
terminal past pytest's capture as before."""
from __future__ import annotations

import pytest

from selftest.conftest import HARNESS_ROOT

PROBE = '''
from harness.common import LIVE, say


def test_reports(request):
    LIVE.config = request.config
    say("==> harness-progress-line")
    assert False, "fails, so pytest prints what it captured"
'''


@pytest.fixture
def probe(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(HARNESS_ROOT))
    pytester.makepyfile(test_probe=PROBE)
    return pytester


def test_without_live_logging_the_line_goes_past_the_capture(probe):
    result = probe.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    assert result.stderr.str().count("==> harness-progress-line") == 1
    assert "live log" not in result.stdout.str()


def test_pytest_live_logging_shows_it_in_its_own_sections(probe):
    result = probe.runpytest_subprocess("-p", "no:cacheprovider", "--log-cli-level=INFO")
    out = result.stdout.str()
    assert "live log call" in out and "INFO" in out and "==> harness-progress-line" in out, out
    assert "harness-progress-line" not in result.stderr.str()


def test_a_log_file_gets_it(probe, tmp_path):
    log = tmp_path / "run.log"
    probe.runpytest_subprocess("-p", "no:cacheprovider", f"--log-file={log}", "--log-file-level=INFO")
    assert "==> harness-progress-line" in log.read_text()
