"""Publish preflight and version choice, against real repositories and a real bare remote."""
from __future__ import annotations

import pytest

from build_steps import errors, publish
from build_steps.profile_data import PROFILES
from selftest.fixtures_publish import git, make_release_repo

CUDA = PROFILES["cuda"]
CPU = PROFILES["cpu"]


def test_clean_tree_with_reachable_remote_passes(release_repo):
    state = publish.preflight(release_repo.repo, "origin", dry_run=True)
    assert state.head == release_repo.head
    assert state.branch == "master"
    assert state.remote_url == str(release_repo.remote)


def test_untracked_files_do_not_block(release_repo):
    (release_repo.repo / "build").mkdir()
    (release_repo.repo / "notes.txt").write_text("scratch\n")
    assert publish.preflight(release_repo.repo, "origin", dry_run=True).head == release_repo.head


def test_dirty_tree_is_refused(release_repo):
    (release_repo.repo / "CMakeLists.txt").write_text("project(mxnet) # edited\n")
    with pytest.raises(publish.PublishRefused, match=r"1 uncommitted tracked change.*CMakeLists.txt.*commit or stash"):
        publish.preflight(release_repo.repo, "origin", dry_run=True)


def test_staged_change_is_refused(release_repo):
    (release_repo.repo / "new.cc").write_text("int x;\n")
    git(release_repo.repo, "add", "new.cc")
    with pytest.raises(publish.PublishRefused, match="uncommitted tracked change"):
        publish.preflight(release_repo.repo, "origin", dry_run=True)


def test_not_a_git_repo_is_refused(tmp_path):
    with pytest.raises(publish.PublishRefused, match="not a git repository.*--mxnet-src"):
        publish.preflight(tmp_path, "origin", dry_run=True)


def test_non_linux_is_refused(release_repo):
    with pytest.raises(publish.PublishRefused, match="Linux/CUDA only.*Darwin"):
        publish.preflight(release_repo.repo, "origin", dry_run=True, system="Darwin")


def test_real_publish_needs_yes(release_repo, gh_standin):
    with pytest.raises(publish.PublishRefused, match="confirm with --yes.*--dry-run"):
        publish.preflight(release_repo.repo, "origin", dry_run=False, yes=False)


def test_missing_gh_is_refused_but_not_for_a_dry_run(release_repo, no_gh):
    with pytest.raises(publish.PublishRefused, match="`gh` is not on PATH"):
        publish.preflight(release_repo.repo, "origin", dry_run=False, yes=True)
    assert publish.preflight(release_repo.repo, "origin", dry_run=True).head == release_repo.head


def test_gh_not_logged_in_is_refused(release_repo, gh_standin, monkeypatch):
    monkeypatch.setenv("GH_STANDIN_AUTH_RC", "1")
    with pytest.raises(publish.PublishRefused, match="gh auth login.*not logged into"):
        publish.preflight(release_repo.repo, "origin", dry_run=False, yes=True)
    assert gh_standin.calls() == [["auth", "status"]]


def test_gh_logged_in_passes(release_repo, gh_standin):
    publish.preflight(release_repo.repo, "origin", dry_run=False, yes=True)
    assert gh_standin.calls() == [["auth", "status"]]


def test_unreachable_remote_is_refused(release_repo):
    git(release_repo.repo, "remote", "set-url", "origin", str(release_repo.remote) + "-gone")
    with pytest.raises(publish.PublishRefused, match="(?s)cannot read the tags of remote 'origin'.*Refusing to pick"):
        publish.preflight(release_repo.repo, "origin", dry_run=True)


def test_unknown_remote_is_refused(release_repo):
    with pytest.raises(publish.PublishRefused, match="remote 'upstream' is not configured"):
        publish.preflight(release_repo.repo, "upstream", dry_run=True)


# --------------------------------------------------------------------------------------------
# Version choice
# --------------------------------------------------------------------------------------------
def _resolve(repo, **kw):
    state = publish.preflight(repo.repo, "origin", dry_run=True)
    return publish.resolve_release_version(state, CUDA, **kw)


def test_first_release_of_the_day_is_build_1(release_repo):
    got = _resolve(release_repo, today="20260614")
    assert (got.version, got.tag) == ("2.0.0+cu13.bw.20260614.1", "v2.0.0+cu13.bw.20260614.1")
    assert got.source.startswith("auto-picked")


def test_auto_pick_ignores_other_days_and_increments(release_repo):
    for tag in ("v2.0.0+cu13.bw.20260613.7",    # another day: ignored
                "v2.0.0+cu13.bw.20260614",      # the bare day counts as build 0
                "v2.0.0+cu13.bw.20260614.1",
                "v2.0.0+cu13.bw.20260614.rc2",  # not a build number: ignored
                "v2.0.0+cpu.linux.20260614.9"):  # another flavor: ignored
        release_repo.tag(tag)
    assert _resolve(release_repo, today="20260614").version == "2.0.0+cu13.bw.20260614.2"
    assert _resolve(release_repo, today="20260615").version == "2.0.0+cu13.bw.20260615.1"


def test_auto_pick_counts_remote_only_tags(release_repo):
    release_repo.tag("v2.0.0+cu13.bw.20260614.1")
    release_repo.tag("v2.0.0+cu13.bw.20260614.3", push=True, local=False)  # published elsewhere
    assert "v2.0.0+cu13.bw.20260614.3" not in release_repo.local_tags()
    assert _resolve(release_repo, today="20260614").version == "2.0.0+cu13.bw.20260614.4"


def test_explicit_version_taken_locally_is_refused(release_repo):
    release_repo.tag("v2.0.0+cu13.bw.20260614.1")
    with pytest.raises(publish.PublishRefused, match=r"tag v2\.0\.0\+cu13\.bw\.20260614\.1 already exists locally"):
        _resolve(release_repo, explicit="2.0.0+cu13.bw.20260614.1")


def test_explicit_version_taken_remotely_is_refused(release_repo):
    release_repo.tag("v2.0.0+cu13.bw.20260614.2", push=True, local=False)
    with pytest.raises(publish.PublishRefused, match="already exists on remote 'origin'"):
        _resolve(release_repo, explicit="2.0.0+cu13.bw.20260614.2")


def test_explicit_free_version_is_used(release_repo):
    release_repo.tag("v2.0.0+cu13.bw.20260614.1", push=True)
    got = _resolve(release_repo, explicit="2.0.0+cu13.bw.20260614.2")
    assert (got.version, got.source) == ("2.0.0+cu13.bw.20260614.2", "--wheel-version")


@pytest.mark.parametrize("bad, why", [
    ("2.0.0+cu13.bw.2026061", "does not follow the cuda release scheme"),
    ("2.0.0+cu12.bw.20260614.1", "does not follow the cuda release scheme"),
    ("2.0.0", "does not follow the cuda release scheme"),
    ("2.0.0+cu13.bw.20261314.1", "20261314 is no calendar date"),  # month 13 (issue 43)
    ("2.0.0+cu13.bw.20260632", "20260632 is no calendar date"),    # day 32
    ("two-point-oh", "not a valid PEP 440 version"),
])
def test_explicit_version_outside_the_scheme_is_refused(release_repo, bad, why):
    with pytest.raises(errors.UsageError, match=why):
        _resolve(release_repo, explicit=bad)


def test_existing_wheel_is_published_under_its_own_version(release_repo, tmp_path):
    wheel = tmp_path / "mxnet-2.0.0+cu13.bw.20260614.3-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"")
    assert _resolve(release_repo, wheel=wheel).version == "2.0.0+cu13.bw.20260614.3"
    with pytest.raises(publish.PublishRefused, match="does not match the version of --wheel"):
        _resolve(release_repo, wheel=wheel, explicit="2.0.0+cu13.bw.20260614.4")


def test_build_numbers_of_a_cpu_profile_use_its_own_prefix():
    tags = ["v2.0.0+cpu.linux.20260614.2", "v2.0.0+cu13.bw.20260614.5"]
    assert publish.next_version(CPU, tags, "20260614") == "2.0.0+cpu.linux.20260614.3"


def test_clone_of_another_history_keeps_its_head(tmp_path):
    first = make_release_repo(tmp_path / "a")
    second = make_release_repo(tmp_path / "b", source=first.repo)
    assert second.head == first.head


def test_missing_committer_identity_is_refused(release_repo, gh_standin, monkeypatch):
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "EMAIL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(release_repo.repo.parent))  # no ~/.gitconfig
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    git(release_repo.repo, "config", "--unset", "user.name")
    git(release_repo.repo, "config", "--unset", "user.email")
    git(release_repo.repo, "config", "user.useConfigOnly", "true")
    with pytest.raises(publish.PublishRefused, match="no committer identity"):
        publish.preflight(release_repo.repo, "origin", dry_run=False, yes=True)
