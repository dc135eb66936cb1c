"""The acceptance shards: the data file agrees with the real fork's script (and the check names
each disagreement), and the shard gates, run for real in child pytests on the sample tree's
tests/python with the sample wheel: a passing shard passes, a failing one fails with its pytest
summary and first failing tests, one that collects nothing fails, one that hangs is killed at its
timeout, an absent conditional one is not applicable, and the GPU shard skips without a GPU
outside a release and fails inside one. The import check fails when the tree shadows the wheel."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps.acceptance.fork_script import data_script_differences, parse_fork_script
from build_steps.acceptance.run import gpu_for_worker
from build_steps.acceptance.suite import load_suite
from build_steps.acceptance.venv import verify_installed_mxnet
from build_steps.errors import UsageError
from selftest.conftest import HARNESS_ROOT, host_opencv

SAMPLE_SHARDS = HARNESS_ROOT / "selftest" / "sample_acceptance_shards.toml"
FORK_SCRIPT = "tools/run_wheel_full_test.sh"


@pytest.fixture(scope="module")
def fork_script(fork_pristine) -> str:
    """The text of the real fork's tools/run_wheel_full_test.sh (fixtures_realtree finds the tree:
    ../shared/fixtures/mxnet-fork-*.tar.xz, or $MXNET_FORK_TREE)."""
    return (fork_pristine / FORK_SCRIPT).read_text()


@pytest.fixture(scope="module")
def fork_paths(fork_pristine) -> set:
    """Every path (files and directories, relative to the root) of the real fork tree."""
    return {p.relative_to(fork_pristine).as_posix() for p in fork_pristine.rglob("*")}


def test_shard_data_agrees_with_the_real_fork_script(fork_script):
    script = parse_fork_script(fork_script)
    suite = load_suite()
    assert len(script) == len(suite.shards) == 32
    assert data_script_differences(suite, script) == []
    lanes = {s.id: s.lane for s in suite.shards}
    assert lanes["onnx_export_import"] == "onnx" and lanes["gpu_operator_classic"] == "gpu"
    assert lanes["dnnl_smoke"] == "dnnl" and lanes["quant_general"] == "quant"


def test_every_unconditional_shard_path_is_in_the_real_fork_tree(fork_paths):
    suite = load_suite()
    missing = [f"{s.id}: {p}" for s in suite.shards if not s.only_if_exists for p in s.paths if p not in fork_paths]
    assert missing == [], f"shards whose tests the fork tree does not have (pytest would exit 4): {missing}"
    # The conditional ones may be absent: the fork's script then does not run them.
    assert "tests/python/gpu/test_fp16_batch_dot.py" not in fork_paths


def test_the_check_names_added_removed_and_changed_shards(fork_script):
    # The script as a later fork commit might have it: one shard gone, one new, one -k changed,
    # one that no longer fans out over xdist workers.
    edited = fork_script.replace(
        'run_shard cpu_test_random \\\n    "CPU test_random.py (FS12 isolated)" -- \\\n'
        '    tests/python/unittest/test_random.py -v\n', "")
    assert edited != fork_script
    edited = edited.replace(
        "# ----- DNNL / oneDNN lane",
        'run_shard cpu_new_shard "a shard added later" -- tests/python/unittest/test_new.py -v\n\n'
        "# ----- DNNL / oneDNN lane")
    edited = edited.replace("-k Parameter -n", "-k 'Parameter or Trainer' -n")
    edited = edited.replace("tests/python/onnx -v -n \"$PARALLEL_CPU\"", "tests/python/onnx -v")
    diffs = data_script_differences(load_suite(), parse_fork_script(edited))
    text = "\n".join(diffs)
    assert "cpu_new_shard: in the fork's script, not in acceptance/shards.toml" in text
    assert "cpu_test_random: in acceptance/shards.toml, not in the fork's script" in text
    assert "cpu_gluon_parameter: pytest args differ" in text and "Parameter or Trainer" in text
    assert "onnx_export_import: -n differs: data workers=cpu vs script None" in text
    assert len(diffs) == 4, diffs


def test_bad_shard_data_is_a_usage_error_naming_the_entry(tmp_path):
    bad = tmp_path / "shards.toml"
    bad.write_text('[parallel]\ncpu = 2\n[[shard]]\nid = "a"\ndescription = "d"\nlane = "tpu"\npaths = ["t"]\n')
    with pytest.raises(UsageError, match=r"#1 \(a\): lane 'tpu' is not one of cpu, dnnl, quant, onnx, gpu"):
        load_suite(bad)
    bad.write_text('[[shard]]\nid = "a"\ndescription = "d"\nlane = "cpu"\npaths = ["t"]\n' * 2)
    with pytest.raises(UsageError, match="the id a is used twice"):
        load_suite(bad)
    bad.write_text("[[shard]\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_suite(bad)


def test_unknown_shard_or_lane_is_refused_before_anything_runs(gates):
    r = gates("--co", "--shards=cpu_unittest,cpu_unitest")
    assert r.ret != 0
    r.stderr.fnmatch_lines(["*--shards cpu_unittest,cpu_unitest: unknown cpu_unitest; known: cpu_xop19,*"])
    r = gates("--co", "--lanes=cpu,tpu")
    r.stderr.fnmatch_lines(["*--lanes cpu,tpu: unknown tpu; known: cpu, dnnl, quant, onnx, gpu*"])


def test_gpu_shards_pin_one_gpu_per_xdist_worker():
    assert gpu_for_worker("gw0", ["0", "1"]) == "0"
    assert gpu_for_worker("gw3", ["0", "1"]) == "1"
    assert gpu_for_worker("gw1", ["4", "6"]) == "6"  # an outer CUDA_VISIBLE_DEVICES is respected
    assert gpu_for_worker(None, ["0", "1"]) is None  # without xdist every GPU stays visible


# ------------------------------------------------------------------------------------------
# The gates, for real: the sample tree's shards against the sample wheel
# ------------------------------------------------------------------------------------------
def _shard_args(acc_dir: Path, *extra) -> list:
    return [f"--shards-file={SAMPLE_SHARDS}", f"--acceptance-dir={acc_dir}", *extra]


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """One release run of the CPU sample's acceptance gates (module-scoped, so not through the
    function-scoped pytester; a run that builds is a release run):
    the build chain makes the wheel, the shards run in its venv, spread over two xdist workers
    whose rows reach the controller's table."""
    from selftest.fixtures_build import copy_sample_tree, default_build
    work = tmp_path_factory.mktemp("acceptance")
    src = copy_sample_tree(work / "src")
    acc_dir, report = work / "acc", work / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
         "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests"), "-m", "release and acceptance", f"--mxnet-src={src}",
         "--flavor=cpu", "--jobs=2", "-n", "2", f"--basetemp={work / 'bt'}", f"--provenance-json={report}",
         *host_opencv(_shard_args(acc_dir))], capture_output=True, text=True, cwd=str(work), env=env, timeout=900)
    wheel = next((default_build(src, 'cpu') / "harness-wheel").glob("mxnet-*.whl"), None)
    return {"out": proc.stdout + proc.stderr, "rc": proc.returncode, "src": src, "acc": acc_dir,
            "report": report, "wheel": wheel}


@pytest.mark.slow
def test_sample_shards_pass_fail_and_empty_through_the_gates(sample_run):
    out = sample_run["out"]
    assert sample_run["rc"] == 1, out[-3000:]
    # The tree gate, sample_pass and sample_dnnl pass; sample_fail, sample_empty and sample_hang fail.
    assert re.search(r"=+ 3 failed, 3 passed in ", out), out[-3000:]
    assert re.search(r"^sample_dnnl +dnnl +PASS +[0-9.]+ +1 passed, 2 deselected in ", out, re.M), out[-3000:]
    assert re.search(r"^sample_pass +cpu +PASS +[0-9.]+ +3 passed in ", out, re.M), out[-3000:]
    # The failing shard: its pytest summary line and first failing test ids, not its output.
    assert "shard sample_fail (cpu): FAIL -- 2 failed, 1 passed in " in out
    assert ("first failing: tests/python/unittest/test_sample_broken.py::test_cuda_compiled_in, "
            "tests/python/unittest/test_sample_broken.py::test_sees_a_gpu") in out
    assert "first error: AssertionError: CUDA is not compiled in" in out
    # The rest of the shard's output stays in its log.
    assert "SAMPLE-WALL" not in out and "assert mx.num_gpus() > 0" not in out
    fail_log = (sample_run["acc"] / "shards" / "sample_fail.log").read_text()
    assert "SAMPLE-WALL: no GPU" in fail_log and "assert mx.num_gpus() > 0" in fail_log
    # The sample's root conftest turns "collected nothing" into exit 0, as the fork's does.
    assert "shard sample_empty (cpu): NO_TESTS -- no tests ran in" in out
    assert "shard sample_hang (cpu): INCOMPLETE -- partial: 1 passed -- timed out after 0.25 min" in out
    assert "acceptance shard sample_absent not applicable: tests/python/unittest/test_not_in_this_tree.py is absent" in out
    # A CPU wheel makes no GPU promise: the GPU shard is left out, not skipped.
    assert "sample_gpu" not in out


@pytest.mark.slow
def test_sample_shard_table_in_terminal_json_and_summary(sample_run):
    out = sample_run["out"]
    assert "Acceptance shards (the fork's tools/run_wheel_full_test.sh)" in out
    assert "2/5 shards PASS; not PASS: sample_empty, sample_fail, sample_hang" in out
    rows = {r["id"]: r for r in json.loads(sample_run["report"].read_text())["acceptance"]["shards"]}
    assert {k: rows[k]["result"] for k in rows} == {"sample_pass": "PASS", "sample_fail": "FAIL",
                                                     "sample_empty": "NO_TESTS", "sample_hang": "INCOMPLETE",
                                                     "sample_dnnl": "PASS"}
    # The hanging shard is killed at its own timeout; its -v lines say how far it got.
    hang = rows["sample_hang"]
    assert hang["reason"] == "timed out after 0.25 min" and hang["summary"] == "partial: 1 passed", hang
    assert hang["returncode"] == 124 and 15 <= hang["seconds"] < 60, hang
    p = rows["sample_pass"]
    assert p["summary"].startswith("3 passed in ") and p["lane"] == "cpu" and p["seconds"] > 0
    # -n from the data's workers, run with the venv's interpreter.
    assert "/release-venv/bin/python -m pytest tests/python/unittest/test_sample_ok.py -v -n 2" in p["command"]
    assert Path(p["log"]).read_text().rstrip().endswith("rc=0")
    summary = (sample_run["acc"] / "summary.md").read_text()
    assert "| sample_fail | cpu | FAIL | 2 failed, 1 passed in " in summary


@pytest.mark.slow
def test_gpu_shard_skips_without_gpu_and_fails_in_a_release(sample_run, gates, tmp_path):
    wheel = sample_run["wheel"]
    assert wheel is not None, sample_run["out"][-2000:]
    common = [f"--wheel={wheel}", f"--mxnet-src={sample_run['src']}", "--flavor=cuda", "--shards=sample_gpu"]
    r = gates("-m", "acceptance", *common, *_shard_args(tmp_path / "a1"), f"--basetemp={tmp_path / 'bt1'}")
    r.assert_outcomes(passed=1, skipped=1)
    r.stdout.fnmatch_lines(["*SKIPPED*the installed wheel reports mxnet num_gpus() == 0*"])
    r = gates("-m", "release and acceptance", *common, *_shard_args(tmp_path / "a2"), f"--basetemp={tmp_path / 'bt2'}")
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*release run: gate skipped, which counts as a failure (*num_gpus() == 0*"])


def test_import_check_fails_when_the_tree_shadows_the_installed_mxnet(tmp_path):
    # A real venv whose site-packages holds an "mxnet", and a source tree run from its root: the
    # shards' `python -m pytest` puts the cwd first on sys.path, so a tree with an importable
    # mxnet/ at its root (a developer's python/mxnet symlink) would test the tree, not the wheel.
    from build_steps.venv import create_venv
    venv = create_venv(tmp_path / "venv", log=tmp_path / "venv.log")
    (venv.site_packages / "mxnet").mkdir()
    (venv.site_packages / "mxnet" / "__init__.py").write_text("__version__ = 'installed'\n")
    tree = tmp_path / "tree"
    (tree / "python" / "mxnet").mkdir(parents=True)
    (tree / "python" / "mxnet" / "__init__.py").write_text("__version__ = 'source'\n")
    good = verify_installed_mxnet(venv, tree)
    assert good["problems"] == [] and good["version"] == "installed", good
    (tree / "mxnet").symlink_to(tree / "python" / "mxnet")
    bad = verify_installed_mxnet(venv, tree)
    assert bad["version"] == "source"
    assert len(bad["problems"]) == 1 and "mxnet resolved outside the venv" in bad["problems"][0], bad
