"""What a shard's pytest said: its log (summary line, failing ids, usage error, first ``E`` line,
or the ``-v`` lines a shard cut short got through) and its junit XML, turned into a verdict the
way the fork's summary does (PASS / FAIL / ERROR / NO_TESTS / INCOMPLETE), except that a shard
that ran no test is NO_TESTS even where the fork's root conftest turns pytest's exit 5 into 0."""
from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any, NamedTuple

#: The summary line the fork's summary greps for, plus pytest's "no tests ran" form.
_SUMMARY = re.compile(r"^=+ (.*(?:passed|failed|error|skipped|xfailed|xpassed|no tests ran|deselected).*"
                      r" in [0-9.]+s.*?) =+$")
_FAILED_ID = re.compile(r"^(FAILED|ERROR) (\S+)")
#: A ``-v`` result line, serial ("path::test PASSED [ 35%]") or xdist ("[gw0] [ 2%] PASSED path::test").
_VERBOSE_RESULT = re.compile(r"^(?:\[gw\d+\] \[ *\d+%\] (?P<w1>[A-Z]+) (?P<id1>\S+::\S+)"
                             r"|(?P<id2>\S+::\S+) (?P<w2>[A-Z]+)(?: +\[ *\d+%\])?)\s*$")
_VERBOSE_WORDS = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped",
                  "XFAIL": "xfailed", "XPASS": "xpassed"}


class ShardLog(NamedTuple):
    summary: str
    failing: list[str]
    #: pytest's ``ERROR: ...`` usage line (a bad option, a missing file), or ""
    usage: str
    #: the first ``E   `` line: what the first failure or collection error says
    first_error: str


class Verdict(NamedTuple):
    result: str  # PASS FAIL ERROR NO_TESTS INCOMPLETE
    summary: str
    failing: list[str]
    reason: str


def read_shard_log(text: str) -> ShardLog:
    """(summary line, failing test ids, pytest usage error line, first ``E`` line) from a shard's log."""
    summary = ""
    failing: list[str] = []
    usage, first_error = "", ""
    for line in text.splitlines():
        if not first_error and line.startswith("E  ") and line[1:].strip():
            first_error = line[1:].strip()
        m = _SUMMARY.match(line.strip())
        if m:
            summary = m.group(1).strip()
        m = _FAILED_ID.match(line)
        if m and m.group(2) not in failing:
            failing.append(m.group(2))
        if not usage and line.startswith("ERROR: "):
            usage = line[7:].strip()
    return ShardLog(summary, failing, usage, first_error)


def partial_results(text: str) -> tuple[str, list[str]]:
    """What a shard that never reached its summary line (a timeout, a crash) got through: the
    ``-v`` result lines counted ("264 passed, 2 failed") and the failing ids among them."""
    counts: dict[str, int] = {}
    failing: list[str] = []
    for line in text.splitlines():
        m = _VERBOSE_RESULT.match(line.strip())
        if not m:
            continue
        word, nodeid = (m.group("w1"), m.group("id1")) if m.group("w1") else (m.group("w2"), m.group("id2"))
        if word not in _VERBOSE_WORDS:
            continue
        counts[_VERBOSE_WORDS[word]] = counts.get(_VERBOSE_WORDS[word], 0) + 1
        if word in ("FAILED", "ERROR") and nodeid not in failing:
            failing.append(nodeid)
    done = ", ".join(f"{n} {w}" for w, n in counts.items())
    return done, failing


def junit_counts(path: Path) -> dict[str, Any] | None:
    """tests/failures/errors/skipped and the failing ids ("classname::name") of a junit XML file,
    or None when it is missing or unreadable (a shard killed before pytest wrote it)."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts: dict[str, Any] = {k: sum(int(s.get(k, 0)) for s in suites)
                              for k in ("tests", "failures", "errors", "skipped")}
    ids = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            ids.append(f"{case.get('classname', '')}::{case.get('name', '')}")
    counts["failing"] = ids
    return counts


def judge(rc: int | None, log_text: str, junit: dict[str, Any] | None, timed_out: bool,
          timeout_min: float) -> Verdict:
    """(result, summary, failing ids, reason) like the fork's summary.md, but strict on emptiness."""
    summary, failing, usage, _ = read_shard_log(log_text)
    if junit and not failing:
        failing = junit["failing"]
    if timed_out or (rc is not None and rc < 0):
        if timed_out or rc is None:
            why = f"timed out after {timeout_min:g} min"
        else:
            try:
                why = f"pytest was killed by {signal.Signals(-rc).name}"
            except ValueError:
                why = f"pytest was killed by signal {-rc}"
        if not summary:
            done, seen_failing = partial_results(log_text)
            summary = f"partial: {done}" if done else ""
            failing = failing or seen_failing
        return Verdict("INCOMPLETE", summary, failing, why)
    ran = junit["tests"] if junit else None
    if rc == 5 or ran == 0 or (not summary and "0 items" in log_text) or "no tests ran" in summary:
        why = "the shard ran no test (pytest exit 5, or the fork's conftest turned exit 5 into 0)"
        return Verdict("NO_TESTS", summary, failing, why)
    if not summary:
        reason = f"pytest exited {rc} without a summary line"
        if usage:
            reason += f": {usage}"
        return Verdict("INCOMPLETE", summary, failing, reason)
    if rc == 0:
        return Verdict("PASS", summary, failing, "")
    if re.search(r"\d+ errors?\b", summary):
        return Verdict("ERROR", summary, failing, "")
    return Verdict("FAIL", summary, failing, "")
