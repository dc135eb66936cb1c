"""docs/ci/github-actions.yml played job by job on this machine (selftest.workflow_player), as a
runner would run it: the harness is a clone of this checkout's HEAD, the fork is the sample tree
pushed to a local bare remote, artifacts go between jobs through a directory, ``gh`` is the
recorded stand-in and every ``--yes`` is played as ``--dry-run``.

What this machine is not, each said as one substitution the player checks is used exactly once:
it is no GPU build host (the build job's selection is narrowed to the gates a host without a GPU
runs, as the README's main job is) and no GPU runner (the gpu job's GPU gates are the recorded
H200 run, docs/gpu_runs/real_fork_2026-12-04-gpu.json, placed as that runner's report). Since
no build here can pass the whole release set, the release report a GPU build host's verify run
writes (build_steps.release_report) is written by the play for the wheel the build job made, with
the harness's own key, and the publish job's ``mxnet-release publish`` checks it as it would any.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from selftest.conftest import HARNESS_ROOT
from selftest.fixtures_build import copy_sample_tree
from selftest.fixtures_publish import make_release_repo
from selftest.workflow_player import Expr, Player, Runner, Substitution, WorkflowError

WORKFLOW = HARNESS_ROOT / "docs" / "ci" / "github-actions.yml"
H200_REPORT = HARNESS_ROOT / "docs" / "gpu_runs" / "real_fork_2026-12-04-gpu.json"
FORK = "smolix/mxnet"
#: the release version the played build is made under (the release scheme's build number, as a
#: --publish run picks it), so that the publish step's version checks meet a release-shaped wheel
PLAY_VERSION = f"2.0.0+cu13.bw.{datetime.datetime.now(datetime.timezone.utc):%Y%m%d}.1"


def publish_tag_line(version: str) -> str:
    """What the publish step's dry run prints for the tag it would push."""
    from build_steps import publish
    return publish.tag_for(version)


def harness_repository(workflow: dict) -> str:
    """The ``repository:`` of the harness's checkouts (``path: harness``), one name for all jobs."""
    names = {s["with"].get("repository") for job in workflow["jobs"].values() for s in job["steps"]
             if "actions/checkout" in s.get("uses", "") and s["with"].get("path") == "harness"}
    assert len(names) == 1 and None not in names, f"harness checkouts name {names}"
    return names.pop()


def runner_for(job: str, labels: list):
    if "cuda13-build" in labels:
        return Runner("build-host", persistent=True)  # one self-hosted machine: build and publish
    if labels == ["ubuntu-24.04"]:
        return Runner(f"hosted-{job}")
    if "gpu" in labels and "sm_90" in labels:
        return Runner("gpu-h200")  # the recorded H200 run; no other GPU runner exists here
    return None


def write_stand_in_release_report(ctx) -> int:
    """What the GPU build host's verify run writes once every gate of the release set passed
    (tests/test_publish.py, --release-report): here no build can pass the GPU gates, so the play
    writes it for the wheel the build job placed in dist/, its facts read from the build's own
    provenance JSON, signed with this host's report key like any report."""
    from build_steps import publish
    from build_steps.pinning import sha256_of
    from build_steps.release_manifest import load_manifest
    from build_steps.release_report import write_report

    ws = Path(ctx["workspace"])
    fork = ws / ctx["env"]["MXNET"]
    provenance = json.loads((ws / "build-report.json").read_text())
    wheel = fork / "dist" / provenance["wheel"]["filename"]
    head = subprocess.run(["git", "-C", str(fork), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    gates = list(load_manifest("cuda").gates)
    write_report(ws / "release-report.json", {
        "flavor": "cuda", "repo": str(fork), "remote": "origin",
        "release": {"version": PLAY_VERSION, "tag": publish.tag_for(PLAY_VERSION), "commit": head},
        "wheel": str(wheel), "sha256": sha256_of(wheel),
        "facts": dataclasses.asdict(publish.release_facts(provenance["facts"])),
        "gates_passed": gates, "verdicts": {g: "passed" for g in gates}, "excused": [], "assets": {},
    })
    return 0


def place_h200_report(ctx) -> int:
    dest = Path(ctx["workspace"]) / "reports" / f"{ctx['env']['ARCH']}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(H200_REPORT, dest)
    return 0


@pytest.mark.slow
@pytest.mark.timeout(2400)  # five jobs' setup.sh and a sample build: 15+ min on 2 loaded cores
def test_the_workflow_plays_on_the_sample_tree(tmp_path, gh_standin):
    workflow = yaml.safe_load(WORKFLOW.read_text())
    harness_git = tmp_path / "harness.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(HARNESS_ROOT), str(harness_git)], check=True)
    fork = make_release_repo(tmp_path / "fork", source=copy_sample_tree(tmp_path / "sample"))
    subs = [
        Substitution("build", '-m release --mxnet-src="$GITHUB_WORKSPACE/$MXNET" --cuda-from-wheels --publish '
                     '--release-report="$GITHUB_WORKSPACE/release-report.json"',
                     new='-m "release and not gpu and not runtime" -k "not install" '
                         '--mxnet-src="$GITHUB_WORKSPACE/$MXNET" --cuda-from-wheels '
                         f'--wheel-version={PLAY_VERSION}',
                     why="no GPU here: the gates a host without a GPU runs (the README's main job) but the install "
                     "gate (its venv pulls ~1.3 GB of nvidia-* wheels; it has its own selftests); a partial run "
                     "writes no release report, so --publish --release-report goes with it"),
        Substitution("build", 'echo "name=$(basename "$wheel")"',
                     why="the release report a whole-release-set PASS on a GPU build host writes, made for "
                     "this wheel (write_stand_in_release_report)", before=write_stand_in_release_report),
        Substitution("gpu", '-m "gpu or cublas"', why="no GPU here: the recorded H200 run is this runner's report",
                     call=place_h200_report),
    ]
    publish_run = " ".join(s.get("run", "") for s in workflow["jobs"]["publish"]["steps"])
    assert "mxnet-release\" publish" in publish_run, publish_run  # the separate, privileged step (issue 29)
    subs.append(Substitution("publish", "--yes", "played as a rehearsal", new="--dry-run"))
    player = Player(workflow, tmp_path / "play", repos={harness_repository(workflow): harness_git,
                                                        FORK: fork.remote},
                    runner_for=runner_for, github={"repository": FORK, "token": "stand-in-token"},
                    inputs={"mxnet_ref": "master"}, substitutions=subs,
                    play_regardless={"publish"})
    t0 = time.monotonic()
    results = player.play()
    took = time.monotonic() - t0
    summary = "\n".join(player.log)

    def show(job):
        return summary + "\n\n" + "\n\n".join(f"--- {r.instance}: {s.name} (exit {s.rc})\n{s.output[-4000:]}"
                                              for r in results[job] for s in r.steps)

    build, = results["build"]
    assert build.result == "success", show("build")
    wheel = build.outputs["wheel"]
    assert wheel.startswith("mxnet-") and wheel.endswith(".whl"), build.outputs
    assert "not a release verdict" in build.step("build and run every release gate").output

    static, = results["static"]
    assert static.result == "success", show("static")
    assert "passed" in static.step("static gates").output

    gpu = {r.instance: r for r in results["gpu"]}
    assert gpu["gpu (sm_90)"].result == "success", show("gpu")
    assert all(r.result == "failure" and "no runner" in r.note for i, r in gpu.items() if i != "gpu (sm_90)")

    merge, = results["merge"]
    page = merge.step("review page")
    assert page.rc == 0, show("merge")
    # The recorded H200 report is of the real fork's wheel, not of this sample wheel: the strict
    # merge must say so and name every release arch as not verified (exit 1), never pass.
    strict = merge.step("strict merge")
    assert strict.rc == 1, show("merge")
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"):
        assert f"{arch} " in strict.output, strict.output
    assert "ignored sm_90.json" in strict.output, strict.output  # the H200 report was read, and set aside
    review = Path(tmp_path / "play" / "runners" / "hosted-merge" / "work" / "review.html")
    assert review.is_file() and "review-page" in {p.name for p in (tmp_path / "play" / "artifacts").iterdir()}

    publish, = results["publish"]
    assert publish.result == "success", show("publish")
    step = publish.step("publish the wheel")
    assert publish_tag_line(PLAY_VERSION) in step.output, show("publish")
    assert fork.remote_tags() == [], "a rehearsal tagged the fork"
    assert not any(c[:2] == ["release", "create"] for c in gh_standin.calls()), gh_standin.calls()
    print(summary + f"\nplayed in {took:.0f} s")


def test_expressions_are_strict():
    ctx = {"matrix": {"arch": "sm_90"}, "needs": {"build": {"result": "success", "outputs": {"wheel": "w.whl"}}},
           "env": {"HARNESS": "harness"}, "github": {"workspace": "/w"}}
    status = {"always": True, "success": True, "failure": False, "cancelled": False}.__getitem__
    e = Expr(ctx, status)
    assert e.interpolate("gpu-report-${{ matrix.arch }}") == "gpu-report-sm_90"
    assert e.interpolate("${{ github.workspace }}/${{ needs.build.outputs.wheel }}") == "/w/w.whl"
    assert e.evaluate("always() && needs.build.result == 'success'") is True
    assert e.evaluate("!(needs.build.result != 'SUCCESS')") is True
    for bad in ("matrix.gpu_arch", "needs.gpu.outputs.x", "runner.os", "hashFiles('x')", "env.HARNES",
                "matrix.arch ==", "contains(env.HARNESS, 'h')"):
        with pytest.raises(WorkflowError):
            e.evaluate(bad)


def test_player_catches_the_harness_path_of_a_working_directory(tmp_path):
    """The bug issue 36 found: `working-directory: harness` with "$HARNESS/..." doubles the path.
    A tiny workflow with that bug fails when played; the fixed form passes."""
    def flow(wd):
        step = {"name": "venv", "run": 'test -x "$HARNESS/bin/tool"'}
        if wd:
            step["working-directory"] = "harness"
        return {"env": {"HARNESS": "harness"}, "jobs": {"j": {"runs-on": "ubuntu-24.04", "steps": [
            {"name": "lay out", "run": 'mkdir -p harness/bin && printf "#!/bin/sh\\n" > harness/bin/tool && chmod +x harness/bin/tool'},
            step]}}}
    for wd, want in ((True, "failure"), (False, "success")):
        p = Player(flow(wd), tmp_path / str(wd), repos={}, runner_for=lambda j, labels: Runner("r"),
                   github={"repository": FORK}, inputs={})
        assert p.play()["j"][0].result == want


def test_player_refuses_a_substitution_that_matches_no_step(tmp_path):
    flow = {"jobs": {"j": {"runs-on": "ubuntu-24.04", "steps": [{"run": "true"}]}}}
    p = Player(flow, tmp_path, repos={}, runner_for=lambda j, labels: Runner("r"), github={"repository": FORK},
               inputs={}, substitutions=[Substitution("j", "-m release", "drifted", new="x")])
    with pytest.raises(WorkflowError, match="did not match exactly one step"):
        p.play()


def test_harness_checkout_names_the_harness_repository():
    """Without `repository:` actions/checkout checks out the workflow's own repository (the fork)
    a second time, and harness/scripts/setup.sh does not exist."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    name = harness_repository(workflow)
    assert name != "${{ github.repository }}"
    assert f"`{name}`" in (HARNESS_ROOT / "README.md").read_text(), "the README does not name the harness repository"
    report = json.loads(H200_REPORT.read_text())
    assert report["wheel"]["sha256"]  # the gpu job's stand-in is a real run's report of a wheel
