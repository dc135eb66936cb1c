"""The publish gate end to end, in a child pytest run as a user would run it.

Refusals before anything is built (dirty tree, unreachable remote, no --yes) exit with a usage
error; refusals after the gates (one skipped or failed) fail the publish gate and change nothing.
"""
from __future__ import annotations

import pytest

from build_steps.release_manifest import release_gates
from selftest.conftest import HARNESS_ROOT, run_gates
from selftest.fixtures_publish import git, other_gates_source

PUBLISH_GATE = HARNESS_ROOT / "tests" / "test_publish.py"


def _run(pytester, repo, *args, others: str | None = None):
    paths = [PUBLISH_GATE]
    if others is not None:
        paths.append(pytester.makepyfile(test_other_gates=other_gates_source(others)))
    return run_gates(pytester, *paths, "--mxnet-src", repo.repo, *args, timeout=300)


def _final_line(result) -> str:
    lines = [ln for ln in result.outlines if ln.startswith("RELEASE ")]
    assert lines, result.stdout.str()
    return lines[-1]


def test_dirty_tree_refused_before_anything_runs(pytester, release_repo):
    (release_repo.repo / "CMakeLists.txt").write_text("edited\n")
    result = _run(pytester, release_repo, "--publish", "--dry-run", others="passes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*uncommitted tracked change*commit or stash*"])
    assert "passed" not in result.stdout.str()


def test_unreachable_remote_refused_before_anything_runs(pytester, release_repo):
    git(release_repo.repo, "remote", "set-url", "origin", "/nonexistent/remote.git")
    result = _run(pytester, release_repo, "--publish", "--dry-run", others="passes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot read the tags of remote 'origin'*"])


def test_taken_tag_refused_before_anything_runs(pytester, release_repo):
    release_repo.tag("v2.0.0+cu13.bw.20260614.1", push=True, local=False)
    result = _run(pytester, release_repo, "--publish", "--dry-run",
                  "--wheel-version", "2.0.0+cu13.bw.20260614.1", others="passes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*already exists on remote 'origin'*"])


def test_publish_without_a_report_or_dry_run_refused(pytester, release_repo, gh_standin):
    result = _run(pytester, release_repo, "--publish", others="passes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--publish needs --release-report=PATH*or --dry-run*"])
    assert gh_standin.calls() == []


def test_in_run_real_publish_refused(pytester, release_repo, gh_standin):
    # Issue 29: the verify run holds no token; --yes belongs to mxnet-release publish.
    result = _run(pytester, release_repo, "--publish", "--yes", others="passes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--publish --yes: the verify run publishes nothing itself*"
                                 "mxnet-release publish --report=R --yes*"])
    assert gh_standin.calls() == [] and release_repo.local_tags() == []


def test_dry_run_without_publish_is_a_usage_error(pytester, release_repo):
    result = _run(pytester, release_repo, "--dry-run", others="passes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dry-run, --yes and --release-report only apply together with --publish*"])


@pytest.mark.parametrize("kind, verdict", [("skips", "SKIPPED"), ("fails", "FAILED")])
def test_publish_refused_when_a_gate_did_not_pass(pytester, release_repo, kind, verdict):
    result = _run(pytester, release_repo, "--publish", "--dry-run", "-p", "no:randomly", others=kind)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*publish refused: * gates of the cuda release set did not pass in this run*",
        f"*{verdict}*::test_gate_that_{kind}",
    ])
    assert "NOT published: publish refused: " in _final_line(result)
    assert release_repo.local_tags() == [] and release_repo.remote_tags() == []


def test_publish_refused_under_xdist_waits_for_every_worker(pytester, release_repo):
    result = _run(pytester, release_repo, "--publish", "--dry-run", "-n", "2", others="fails")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*publish refused: * gates of the cuda release set did not pass*",
                                 "*FAILED*test_gate_that_fails*"])
    size = len(release_gates("cuda")) + 2  # the manifest and the two gates of this run
    assert f"FAIL (1/{size} gates of the cuda release set passed); NOT published" in _final_line(result)


def test_without_publish_the_gate_is_not_collected(pytester, release_repo):
    result = _run(pytester, release_repo, "-m", "release", others="passes")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2, deselected=1)
    assert _final_line(result).endswith("PASS (2/2 gates passed); not published (--publish not given)")


def test_publish_judges_gates_that_ran_after_its_gate(pytester, release_repo):
    # The publish gate runs first (named first, no random order) and waits for nothing: the release
    # is judged at the end of the run, where the skip of the gate that ran after it is counted.
    result = _run(pytester, release_repo, "--publish", "--dry-run", "-v", "-p", "no:randomly", others="skips")
    order = [ln for ln in result.outlines if "::" in ln and not ln.startswith(" ")
             and ("PASSED" in ln or "FAILED" in ln or "SKIPPED" in ln)]
    assert "test_publish.py::test_publish" in order[0], order
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*publish refused: * gates of the cuda release set did not pass*",
                                 "*SKIPPED*::test_gate_that_skips"])
    assert "NOT published: publish refused: " in _final_line(result)


# End to end: a green run of the static gates is not a release (the publish gate refuses it,
# naming the gates that did not run): selftest/test_integrity_publish.py. The tag/push/release
# commands and the notes are checked in selftest/test_publish_execute.py; a publish that the
# publish gate lets through needs the whole release set, GPU gates included (a GPU host).


def test_publishing_an_existing_wheel_is_refused_before_anything_runs(pytester, release_repo, tmp_path):
    # Issue 19, item 4: only a full build publishes (docs/release_procedure.md says so).
    import zipfile
    wheel = tmp_path / "mxnet-2.0.0+cu13.bw.20260614.1-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    result = _run(pytester, release_repo, "--publish", "--dry-run", f"--wheel={wheel}", others="passes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [ln for ln in result.stderr.lines if ln.startswith("ERROR")] == [
        f"ERROR: --publish with --wheel {wheel.name}: only a full build publishes. The release set's build "
        "gates verify the build made in the same run, which an existing wheel does not have; run pytest -m "
        "release --mxnet-src=<the checkout> --publish (it builds, verifies and publishes in one run), or "
        "audit this wheel without --publish"]
    assert "passed" not in result.stdout.str() and release_repo.local_tags() == []


def test_bad_wheel_file_name_is_one_usage_error(pytester, tmp_path):
    # Issue 19, item 5: a zip whose name is no wheel name was 29 identical setup errors and exit 1.
    import zipfile
    wheel = tmp_path / "mxnet_latest.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    result = run_gates(pytester, HARNESS_ROOT / "tests", "-m", "provenance", f"--wheel={wheel}", timeout=300)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in result.stderr.lines if ln.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: --wheel {wheel}: mxnet_latest.whl is not a valid "
                                                     "wheel file name"), result.stderr.str()
    assert "error" not in result.stdout.str().lower()
