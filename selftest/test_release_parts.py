"""A flavor's release set judged over several runs on identical bytes (issue 45):
build_steps.release_parts and ``python -m tools.release_verify DIR --flavor=cpu [--wheel=W]``.

The reports are real: one release run builds the CPU sample wheel and runs its static gates and
half of one acceptance shard (``--shard-split``); audit runs of the SAME wheel file run the other
half and another shard, a shard that fails, a shard killed at its timeout, and a shard on a host
whose package index does not answer (not judged); an acceptance-only audit writes the table-only
report the tool must refuse; a static audit of the same wheel's members re-zipped (other bytes) is
the report of another wheel. The
sample tree's shards are the selftests' data file (``--shards-file``), not the fork's: judged
against the committed cpu release set, the fork's shards are named as not run; the merge itself
is shown against the set these runs can cover (the gates the release run ran plus the sample
shards).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps.errors import UsageError
from build_steps.release_manifest import load_manifest
from build_steps.release_parts import (FAILED, NOT_JUDGED_STATE, NOT_RUN, PASS, counts, judge, load_parts,
                                       read_part, shard_of, summary_lines)
from selftest.conftest import HARNESS_ROOT, host_opencv

SAMPLE_SHARDS = HARNESS_ROOT / "selftest" / "sample_acceptance_shards.toml"
SHARD = "tests/test_acceptance.py::test_shard[{}]"
pytestmark = pytest.mark.slow


def _harness(work: Path, name: str, *args: str, paths=("tests",)) -> subprocess.CompletedProcess:
    """One child run of the harness's gates (``paths``: the gate modules, in this order), as a user
    runs them, writing work/reports/<name>.json."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
         "-p", "no:cacheprovider", *(str(HARNESS_ROOT / p) for p in paths), "--flavor=cpu", f"--basetemp={work / ('bt-' + name)}",
         f"--provenance-json={work / 'reports' / (name + '.json')}",
         *host_opencv([f"--shards-file={SAMPLE_SHARDS}", f"--acceptance-dir={work / ('acc-' + name)}", *args])],
        capture_output=True, text=True, cwd=str(work), env=env, timeout=900)
    return proc


def make_runs(work: Path) -> dict:
    """The release run and the audits of its wheel in ``work``, each a real --provenance-json report
    in ``work/reports`` (about 7 minutes on 2 cores)."""
    from selftest.fixtures_build import copy_sample_tree, default_build
    from selftest.fixtures_wheels import read_wheel, write_wheel
    (work / "reports").mkdir(parents=True)
    src = copy_sample_tree(work / "src")
    out = {"work": work, "src": src}
    # 1: the release run builds the wheel; its static gates and the first half of one shard
    r = _harness(work, "r1-release", "-m", "release and (provenance or acceptance)", f"--mxnet-src={src}",
                 "--jobs=2", "--shards=sample_pass", "--shard-split=sample_pass:1/2")
    wheel = next((default_build(src, "cpu") / "harness-wheel").glob("mxnet-*.whl"), None)
    assert r.returncode == 0 and wheel is not None, (r.stdout + r.stderr)[-3000:]
    out["wheel"] = wheel
    audit = ["--wheel", str(wheel), f"--mxnet-src={src}"]
    # 2: another run audits the same wheel file: that shard's second half and another shard
    r = _harness(work, "r2-audit", "-m", "provenance or acceptance", *audit, "--shards=sample_pass,sample_dnnl",
                 "--shard-split=sample_pass:2/2")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    # ... and one for a shard that fails
    r = _harness(work, "r3-failing", "-m", "provenance or acceptance", *audit, "--shards=sample_fail")
    assert r.returncode == 1, (r.stdout + r.stderr)[-3000:]
    # 3: an acceptance-only audit: the harness writes its shard table without the wheel's sha256
    r = _harness(work, "r4-acceptance-only", "-m", "acceptance", *audit, "--shards=sample_dnnl")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    # 4: the same members zipped again: a real wheel of other bytes, and its static audit
    other = work / "other" / wheel.name
    write_wheel(other, read_wheel(wheel), version=wheel.name.split("-")[1])
    r = _harness(work, "r5-other-bytes", "-m", "provenance", "--wheel", str(other))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    out["other"] = other
    # 5: a host whose package index does not answer: the shard is not judged (exit 3). The static
    # gates' module is named first, so they report before the failed install stops the run.
    r = _harness(work, "r6-not-judged", "-m", "provenance or acceptance", *audit, "--shards=sample_dnnl",
                 "--index-url=http://127.0.0.1:9/simple",
                 paths=("tests/test_wheel_integrity.py", "tests/test_acceptance.py"))
    assert r.returncode == 3, (r.stdout + r.stderr)[-3000:]
    # 6: a shard killed at its timeout (a tiny one here): its gate failed on bytes another run passed
    r = _harness(work, "r7-timed-out", "-m", "provenance or acceptance", *audit, "--shards=sample_dnnl",
                 "--shard-timeout=0.005")
    assert r.returncode == 1, (r.stdout + r.stderr)[-3000:]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    return make_runs(tmp_path_factory.mktemp("parts"))


def _dir(runs: dict, *names: str) -> Path:
    """A directory holding the named reports (copies), as a user collects them from the runs."""
    d = runs["work"] / ("dir-" + "-".join(n.split("-")[0] for n in names))
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    for n in names:
        shutil.copy(runs["work"] / "reports" / f"{n}.json", d / f"{n}.json")
    return d


def _verify(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.release_verify", *map(str, args)], capture_output=True,
                          text=True, cwd=str(HARNESS_ROOT), timeout=120)


def _coverable(runs: dict, *shards: str) -> list[str]:
    """The set these runs can cover: the release run's non-shard gates and the sample shards named."""
    release = read_part(runs["work"] / "reports" / "r1-release.json")
    gates = [g for g in load_manifest("cpu").gates if shard_of(g) is None and g in release.verdicts]
    assert len(gates) > 40, gates  # the static gates and the source-tree gate
    return [*gates, *(SHARD.format(s) for s in shards)]


def test_two_partial_reports_on_one_wheel_pass_together(runs):
    parts = load_parts(_dir(runs, "r1-release", "r2-audit"))
    wanted = _coverable(runs, "sample_pass", "sample_dnnl")
    merged = judge(parts, "cpu", gates=wanted)
    assert merged.state == PASS and merged.exit_code == 0, summary_lines(merged)
    assert merged.done == len(wanted) and len(merged.parts) == 2
    lines = summary_lines(merged)
    assert lines[-1] == (f"RELEASE {runs['wheel'].name}: PASS ({len(wanted)}/{len(wanted)}) over the cpu release "
                         "set from 2 run(s) on identical bytes")
    # sample_pass ran in halves, one per run: its row names both, each with its counts and seconds
    row = next(ln for ln in lines if "test_shard[sample_pass]" in ln)
    assert row.lstrip().startswith("PASS"), row
    assert re.search(r"r1-release\.json \(\S+, [0-9T:+-]+\) PASS part 1/2 [12]/0/0 p/f/s [0-9.]+s; "
                     r"r2-audit\.json \(\S+, [0-9T:+-]+\) PASS part 2/2 [12]/0/0 p/f/s [0-9.]+s$", row), row
    # the runs used the selftests' shard data: said once per run, as the harness says it
    assert sum("development run" in ln and "--shards-file" in ln for ln in lines) == 2
    # neither run alone passes the set: a half of a shard is no pass, and the other run's shard is missing
    alone = judge(parts[:1], "cpu", gates=wanted)
    assert alone.state == FAILED and alone.exit_code == 1
    assert {i.nodeid: i.detail for i in alone.named(NOT_RUN)} == {
        SHARD.format("sample_pass"): "part 2/2 missing", SHARD.format("sample_dnnl"): "in no report"}
    assert summary_lines(alone)[-1].endswith("; not run: shard sample_pass, shard sample_dnnl")
    alone = judge(parts[1:], "cpu", gates=wanted)
    assert next(i.detail for i in alone.items if i.nodeid == SHARD.format("sample_pass")) == "part 1/2 missing"


def test_a_gate_not_judged_in_one_run(runs):
    # the host of r6 could not reach its package index: the shard is not judged there (exit 3) ...
    parts = load_parts(_dir(runs, "r1-release", "r6-not-judged"))
    merged = judge(parts, "cpu", gates=_coverable(runs, "sample_dnnl"))
    assert merged.state == NOT_JUDGED_STATE and merged.exit_code == 3, summary_lines(merged)
    assert "pip could not reach the package index" in merged.named(NOT_JUDGED_STATE)[0].detail
    assert summary_lines(merged)[-1].endswith("; not judged: shard sample_dnnl")
    # the shard table's row says why in the words of the gate's verdict (the install's one line), not
    # the first line of pytest's fixture traceback (it was "options = RunOptions(profile=Profile(...")
    rows = json.loads((runs["work"] / "reports" / "r6-not-judged.json").read_text())["acceptance"]["shards"]
    [row] = [r for r in rows if r["id"] == "sample_dnnl"]
    assert "pip could not reach the package index" in row["reason"] and "RunOptions(" not in row["reason"], row
    # ... and a run that judged it on the same bytes passed it
    parts = load_parts(_dir(runs, "r1-release", "r2-audit", "r6-not-judged"))
    assert judge(parts, "cpu", gates=_coverable(runs, "sample_pass", "sample_dnnl")).state == PASS


def test_a_failed_shard_fails_the_set(runs):
    parts = load_parts(_dir(runs, "r1-release", "r2-audit", "r3-failing"))
    merged = judge(parts, "cpu", gates=_coverable(runs, "sample_pass", "sample_dnnl", "sample_fail"))
    assert merged.state == FAILED and merged.exit_code == 1
    [failed] = merged.named(FAILED)
    assert failed.nodeid == SHARD.format("sample_fail") and "2 failed, 1 passed" in failed.detail
    assert counts(failed.evidence[0].row) == "1/2/0"
    assert summary_lines(merged)[-1].endswith("; failed: shard sample_fail")
    # every other gate passed (the failing run's static gates too): one failure fails the set
    assert merged.done == len(merged.items) - 1


def test_a_failure_is_not_erased_by_a_pass_in_another_run(runs):
    # r2 passed sample_dnnl; r7 ran it on the same bytes and killed it at its timeout
    parts = load_parts(_dir(runs, "r1-release", "r2-audit", "r7-timed-out"))
    merged = judge(parts, "cpu", gates=_coverable(runs, "sample_pass", "sample_dnnl"))
    assert merged.state == FAILED and merged.exit_code == 1
    [failed] = merged.named(FAILED)
    assert failed.nodeid == SHARD.format("sample_dnnl") and "timed out after 0.005 min" in failed.detail, failed
    assert sorted(e.part.name for e in failed.evidence) == ["r2-audit.json", "r7-timed-out.json"]
    assert summary_lines(merged)[-1].endswith("; failed: shard sample_dnnl")


def test_the_command_judges_the_committed_cpu_release_set(runs):
    d = _dir(runs, "r1-release", "r2-audit")
    r = _verify(d, "--flavor=cpu", f"--wheel={runs['wheel']}")
    assert r.returncode == 1, r.stdout + r.stderr
    manifest = load_manifest("cpu").gates
    last = r.stdout.splitlines()[-1]
    assert last.startswith(f"RELEASE {runs['wheel'].name}: FAIL (") and f"/{len(manifest)}) over the cpu" in last
    # the fork's shards did not run on the sample tree: each is named, and every gate has a row
    for shard in ("cpu_unittest", "dnnl_smoke", "quant_general", "onnx_export_import"):
        assert f"shard {shard}" in last, last
    assert all(any(g in ln for ln in r.stdout.splitlines()) for g in manifest)
    assert "sample_pass" not in last  # not a gate of the committed set


def test_reports_of_other_bytes_are_refused_or_left_out(runs):
    d = _dir(runs, "r1-release", "r2-audit", "r5-other-bytes")
    r = _verify(d, "--flavor=cpu")
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    [line] = r.stderr.splitlines()
    assert "the reports are of 2 different wheels" in line and "r5-other-bytes.json" in line, line
    # with --wheel, the other wheel's report is named and left out
    r = _verify(d, "--flavor=cpu", f"--wheel={runs['wheel']}")
    assert r.returncode == 1
    assert "ignored r5-other-bytes.json: another wheel (sha256" in r.stdout
    assert "from 2 run(s) on identical bytes" in r.stdout.splitlines()[-1]
    # the other wheel's file: none of the release runs' reports is of it
    r = _verify(_dir(runs, "r1-release", "r2-audit"), "--flavor=cpu", f"--wheel={runs['other']}")
    assert r.returncode == 2 and "none of the 2 reports is of the wheel with sha256" in r.stderr


def test_a_report_that_cannot_be_tied_to_the_wheel_is_refused(runs):
    d = _dir(runs, "r1-release", "r4-acceptance-only")
    r = _verify(d, "--flavor=cpu")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "r4-acceptance-only.json: an acceptance table without the wheel's sha256" in r.stderr
    assert '-m "provenance or acceptance"' in r.stderr
    # a JSON file the run wrote that is no harness report: the acceptance dir's summary.json
    shutil.copy(runs["work"] / "acc-r2-audit" / "summary.json", d / "r4-acceptance-only.json")
    r = _verify(d, "--flavor=cpu")
    assert r.returncode == 2 and "valid JSON but not a harness report" in r.stderr, r.stderr


def test_a_report_of_another_release_set_or_flavor_is_refused(runs):
    parts = load_parts(_dir(runs, "r1-release", "r2-audit"))
    gates = load_manifest("cpu").gates
    # this checkout with a gate the reports' harness did not know
    with pytest.raises(UsageError, match=r"r1-release.json: made by a harness with another cpu release set "
                                         r"\(not in its release set: tests/test_new.py::test_new\)"):
        judge(parts, "cpu", manifest=[*gates, "tests/test_new.py::test_new"])
    # ... and without one the reports' harness had
    dropped = "tests/test_metadata.py::test_hard_requirements_pinned"
    with pytest.raises(UsageError, match=r"not in this checkout's: " + dropped.replace(".", r"\.")):
        judge(parts, "cpu", manifest=[g for g in gates if g != dropped])
    with pytest.raises(UsageError, match="a report of the cpu flavor, not cuda"):
        judge(parts, "cuda")


def test_the_report_json_the_tool_reads(runs):
    """What the tool reads is what the harness writes: each run's report as the harness wrote it."""
    for name in ("r1-release", "r2-audit", "r3-failing"):
        doc = json.loads((runs["work"] / "reports" / f"{name}.json").read_text())
        part = read_part(runs["work"] / "reports" / f"{name}.json")
        assert part.sha256 == doc["wheel"]["sha256"] and part.flavor == "cpu" and part.host != "?"
        assert part.rows and all(r["id"] in ("sample_pass", "sample_dnnl", "sample_fail") for r in part.rows.values())


def test_no_release_report_from_real_parts_short_of_the_set(runs, tmp_path_factory, monkeypatch):
    """The real runs' reports with --release-report: the fork's shards did not run on the sample
    tree, so nothing is written (exit 1); the facts R would carry come from the real release run's
    audit, and the audit run of the same build says the same (build_steps.release_parts.release_facts_of)."""
    from build_steps.release_parts import release_facts_of
    from build_steps.release_report import KEY_ENV
    monkeypatch.setenv(KEY_ENV, str(tmp_path_factory.mktemp("key") / "report.key"))
    d = _dir(runs, "r1-release", "r2-audit")
    report = tmp_path_factory.mktemp("out") / "release-report.json"
    r = _verify(d, "--flavor=cpu", f"--wheel={runs['wheel']}", f"--mxnet-src={runs['src']}",
                f"--release-report={report}")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.strip() == (f"release report NOT written: the cpu release set is FAIL on {runs['wheel'].name}; "
                                "only a PASS of the whole set publishes")
    assert list(report.parent.iterdir()) == []  # no R, no table
    head = subprocess.run(["git", "-C", str(runs["src"]), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    facts = release_facts_of(load_parts(d))
    assert head in facts.commits and facts.stamp_source == "binary", facts
    assert "CUDA" not in facts.features and facts.sass == (), facts
