"""Release facts, the plan, and executing it against a real bare remote and the gh stand-in."""
from __future__ import annotations

import shlex
import subprocess
import zipfile

import pytest

from build_steps import publish
from build_steps.profile_data import PROFILES
from selftest.fixtures_publish import git

CUDA = PROFILES["cuda"]
VERSION = "2.0.0+cu13.bw.20260614.1"
DECOY = "0123456789abcdef0123456789abcdef01234567"


def audit_facts(head: str, **override) -> dict:
    """The shape of build_steps.readers.audit.Audit.to_json() for the fields the notes use."""
    facts = {
        "cmake": {"features": {k: {"enabled": on, "raw": "ON" if on else "OFF"}
                               for k, on in CUDA.features.items()},
                  "cuda_arch": CUDA.cuda_arch},
        "fatbin": {"sass": ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"],
                   "ptx": ["compute_120"]},
        "stamps": {"binary": sorted([head, DECOY]), "build_files": {}},
        "requirements": {"hard": {"onnx": ">=1.7.0,<1.22", "numpy": ">=1.17,<2"}},
    }
    facts.update(override)
    return facts


@pytest.fixture
def wheel(tmp_path):
    path = tmp_path / "dist" / f"mxnet-{VERSION}-cp311-cp311-linux_x86_64.whl"
    path.parent.mkdir()
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    return path


def make_plan(repo, wheel, facts=None):
    state = publish.preflight(repo.repo, "origin", dry_run=True)
    release = publish.resolve_release_version(state, CUDA, explicit=VERSION)
    facts = publish.release_facts(facts or audit_facts(state.head))
    publish.check_commit(facts, state.head)
    return publish.plan_release(state, release, CUDA, facts, wheel)


# --------------------------------------------------------------------------------------------
# Facts and the commit check
# --------------------------------------------------------------------------------------------
def test_facts_from_the_audit_report():
    head = "a" * 40
    facts = publish.release_facts(audit_facts(head))
    assert facts.features == ("CUDA", "CUDNN", "NCCL", "ONEDNN", "OPENCV", "OPENMP", "ONNX")
    assert facts.sass == ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
    assert facts.ptx == ("compute_120",)
    assert head in facts.commits and facts.stamp_source == "binary"
    publish.check_commit(facts, head)  # HEAD among the binary's 40-hex strings is a match


def test_facts_without_a_cmake_cache_refuse():
    with pytest.raises(publish.PublishFailed, match="no CMake feature states.*--cmake-cache"):
        publish.release_facts(audit_facts("a" * 40, cmake=None))


def test_facts_without_fatbin_archs_refuse_for_cuda():
    with pytest.raises(publish.PublishFailed, match="no SASS archs"):
        publish.release_facts(audit_facts("a" * 40, fatbin=None))


def test_commit_stamp_other_than_head_refuses():
    facts = publish.release_facts(audit_facts("b" * 40))
    with pytest.raises(publish.PublishFailed, match="is not HEAD aaaaaaaaaaaa.*rebuild from HEAD"):
        publish.check_commit(facts, "a" * 40)


def test_missing_commit_stamp_refuses():
    facts = publish.release_facts(audit_facts("a" * 40, stamps={"binary": [], "build_files": {}}))
    with pytest.raises(publish.PublishFailed, match="carries no commit stamp"):
        publish.check_commit(facts, "a" * 40)


def test_build_file_stamp_is_a_fallback_that_must_be_unique():
    stamps = {"binary": [], "build_files": {"build/build.ninja": ["a" * 40]}}
    facts = publish.release_facts(audit_facts("x", stamps=stamps))
    assert facts.stamp_source == "build files"
    publish.check_commit(facts, "a" * 40)
    stamps["build_files"]["build/compile_commands.json"] = ["c" * 40]
    with pytest.raises(publish.PublishFailed, match="build files"):
        publish.check_commit(publish.release_facts(audit_facts("x", stamps=stamps)), "a" * 40)


def test_gates_not_passed_lists_failed_skipped_and_missing():
    got = publish.gates_not_passed(["a", "b", "c", "d"], {"a": "passed", "b": "skipped", "c": "failed"})
    assert got == [("b", "skipped"), ("c", "failed"), ("d", "not run")]
    assert publish.gates_not_passed(["a"], {"a": "passed"}) == []


def test_github_repo_from_remote_urls():
    assert publish.github_repo("git@github.com:smolix/mxnet.git") == "smolix/mxnet"
    assert publish.github_repo("https://github.com/smolix/mxnet") == "smolix/mxnet"
    assert publish.github_repo("/srv/git/mxnet.git") is None


# --------------------------------------------------------------------------------------------
# The plan and its execution
# --------------------------------------------------------------------------------------------
def test_plan_is_tag_push_release_with_notes(release_repo, wheel):
    plan = make_plan(release_repo, wheel)
    head = release_repo.head
    tag_cmd, push_cmd, gh_cmd = (c.argv for c in plan.commands)
    assert tag_cmd[:4] == ("git", "tag", "-a", "v" + VERSION) and tag_cmd[-1] == head
    assert push_cmd == ("git", "push", "origin", f"refs/tags/v{VERSION}")
    assert gh_cmd[:5] == ("gh", "release", "create", "v" + VERSION, str(wheel))
    assert "--verify-tag" in gh_cmd and gh_cmd[gh_cmd.index("--title") + 1] == "v" + VERSION
    notes = gh_cmd[gh_cmd.index("--notes") + 1]
    assert "Features: CUDA, CUDNN, NCCL, ONEDNN, OPENCV, OPENMP, ONNX" in notes
    assert "SASS: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120" in notes
    assert "PTX: compute_120" in notes
    assert f"Built from master@{head}." in notes
    # The printed lines are real shell: they parse back to exactly these argv.
    for cmd, line in zip(plan.commands, plan.printable()):
        cd, _, command = line.partition(" && ")
        assert shlex.split(cd) == ["cd", str(release_repo.repo)]
        assert shlex.split(command) == list(cmd.argv)


def test_execute_tags_pushes_and_releases(release_repo, wheel, gh_standin):
    plan = make_plan(release_repo, wheel)
    url = publish.execute(plan)
    tag = "v" + VERSION
    assert url == f"https://github.com/example/mxnet/releases/tag/{tag}"
    assert tag in release_repo.local_tags() and tag in release_repo.remote_tags()
    # An annotated tag on HEAD, on both sides.
    assert git(release_repo.repo, "cat-file", "-t", tag) == "tag"
    assert git(release_repo.remote, "rev-parse", f"{tag}^{{commit}}") == release_repo.head
    assert gh_standin.calls() == [list(plan.commands[2].argv[1:])]


def test_release_failure_says_what_exists_and_the_undo_works(release_repo, wheel, gh_standin, monkeypatch):
    monkeypatch.setenv("GH_STANDIN_RELEASE_RC", "1")
    plan = make_plan(release_repo, wheel)
    tag = "v" + VERSION
    with pytest.raises(publish.PublishFailed) as err:
        publish.execute(plan)
    text = str(err.value)
    assert "publish step 'release' failed" in text and "HTTP 422" in text
    assert f"Now exists: the tag {tag} on origin and locally" in text
    assert f"gh release delete {shlex.quote(tag)} --yes" in text
    assert tag in release_repo.remote_tags()
    # Running the printed git undo commands really removes the tag everywhere.
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("git -C"):
            subprocess.run(shlex.split(line.split("#")[0]), check=True, capture_output=True)
    assert tag not in release_repo.local_tags() and tag not in release_repo.remote_tags()


def test_push_failure_leaves_only_the_local_tag(release_repo, wheel, gh_standin):
    plan = make_plan(release_repo, wheel)
    git(release_repo.repo, "remote", "set-url", "origin", str(release_repo.remote) + "-gone")
    tag = "v" + VERSION
    with pytest.raises(publish.PublishFailed) as err:
        publish.execute(plan)
    text = str(err.value)
    assert "publish step 'push' failed" in text and f"the local tag {tag}" in text
    assert f"tag -d {shlex.quote(tag)}" in text
    assert tag in release_repo.local_tags() and gh_standin.calls() == []


def test_tag_failure_leaves_nothing(release_repo, wheel, gh_standin):
    plan = make_plan(release_repo, wheel)
    release_repo.tag("v" + VERSION)  # someone tagged meanwhile
    with pytest.raises(publish.PublishFailed, match="(?s)step 'tag' failed.*Now exists: nothing"):
        publish.execute(plan)
    assert release_repo.remote_tags() == [] and gh_standin.calls() == []


def test_wheel_changed_after_the_push_is_not_uploaded(release_repo, wheel, gh_standin):
    # Issue 19: the upload reads the file again after `git tag`/`git push`; it is checked against
    # the pin right before, so bytes written in between are never released.
    plan = make_plan(release_repo, wheel)
    tag = "v" + VERSION

    def run_then_rewrite(cmd):
        proc = publish._run(cmd)  # the real git
        if cmd.name == "push":
            with zipfile.ZipFile(wheel, "a") as zf:
                zf.writestr("mxnet/evil.py", "import os\n")
        return proc

    with pytest.raises(publish.PublishFailed) as err:
        publish.execute(plan, run=run_then_rewrite)
    text = str(err.value)
    assert f"publish stopped before the upload: {wheel} hashes to" in text
    assert f"not to the sha256 {plan.sha256} the gates judged; nothing was uploaded" in text
    assert f"Now exists: the tag {tag} (local and on origin); no GitHub release" in text
    assert gh_standin.calls() == []
    for line in text.splitlines():
        if line.strip().startswith("git -C"):
            subprocess.run(shlex.split(line.strip()), check=True, capture_output=True)
    assert tag not in release_repo.local_tags() and tag not in release_repo.remote_tags()
