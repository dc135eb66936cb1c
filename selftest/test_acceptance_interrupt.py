"""Real-fork defect 9: an acceptance run cut short by SIGINT must never read as a pass.

On the GPU host a ``timeout -s INT`` ended the GPU lane while shard gpu_operator_numpy (part 1/4)
was running: the shard had no row, the table said "10/10 shards PASS" and ``acceptance.passed``
was true. Here the same, for real and on the CPU: a child pytest of the harness (xdist, as the GPU
lane runs; one worker, so the shards run in their file's order) installs the real mxnet 1.9.1
wheel from PyPI into its venv and runs the sample tree's shards: one passes, the next hangs (part
1/2 of a split shard), and the third (split too) never starts. SIGINT goes to the child's whole
process group, as ``timeout`` sends it. Every requested shard must then be a row: the cut one
INCOMPLETE (cut short by the interrupt, with what its log shows it passed and its part), the one
that never started INCOMPLETE (not started), the summary not "N/N shards PASS", ``passed`` false,
the exit status the interrupt's (2), not a FAIL's; and no process of the shards outlives the run.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selftest.conftest import HARNESS_ROOT
from selftest.fixtures_build import copy_sample_tree

#: The sample tree's shards: one that passes at once, one that hangs (test_sample_slow.py: one
#: quick test, then a sleep), one queued behind it. The shard timeouts are far
#: beyond the test's wait: only the interrupt ends the hanging shards.
SHARDS = """
[run]
cwd = "."
timeout_min = 10

[parallel]
cpu = 2

[requirements]
test = ["pytest", "pytest-xdist", "pytest-timeout"]

[[shard]]
id = "sample_pass"
description = "sample: passes at once"
lane = "cpu"
paths = ["tests/python/unittest/test_sample_ok.py"]
args = ["-v", "-k", "version"]

[[shard]]
id = "sample_slow"
description = "sample: one quick test, then one that hangs (split in two parts; part 1/2 holds both)"
lane = "cpu"
paths = ["tests/python/unittest/test_sample_slow.py"]
args = ["-v"]

[[shard]]
id = "sample_zlater"
description = "sample: queued behind the hanging shards"
lane = "cpu"
paths = ["tests/python/unittest/test_sample_ok.py"]
args = ["-v", "-k", "version"]
"""


def _shard_processes(marker: str) -> list[str]:
    """The live processes whose command line names ``marker`` (the run's acceptance dir: every
    shard's pytest and its sandbox carry ``--junitxml=<it>/shards/ID.junit.xml``)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if marker in cmdline and "junitxml" in cmdline:
            found.append(f"{proc.name}: {cmdline[:200]}")
    return found


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory, mxnet191_wheelhouse):
    from selftest.fixtures_runtime import MXNET_191_WHEEL
    work = tmp_path_factory.mktemp("acceptance-interrupt")
    src = copy_sample_tree(work / "src")
    shards = work / "shards.toml"
    shards.write_text(SHARDS)
    acc, report = work / "acc", work / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    # --no-deps and only what `import mxnet` needs: the fastest real install of the 1.9.1 wheel
    cmd = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
           "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests"), "-m", "acceptance", "-n", "1",
           f"--wheel={mxnet191_wheelhouse / MXNET_191_WHEEL}", f"--find-links={mxnet191_wheelhouse}", "--no-deps",
           "--extra-requirement=numpy<1.24", "--extra-requirement=requests", f"--mxnet-src={src}",
           f"--shards-file={shards}", f"--acceptance-dir={acc}", f"--provenance-json={report}",
           "--shard-split=sample_slow:1/2", "--shard-split=sample_zlater:1/2", f"--basetemp={work / 'bt'}"]
    out_path = work / "out.txt"
    with open(out_path, "w") as out:
        # a session of its own: the SIGINT below reaches the child's whole group, as `timeout -s INT` does
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=str(work), env=env,
                                start_new_session=True)
    log = acc / "shards" / "sample_slow.log"
    deadline = time.monotonic() + 300
    try:
        # the hanging shard under way: its -v line for test_hangs written
        while not (log.is_file() and "test_hangs" in log.read_text(errors="replace")):
            assert proc.poll() is None, out_path.read_text()[-3000:]
            assert time.monotonic() < deadline, out_path.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # what is left of the shards' processes once the run has returned (the run's watchdog may
    # take a moment; a run whose shards live on fails here)
    left = _shard_processes(str(acc))
    for _ in range(20):
        if not left:
            break
        time.sleep(0.25)
        left = _shard_processes(str(acc))
    return {"rc": rc, "out": out_path.read_text(), "acc": acc, "report": report, "left": left}


@pytest.mark.slow
def test_an_interrupted_run_has_a_row_for_every_requested_shard_and_does_not_pass(interrupted_run):
    out = interrupted_run["out"]
    # the interrupt's exit status: not green, and not a FAIL of the wheel either
    assert interrupted_run["rc"] == 2, out[-4000:]
    acc = json.loads(interrupted_run["report"].read_text())["acceptance"]
    rows = {r["id"]: r for r in acc["shards"]}
    assert {k: r["result"] for k, r in rows.items()} == {
        "sample_pass": "PASS", "sample_slow": "INCOMPLETE", "sample_zlater": "INCOMPLETE"}, \
        json.dumps(acc["shards"], indent=1)[:4000]
    assert acc["passed"] is False, acc
    cut = rows["sample_slow"]
    # cut short: what its log shows it passed so far, and which part of the shard it was
    assert cut["part"] == "1/2" and cut["summary"] == "partial: 1 passed", cut
    assert cut["reason"].startswith("cut short: the run was interrupted while this shard (part 1/2) ran"), cut
    assert cut["log"].endswith("sample_slow.log"), cut
    assert cut["seconds"] > 0, cut
    later = rows["sample_zlater"]
    assert later["part"] == "1/2", later
    assert later["reason"] == "not started: the run was interrupted before this shard (part 1/2) began", later
    # the printed table and summary.md say so too
    assert not re.search(r"^(\d+)/\1 shards PASS", out, re.M), out[-4000:]
    assert "1/3 shards PASS; not PASS: sample_slow, sample_zlater" in out, out[-4000:]
    assert "NOT COMPLETE, not a pass: cut short: sample_slow; not started: sample_zlater" in out, out[-4000:]
    assert re.search(r"^sample_slow +cpu +INCOMPLETE +[0-9.]+ +partial: 1 passed "
                     r"\(cut short: the run was interrupted", out, re.M), out[-4000:]
    summary = (interrupted_run["acc"] / "summary.md").read_text()
    assert ("| sample_slow | cpu | INCOMPLETE | partial: 1 passed (cut short: the run was interrupted while this "
            "shard (part 1/2) ran; it has no result) |") in summary, summary
    assert "NOT COMPLETE: `cut short: sample_slow; not started: sample_zlater`" in summary, summary
    assert re.search(r"\| sample_zlater \| cpu \| INCOMPLETE \| not started", summary), summary
    # the shard's log says it was cut short
    assert "interrupted" in Path(cut["log"]).read_text().splitlines()[-1]


@pytest.mark.slow
def test_no_shard_process_outlives_the_interrupted_run(interrupted_run):
    assert interrupted_run["left"] == [], interrupted_run["left"]


def test_a_cut_short_row_reads_only_a_plain_log(tmp_path):
    """The row of a shard cut short counts its log's -v lines; the log dir is the shard's to write
    (its sandbox), so a link put there is not followed and a FIFO is not waited on."""
    from build_steps.acceptance.run import unreported_result
    from build_steps.acceptance.suite import load_suite
    shard = load_suite(HARNESS_ROOT / "selftest" / "sample_acceptance_shards.toml").by_id()["sample_hang"]
    lines = ("tests/python/unittest/test_sample_slow.py::test_quick PASSED [ 50%]\n"
             "tests/python/unittest/test_sample_slow.py::test_hangs \n")
    log = tmp_path / "sample_hang.log"
    log.write_text(lines)
    row = unreported_result(shard, log, started=12.34, part="2/3", why="the run was interrupted")
    assert (row.result, row.summary, row.seconds, row.part) == ("INCOMPLETE", "partial: 1 passed", 12.3, "2/3")
    assert row.reason == "cut short: the run was interrupted while this shard (part 2/3) ran; it has no result"
    elsewhere = tmp_path / "outside.log"
    elsewhere.write_text(lines)
    link = tmp_path / "linked.log"
    link.symlink_to(elsewhere)
    assert unreported_result(shard, link, started=1.0, part="", why="x").summary == ""
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    assert unreported_result(shard, fifo, started=1.0, part="", why="x").summary == ""
    never = unreported_result(shard, tmp_path / "none.log", started=None, part="", why="the run ended")
    assert (never.result, never.log) == ("INCOMPLETE", "")
    assert never.reason == "not started: the run ended before this shard began"
