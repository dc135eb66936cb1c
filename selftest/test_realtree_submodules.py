"""Submodules judged by what the real fork's build needs (build_steps/source.py).

Each test changes a private copy of the real fork tree (fixtures_realtree) the way a user's
checkout goes wrong: an empty submodule, one at another commit, a pin that was never published,
and shows the source check's verdict. One slow test holds the rule's data against the real CMake.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from selftest.fixtures_build import default_build

from build_steps import source
from build_steps.errors import UsageError
from build_steps.profile_data import PROFILES
from selftest.fixtures_realtree import git

CUDA = PROFILES["cuda"].configure_flags
#: the fork's dmlc-core pin as a full sha (only its first 8 digits are known; the gitlink's target
#: need not exist, which is the point)
UNPUBLISHED_DMLC = source.UNPUBLISHED_PINS["3rdparty/dmlc-core"].pinned.ljust(40, "0")


def _empty(rel: str):
    def edit(root: Path):
        shutil.rmtree(root / rel)
        (root / rel).mkdir()
    return edit


def _pin(root: Path, rel: str, sha: str) -> None:
    """Record ``sha`` as the superproject's gitlink for ``rel`` (what a fork commit pins)."""
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},{rel}")
    git(root, "commit", "-q", "-m", f"pin {rel} at {sha[:8]}")


def _onednn_moved(fork_copy):
    """A fork copy whose 3rdparty/onednn repo sits one commit past its pin: (root, pinned, actual)."""
    root = fork_copy(submodules="repos")
    sub = root / "3rdparty/onednn"
    pinned = git(sub, "rev-parse", "HEAD").stdout.strip()
    git(sub, "commit", "-q", "--allow-empty", "-m", "another oneDNN snapshot")
    return root, pinned, git(sub, "rev-parse", "HEAD").stdout.strip()


def test_the_needs_rule_covers_every_include_link_of_the_real_tree(fork_pristine):
    # The data in SUBMODULE_NEEDS must name every submodule the fork's include/ links into as
    # needed by every build (no toggle): those links dangle otherwise, whatever USE_* says.
    links = source.include_links(fork_pristine, source.submodule_paths(fork_pristine))
    assert {"3rdparty/onednn", "3rdparty/tvm", "3rdparty/dmlc-core", "3rdparty/dlpack"} <= set(links), links
    always = {n.path for n in source.SUBMODULE_NEEDS if n.when is None}
    assert set(links) <= always, f"include/ links into {sorted(set(links) - always)} are not in the rule"
    off = {**PROFILES["cpu"].configure_flags, "USE_ONEDNN": "OFF"}
    assert "3rdparty/onednn" in source.needed_submodules(fork_pristine, off)
    # the release flavors never turn on what needs ps-lite / onnx-tensorrt / the old CUB
    assert not {"3rdparty/ps-lite", "3rdparty/onnx-tensorrt", "3rdparty/nvidia_cub"} & set(
        source.needed_submodules(fork_pristine, CUDA))


def test_vendored_submodules_without_git_metadata_are_fine(fork_tree):
    info = source.check_source_tree(fork_tree, CUDA)
    assert info.commit and not info.dirty_paths
    assert info.submodule_mismatches == [] and info.submodule_warnings == []
    assert source.submodule_state(fork_tree, "3rdparty/onednn").kind == "vendored"


def test_submodules_as_their_own_repos_at_the_pinned_commits_are_fine(fork_copy):
    root = fork_copy(submodules="repos")
    info = source.check_source_tree(root, CUDA)
    state = source.submodule_state(root, "3rdparty/onednn")
    assert state.kind == "repo" and state.pinned == state.actual
    assert info.submodule_mismatches == [] and not info.dirty_paths


def test_empty_tvm_is_refused_naming_what_cmake_would_say(fork_copy):
    root = fork_copy(submodules="repos", edit=_empty("3rdparty/tvm"), commit=False)
    with pytest.raises(UsageError) as exc:
        source.check_source_tree(root, CUDA)
    msg = str(exc.value)
    assert "3rdparty/tvm" in msg and "No SOURCES given to target: nnvm" in msg, msg
    assert source.FIX in msg and str(root) in msg, msg


def test_tvm_without_nnvm_is_refused(fork_copy):
    root = fork_copy(edit=lambda r: shutil.rmtree(r / "3rdparty/tvm/nnvm"))
    with pytest.raises(UsageError, match=r"3rdparty/tvm: has no nnvm/ directory"):
        source.check_source_tree(root, CUDA)


def test_missing_onednn_is_refused_even_with_use_onednn_off(fork_copy):
    root = fork_copy(edit=_empty("3rdparty/onednn"))
    defines = {**PROFILES["cpu"].configure_flags, "USE_ONEDNN": "OFF"}
    with pytest.raises(UsageError) as exc:
        source.check_source_tree(root, defines)
    assert "3rdparty/onednn" in str(exc.value) and "include/onednn/dnnl.h" in str(exc.value), str(exc.value)


def test_ps_lite_is_needed_only_when_its_toggle_is_on(fork_tree):
    # ps-lite is absent from the snapshot: fine for the release flavors, refused with USE_DIST_KVSTORE
    root = fork_tree
    source.check_source_tree(root, CUDA)
    with pytest.raises(UsageError, match="3rdparty/ps-lite"):
        source.check_source_tree(root, {**CUDA, "USE_DIST_KVSTORE": "ON"})


def test_submodule_at_another_commit_is_listed_with_both_commits_and_the_build_goes_on(fork_copy):
    root, pinned, actual = _onednn_moved(fork_copy)
    sub = root / "3rdparty/onednn"
    info = source.check_source_tree(root, CUDA)          # a warning, not a refusal
    assert info.submodule_mismatches == [{"path": "3rdparty/onednn", "pinned": pinned, "actual": actual}]
    (warning,) = info.submodule_warnings
    assert "3rdparty/onednn" in warning and pinned[:12] in warning and actual[:12] in warning, warning
    assert f"checkout {pinned[:12]}" in warning, "the warning names how to restore the pinned commit"
    # the commit change is reported as a mismatch, not as a dirty tracked tree
    assert info.dirty_paths == []
    (sub / "README.md").unlink()                         # a real change inside it still is dirt
    assert source.check_source_tree(root, CUDA).dirty_paths


def test_unpublished_dmlc_core_pin_gets_a_way_through_in_the_refusal(fork_copy):
    root = fork_copy(edit=_empty("3rdparty/dmlc-core"))
    _pin(root, "3rdparty/dmlc-core", UNPUBLISHED_DMLC)
    with pytest.raises(UsageError) as exc:
        source.check_source_tree(root, CUDA)
    msg = str(exc.value)
    pin = source.UNPUBLISHED_PINS["3rdparty/dmlc-core"]
    assert "3rdparty/dmlc-core" in msg and "dmlc/base.h" in msg, msg
    assert "not published" in msg and f"git clone {pin.url}" in msg and f"checkout {pin.substitute}" in msg, msg


def test_dmlc_core_substitute_for_the_unpublished_pin_is_warned_and_named(fork_copy):
    root = fork_copy(submodules="repos")
    _pin(root, "3rdparty/dmlc-core", UNPUBLISHED_DMLC)
    info = source.check_source_tree(root, CUDA)
    (mismatch,) = info.submodule_mismatches
    assert mismatch["path"] == "3rdparty/dmlc-core" and mismatch["pinned"] == UNPUBLISHED_DMLC
    (warning,) = info.submodule_warnings
    assert "not in 3rdparty/dmlc-core's history" in warning and "not published" in warning, warning


def test_empty_submodule_is_refused_by_the_harness_before_configure(gates, fork_copy):
    root = fork_copy(submodules="repos", edit=_empty("3rdparty/tvm"), commit=False)
    result = gates("-m", "release and build", f"--mxnet-src={root}", "--flavor=cpu", timeout=300)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "No SOURCES given to target: nnvm" in out, out[-3000:]
    assert not (default_build(root, 'cpu') / "CMakeCache.txt").exists(), "nothing may be configured after the refusal"


@pytest.mark.slow
def test_the_rule_holds_against_the_real_cmake_onednn_needed_with_use_onednn_off(fork_copy, tmp_path):
    # The fact the rule states, measured: the fork's CMake stops without 3rdparty/onednn even
    # when oneDNN is off. (Also CUDA/OpenCV off: only the generate step's verdict matters here.)
    root = fork_copy(edit=_empty("3rdparty/onednn"))
    proc = subprocess.run(
        ["cmake", "-S", str(root), "-B", str(tmp_path / "build"), "-G", "Ninja", "-DUSE_CUDA=OFF",
         "-DUSE_ONEDNN=OFF", "-DUSE_OPENCV=OFF", "-DUSE_BLAS=open", "-DUSE_DIST_KVSTORE=OFF"],
        capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "Cannot find source file" in out and "include/onednn/dnnl.h" in out, out[-3000:]


def test_submodule_at_another_commit_is_shown_by_a_run_that_goes_on(gates, fork_copy):
    # A development run (-m build; a release run refuses this tree before anything starts). Only
    # the source step runs (the one gate selected needs nothing else): the run passes and still
    # says, live and in the summary, which submodule sits at which commit.
    root, pinned, actual = _onednn_moved(fork_copy)
    result = gates("-m", "build", "-k", "test_source_tree_has_every_submodule",
                   f"--mxnet-src={root}", "--flavor=cpu", timeout=300)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, out[-3000:]
    said = [l for l in out.splitlines() if "WARNING: 3rdparty/onednn" in l]
    assert len(said) >= 2 and all(pinned[:12] in l and actual[:12] in l for l in said), out[-3000:]


def test_release_refuses_a_submodule_at_another_commit_naming_both_and_the_fix(gates, fork_copy):
    root, pinned, actual = _onednn_moved(fork_copy)
    assert source.dirty_tracked_paths(root) == [], "a commit-only submodule change is not dirt"
    (refusal,) = source.mismatch_refusals(root)
    result = gates("-m", "release", f"--mxnet-src={root}", "--flavor=cpu", timeout=300)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, out[-3000:]
    assert f"3rdparty/onednn is at {actual[:12]}, the superproject pins {pinned[:12]}" in out, out[-3000:]
    assert "--allow-dirty" in out and source.FIX in out and refusal.splitlines()[0][:60] in out
    assert not (default_build(root, 'cpu')).exists(), "nothing may be configured after the refusal"


def test_the_known_substitute_for_the_unpublished_pin_is_accepted_and_nothing_else():
    pin = source.UNPUBLISHED_PINS["3rdparty/dmlc-core"]
    pinned = pin.pinned.ljust(40, "0")
    good = source.SubmoduleState("3rdparty/dmlc-core", "repo", pinned, pin.substitute.ljust(40, "1"))
    other = source.SubmoduleState("3rdparty/dmlc-core", "repo", pinned, "ab" * 20)
    elsewhere = source.SubmoduleState("3rdparty/onednn", "repo", pinned, pin.substitute.ljust(40, "1"))
    assert source.accepted_substitute(good) is pin
    assert source.accepted_substitute(other) is None and source.accepted_substitute(elsewhere) is None
