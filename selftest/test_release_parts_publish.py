"""A split release made publishable (issue 45 item 3): ``python -m tools.release_verify DIR
--flavor=cpu --wheel=W --mxnet-src=TREE --release-report=R`` writes the signed release report of a
whole-set PASS over the parts, and ``mxnet-release publish --report=R`` (unchanged) publishes it.

The parts are two ``--provenance-json`` reports in the harness's format of one real wheel file:
the release run that built it (every gate but the shards, with the build's CMake facts) and an
audit run of the same bytes on another host (every shard of the committed cpu release set). They
are written here because no run of the sample tree can pass the fork's shards (the real runs'
reports are test_release_parts's); everything they meet is real: the wheel (a zip the harness's
--wheel check reads), a git checkout with a bare remote, the report key, the recorded ``gh``
stand-in, the release_verify and mxnet-release commands as a release engineer runs them.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps.pinning import sha256_of
from build_steps.release_manifest import load_manifest
from build_steps.release_parts import shard_of
from build_steps.release_report import KEY_ENV
from selftest.conftest import HARNESS_ROOT
from selftest.test_publish_verifies import _wheel

SCRIPT = Path(sys.executable).parent / "mxnet-release"
VERSION = "2.0.0+cpu.linux.20260614.1"
TAG = f"v{VERSION}"
GATES = load_manifest("cpu").gates


def _part(path: Path, wheel: Path, ran: dict, *, host: str, commit: str, built: bool,
          development: list | None = None) -> Path:
    """One run's --provenance-json report as harness.finish writes it: the gates ``ran`` (nodeid ->
    verdict), the rest of the set not run, the shard rows of the shards it ran, the audit's facts
    (the build's CMake cache only in the run that built the wheel)."""
    shards = [{"id": shard_of(g), "lane": shard_of(g).split("_")[0], "result": "PASS" if v == "passed" else "FAIL",
               "summary": "3 passed in 2.00s" if v == "passed" else "1 failed, 2 passed in 2.00s", "seconds": 2.0}
              for g, v in ran.items() if shard_of(g)]
    # cuda_arch: a CPU build's CMake cache keeps MXNET_CUDA_ARCH's default, as the real fork's cpu
    # cache does (shared/fixtures/mxnet-fork-3f13890-cpu-O0) and the sample tree's
    facts = {"cmake": {"features": {"USE_ONEDNN": {"enabled": True}, "USE_OPENCV": {"enabled": True},
                                    "USE_CUDA": {"enabled": False}},
                       "cuda_arch": "8.0;8.6;8.9;9.0;12.0+PTX"} if built else None,
             "fatbin": None, "stamps": {"binary": [commit]}, "requirements": {"hard": {}}}
    doc = {
        "schema": 1, "profile": "cpu", "created": "2026-12-06T21:00:00+00:00", "facts": facts,
        "wheel": {"sha256": sha256_of(wheel), "filename": wheel.name, "file": str(wheel)},
        "review": {"gates": [{"nodeid": g, "verdict": v, "why": None if v == "passed" else "it failed"}
                             for g, v in ran.items()],
                   "not_run": [{"nodeid": g} for g in GATES if g not in ran],
                   "verdict": {"flavor": "cpu", "outcome": "PASS" if all(v == "passed" for v in ran.values())
                               else "FAIL"},
                   "provenance": {"host": host},
                   **({"overrides": {"development_options": development}} if development else {})},
        "acceptance": {"shards": shards},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def _parts(directory: Path, wheel: Path, commit: str, *, drop: str | None = None, fail: str | None = None,
           development: list | None = None) -> Path:
    """The release run (every gate but the shards) and the audit of its wheel (every shard)."""
    release = {g: "passed" for g in GATES if shard_of(g) is None}
    audit = {g: "failed" if g == fail else "passed" for g in GATES if shard_of(g) is not None and g != drop}
    _part(directory / "r1-release.json", wheel, release, host="build-host", commit=commit, built=True,
          development=development)
    _part(directory / "r2-shards.json", wheel, audit, host="gpu-host-16c", commit=commit, built=False)
    return directory


def _verify(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.release_verify", *map(str, args)], capture_output=True,
                          text=True, cwd=str(HARNESS_ROOT), timeout=300, env=dict(os.environ))


def _publish(report: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), "publish", f"--report={report}", *args], cwd=report.parent,
                          capture_output=True, text=True, timeout=300)


def test_a_split_release_that_passes_is_published_once(release_repo, gh_standin, report_key, tmp_path):
    wheel = _wheel(tmp_path / "wheelhouse", VERSION)
    parts = _parts(tmp_path / "parts", wheel, release_repo.head)
    report = tmp_path / "out" / "release-report.json"
    report.parent.mkdir()
    r = _verify(parts, "--flavor=cpu", f"--wheel={wheel}", f"--mxnet-src={release_repo.repo}",
                f"--release-report={report}")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[-2] == (f"RELEASE {wheel.name}: PASS ({len(GATES)}/{len(GATES)}) over the cpu release set from "
                         "2 run(s) on identical bytes")
    assert lines[-1].startswith(f"release report written to {report} (tag {TAG}")
    # R: the one-run schema, plus the parts it was judged from
    doc = json.loads(report.read_text())
    content = doc["content"]
    dist_wheel = release_repo.repo / "dist" / wheel.name
    assert sha256_of(dist_wheel) == sha256_of(wheel)
    assert content["wheel"] == str(dist_wheel) and content["sha256"] == sha256_of(wheel)
    assert content["release"] == {"version": VERSION, "tag": TAG, "commit": release_repo.head}
    assert content["flavor"] == "cpu" and content["remote"] == "origin" and content["excused"] == []
    assert sorted(content["gates_passed"]) == sorted(GATES)
    assert content["facts"]["features"] == ["ONEDNN", "OPENCV"]
    assert content["parts"] == [
        {"file": "r1-release.json", "sha256": sha256_of(parts / "r1-release.json"), "host": "build-host",
         "created": "2026-12-06T21:00:00+00:00", "outcome": "PASS"},
        {"file": "r2-shards.json", "sha256": sha256_of(parts / "r2-shards.json"), "host": "gpu-host-16c",
         "created": "2026-12-06T21:00:00+00:00", "outcome": "PASS"}]
    table = report.parent / "release-report.release-set.txt"
    assert table.read_text().splitlines()[-1] == lines[-2]
    assert set(content["assets"]) == {str(table), str(parts / "r1-release.json"), str(parts / "r2-shards.json")}

    # an R edited after writing is refused by the publish step
    edited = report.parent / "edited.json"
    forged = json.loads(report.read_text())
    forged["content"]["release"]["commit"] = "0" * 40
    edited.write_text(json.dumps(forged))
    p = _publish(edited, "--yes")
    assert p.returncode == 4 and "digest does not match its content" in p.stderr, p.stdout + p.stderr

    # the dry run prints the plan and changes nothing
    p = _publish(report, "--dry-run")
    assert p.returncode == 0, p.stdout + p.stderr
    assert shlex.join(["git", "tag", "-a", TAG]) in p.stdout, p.stdout
    # the upload is the publish step's private pinned copy of dist/'s wheel (build_steps.pinning)
    printed = p.stdout[p.stdout.index("gh release create"):p.stdout.index("dry run: nothing was changed")]
    gh = shlex.split(printed)  # the last command: its notes are quoted over several lines
    assert gh[:3] == ["gh", "release", "create"] and gh[3] == TAG and Path(gh[4]).name == wheel.name, gh
    assert gh[5:8] == [str(table), str(parts / "r1-release.json"), str(parts / "r2-shards.json")], gh
    assert "dry run: nothing was changed" in p.stdout
    assert release_repo.local_tags() == [] and release_repo.remote_tags() == []
    assert [c for c in gh_standin.calls() if c[:1] == ["release"]] == []

    # the real publish against the bare remote: the tag, the release with the wheel of dist/, the
    # judgement's table and the parts' reports attached, the notes naming the facts and the sha256
    p = _publish(report, "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"PUBLISHED https://github.com/example/mxnet/releases/tag/{TAG}" in p.stdout
    assert release_repo.remote_tags() == [TAG] and release_repo.local_tags() == [TAG]
    [created] = [c for c in gh_standin.calls() if c[:2] == ["release", "create"]]
    assert created[2] == TAG and Path(created[3]).name == wheel.name
    assert created[4:7] == [str(table), str(parts / "r1-release.json"), str(parts / "r2-shards.json")]
    notes = created[created.index("--notes") + 1]
    assert "Features: ONEDNN, OPENCV" in notes and f"sha256 {sha256_of(wheel)}" in notes
    assert f"Built from master@{release_repo.head}" in notes
    # the notes say where the gates passed: over the parts, not in one run that published it
    assert "in the run that published it" not in notes, notes
    assert ("Every release gate of the harness passed, over 2 runs on these identical bytes:\n"
            "- r1-release.json (build-host, 2026-12-06T21:00:00+00:00)\n"
            "- r2-shards.json (gpu-host-16c, 2026-12-06T21:00:00+00:00)\n") in notes, notes

    # a second publish of the same version is refused, as is a second release report for it
    p = _publish(report, "--yes")
    assert p.returncode == 4 and f"tag {TAG} already exists" in p.stderr, p.stdout + p.stderr
    again = report.parent / "again.json"
    r = _verify(parts, "--flavor=cpu", f"--wheel={wheel}", f"--mxnet-src={release_repo.repo}",
                f"--release-report={again}")
    assert r.returncode == 4 and not again.exists(), r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and f"tag {TAG} already exists" in r.stderr
    assert len([c for c in gh_standin.calls() if c[:2] == ["release", "create"]]) == 1


@pytest.mark.parametrize("case, code, said", [
    ("a shard missing", 1, "the cpu release set is FAIL"),
    ("a shard failed", 1, "the cpu release set is FAIL"),
    ("another wheel", 2, "none of the 2 reports is of the wheel with sha256"),
    ("a development run", 4, "r1-release.json is a development run (--shards-file=x.toml)"),
    ("HEAD is not the wheel's commit", 4, "is not HEAD"),
    ("no --mxnet-src", 2, "--release-report needs --wheel=W"),
    ("the key in the tree", 4, "a sandboxed step could read it"),
])
def test_no_release_report_unless_the_whole_set_passed(case, code, said, release_repo, gh_standin, report_key,
                                                       tmp_path, monkeypatch):
    if case == "the key in the tree":  # where the tree's own code (configure, the shards) could read it
        monkeypatch.setenv(KEY_ENV, str(release_repo.repo / "report.key"))
    wheel = _wheel(tmp_path / "wheelhouse", VERSION)
    shard = next(g for g in GATES if shard_of(g))
    commit = "f" * 40 if case == "HEAD is not the wheel's commit" else release_repo.head
    parts = _parts(tmp_path / "parts", wheel, commit, drop=shard if case == "a shard missing" else None,
                   fail=shard if case == "a shard failed" else None,
                   development=["--shards-file=x.toml"] if case == "a development run" else None)
    judged = _wheel(tmp_path / "other", VERSION, payload="import os") if case == "another wheel" else wheel
    report = tmp_path / "out" / "release-report.json"
    report.parent.mkdir()
    src = [] if case == "no --mxnet-src" else [f"--mxnet-src={release_repo.repo}"]
    r = _verify(parts, "--flavor=cpu", f"--wheel={judged}", *src, f"--release-report={report}")
    assert r.returncode == code, r.stdout + r.stderr
    assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert list(report.parent.iterdir()) == []  # nothing written: no R, no table
    assert not (release_repo.repo / "dist").exists()
    assert release_repo.local_tags() == [] and gh_standin.calls() == []
    assert not report_key.exists() and not (release_repo.repo / "report.key").exists()
