"""Issue 19, item 1: the release set is fixed data (build_steps/release_sets/<flavor>.json).

The manifests agree with the gate modules' markers (and a gate module that disagrees fails the
check); a publish run is compared with the manifest whatever trick narrowed it, and every trick
ends in the same refusal listing what did not pass; a disabled harness plugin is refused by name,
with the same message wherever the ``-p no:`` came from.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from build_steps.release_manifest import load_manifest, release_gates
from selftest.conftest import HARNESS_ROOT
from selftest.fixtures_publish import other_gates_source

PUBLISH_GATE = HARNESS_ROOT / "tests" / "test_publish.py"
REFUSAL = re.compile(r"publish refused: (\d+) of (\d+) gates of the (\w+) release set did not pass in this run "
                     r"\(the set is build_steps/release_sets/(\w+)\.json")
DISABLED = "harness plugin(s) not active: {name}. Every plugin of this harness takes part in its verdicts"


def _check(cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    return subprocess.run([sys.executable, "-m", "harness.release_set", "--check"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _harness_copy(tmp_path):
    copy = tmp_path / "harness"
    copy.mkdir()
    for name in ("conftest.py", "pytest.ini"):
        shutil.copy(HARNESS_ROOT / name, copy / name)
    for name in ("tests", "harness", "build_steps"):
        shutil.copytree(HARNESS_ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_manifests_agree_with_the_gate_modules():
    proc = _check(HARNESS_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "release manifests agree with the gate modules" in proc.stdout
    assert len(release_gates("cuda")) > len(release_gates("cpu")) > 0


def test_check_fails_when_a_gate_module_and_the_manifest_disagree(tmp_path):
    copy = _harness_copy(tmp_path)
    # A new gate in one module, a gate renamed in another (the manifest still names the old one).
    with open(copy / "tests" / "test_metadata.py", "a") as fh:
        fh.write("\n\ndef test_a_promise_nobody_listed():\n    pass\n")
    integrity = copy / "tests" / "test_wheel_integrity.py"
    integrity.write_text(integrity.read_text().replace("def test_record_hashes(", "def test_record_hashes_renamed("))
    proc = _check(copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    for flavor in ("cuda", "cpu", "macos"):
        assert (f"{flavor}: gate tests/test_metadata.py::test_a_promise_nobody_listed is in the gate modules "
                "but not in the manifest") in out
        assert f"{flavor}: gate tests/test_wheel_integrity.py::test_record_hashes is in the manifest but no " \
               "gate module has it" in out
    assert "regenerate with python -m harness.release_set --write" in out


def test_each_flavor_holds_only_its_own_gates():
    cuda, cpu, macos = (set(release_gates(f)) for f in ("cuda", "cpu", "macos"))
    assert not any("test_macho_" in g for g in cuda | cpu)
    assert "tests/test_gpu_smoke.py::test_gpu_visible" in cuda and not any(
        g.startswith(("tests/test_gpu_smoke.py", "tests/test_cublas.py")) for g in cpu)
    assert "tests/test_macho_linkage.py" in " ".join(macos) and "tests/test_cuda_linkage.py" not in " ".join(macos)
    assert not any("publish" in g for g in cuda | cpu | macos)  # the publish gate is the one that checks
    shards = {s["id"] for s in load_manifest("cuda").shards}
    assert {g for g in cuda if "test_shard[" in g} == {f"tests/test_acceptance.py::test_shard[{s}]" for s in shards}


# --------------------------------------------------------------------------------------------
# Every trick ends in the same refusal
# --------------------------------------------------------------------------------------------
def _run(pytester, repo, *args, kind="passes", cache=None, order=lambda *paths: paths):
    other = pytester.path / "test_other_gates.py"
    if not other.exists():
        other.write_text(other_gates_source(kind))
    extra = [] if cache is None else ["-p", "cacheprovider", "-o", f"cache_dir={cache}"]
    return pytester.runpytest_subprocess(
        "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT), *extra,
        *([] if cache else ["-p", "no:cacheprovider"]), *order(str(other), str(PUBLISH_GATE)),
        "--mxnet-src", str(repo.repo), "--publish", "--dry-run", "-p", "no:randomly", *map(str, args), timeout=300)


def _refusal(result, flavor="cuda") -> dict:
    """The refusal's counts and its listing: id -> verdict."""
    out = result.stdout.str()
    m = REFUSAL.search(out)
    assert m, out[-4000:]
    assert m.group(3) == m.group(4) == flavor
    listed = dict((nodeid, verdict) for verdict, nodeid in
                  re.findall(r"^  (NOT RUN|FAILED|SKIPPED|XFAILED)\s+(\S+)$", out, re.M))
    assert len(listed) == int(m.group(1)), (len(listed), m.group(0))
    return {"size": int(m.group(2)), "listed": listed}


def _refused_with_the_whole_manifest(result, repo, flavor="cuda", rc=pytest.ExitCode.TESTS_FAILED) -> dict:
    assert result.ret == rc, result.stdout.str()[-3000:]
    ref = _refusal(result, flavor)
    manifest = set(release_gates(flavor))
    assert manifest <= set(ref["listed"]), sorted(manifest - set(ref["listed"]))[:5]
    assert ref["size"] >= len(manifest)
    final = [ln for ln in result.outlines if ln.startswith("RELEASE ")][-1]
    assert f"FAIL (0/{ref['size']} gates of the {flavor} release set passed)" in final or ref["size"] > len(ref["listed"])
    assert "NOT published: publish refused" in final, final
    assert repo.local_tags() == [] and repo.remote_tags() == []
    return ref


@pytest.mark.parametrize("trick", [
    [], ["--shards", "cpu_unittest"], ["--lanes", "onnx"],
    ["--shards-file", str(HARNESS_ROOT / "selftest" / "sample_acceptance_shards.toml")],
    ["-o", "python_functions=test_publish test_gate_that_passes"],
    ["-k", "publish or gate_that_passes"], ["-m", "publish or provenance"],
], ids=["none", "shards", "lanes", "shards-file", "python_functions", "k", "m"])
def test_narrowing_options_end_in_the_same_refusal(pytester, release_repo, trick):
    result = _run(pytester, release_repo, *trick)
    ref = _refused_with_the_whole_manifest(result, release_repo)
    assert ref["listed"]["tests/test_acceptance.py::test_shard[cpu_unittest]"] == "NOT RUN"


def test_stepwise_second_run_is_refused_naming_the_gates_it_skipped(pytester, release_repo, tmp_path):
    cache = tmp_path / "cache"
    first = _run(pytester, release_repo, "--sw", kind="fails", cache=cache)
    assert first.ret == pytest.ExitCode.INTERRUPTED  # stepwise stops at the failing gate
    # The failing gate is fixed; --sw now skips what passed before and runs the rest.
    (pytester.path / "test_other_gates.py").write_text(other_gates_source("passes").replace(
        "test_gate_that_also_passes", "test_gate_that_fails"))
    second = _run(pytester, release_repo, "--sw", cache=cache)
    assert "stepwise: skipping 1 already passed items" in second.stdout.str()
    # (the refusal is the end of the run's publish row, after every gate: exit 1, not stepwise's stop)
    ref = _refused_with_the_whole_manifest(second, release_repo)
    assert ref["listed"]["::test_gate_that_passes"] == "NOT RUN"


def test_stepwise_that_leaves_out_the_publish_gate_is_not_green(pytester, release_repo, tmp_path):
    # Named first, the publish gate is among the items stepwise skips as "already passed" on the
    # second run: nothing is published, and a --publish run that did not publish fails.
    cache = tmp_path / "cache"
    publish_first = lambda other, gate: (gate, other)  # noqa: E731
    _run(pytester, release_repo, "--sw", kind="fails", cache=cache, order=publish_first)
    (pytester.path / "test_other_gates.py").write_text(other_gates_source("passes").replace(
        "test_gate_that_also_passes", "test_gate_that_fails"))
    second = _run(pytester, release_repo, "--sw", cache=cache, order=publish_first)
    assert "stepwise: skipping 2 already passed items" in second.stdout.str()
    assert second.ret == pytest.ExitCode.TESTS_FAILED, second.stdout.str()[-2000:]
    final = [ln for ln in second.outlines if ln.startswith("RELEASE ")][-1]
    assert final.endswith("FAIL (1/1 gates passed); NOT published (the publish gate did not run)"), final


def test_last_failed_run_is_refused_naming_the_gates_it_left_out(pytester, release_repo, tmp_path):
    cache = tmp_path / "cache"
    assert _run(pytester, release_repo, kind="fails", cache=cache).ret == pytest.ExitCode.TESTS_FAILED
    second = _run(pytester, release_repo, "--lf", cache=cache)
    # --lf reruns only the gate that failed: the publish gate did its part (the release was refused
    # at the end of the run, harness.plugins.finish) and is left out, so nothing is published and the run
    # is not green.
    assert "run-last-failure: rerun previous 1 failure" in second.stdout.str()
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    final = [ln for ln in second.outlines if ln.startswith("RELEASE ")][-1]
    assert final.endswith("NOT published (the publish gate did not run)"), final
    assert release_repo.local_tags() == [] and release_repo.remote_tags() == []


def test_cpu_flavor_refusal_lists_only_the_cpu_gates(pytester, release_repo, tmp_path):
    cache = tmp_path / "cache"
    first = _run(pytester, release_repo, "--flavor", "cpu", kind="fails", cache=cache)
    ref = _refused_with_the_whole_manifest(first, release_repo, flavor="cpu")
    gates = {g for g in ref["listed"] if not g.startswith("::")}
    assert gates == set(release_gates("cpu"))
    assert not any(g.startswith(("tests/test_macho_", "tests/test_gpu_smoke", "tests/test_cublas")) for g in gates)


# --------------------------------------------------------------------------------------------
# A disabled harness plugin: one message, wherever the -p no: came from
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["command line", "PYTEST_ADDOPTS", "-c ini addopts"])
@pytest.mark.parametrize("name", ["harness.plugins.collected_gates", "harness.plugins.gpu_policy", "mxnet-publish"])
def test_disabled_plugin_is_refused_by_name(pytester, release_repo, monkeypatch, where, name):
    args = ["-m", "gpu or cublas"] if name == "harness.plugins.gpu_policy" else []
    if where == "command line":
        args += ["-p", f"no:{name}"]
        result = _run(pytester, release_repo, *args)
    elif where == "PYTEST_ADDOPTS":
        monkeypatch.setenv("PYTEST_ADDOPTS", f"-p no:{name}")
        result = _run(pytester, release_repo, *args)
    else:
        ini = pytester.path / "site.ini"
        text = (HARNESS_ROOT / "pytest.ini").read_text()
        ini.write_text(text.replace("addopts = ", f"addopts = -p no:{name} ", 1))
        other = pytester.makepyfile(test_other_gates=other_gates_source("passes"))
        result = pytester.runpytest_subprocess("-c", str(ini), "--rootdir", str(HARNESS_ROOT), str(PUBLISH_GATE),
                                               str(other), "--mxnet-src", str(release_repo.repo),
                                               "--publish", "--dry-run", *args, timeout=300)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    errors = [ln for ln in result.stderr.lines if ln.startswith("ERROR: ")]
    assert errors == [f"ERROR: {DISABLED.format(name=name)} (the release set, the wheel pin, the GPU policy, "
                      f"the ledger...), so a run without one is refused; remove -p no:{name} from the command "
                      "line, PYTEST_ADDOPTS or the ini's addopts"], result.stderr.str()
    assert release_repo.local_tags() == []


def test_shards_the_forks_script_would_not_run_on_this_tree_are_excused(pytester, release_repo):
    # The tree (an MXNet layout now) has none of the shards' conditional files: the fork's own
    # script would skip those shards, so the refusal does not ask for them; every other shard it lists.
    (release_repo.repo / "python").mkdir()
    (release_repo.repo / "python" / "setup.py").write_text("")  # untracked: the tree stays clean
    ref = _refusal(_run(pytester, release_repo))
    from build_steps.acceptance.suite import load_suite
    conditional = {s.id for s in load_suite().shards if s.only_if_exists}
    assert conditional
    shard_gates = {g for g in ref["listed"] if "::test_shard[" in g}
    assert not any(f"[{sid}]" in g for g in shard_gates for sid in conditional), sorted(shard_gates)
    assert len(shard_gates) == len(load_manifest("cuda").shards) - len(conditional)
    assert ref["size"] == len(release_gates("cuda")) + 2


def test_a_new_cuda_flavor_gets_its_first_manifest_from_write_alone(tmp_path):
    """Adding a flavor is one [profiles.<name>] table and `--write` (docs/architecture.md): the first
    manifest of a new CUDA flavor needs no seed copied by hand. (The collection run's record once read
    every CUDA flavor's manifest, the new one's too, and --write failed before writing it.)"""
    copy = _harness_copy(tmp_path)
    profiles = copy / "build_steps" / "profiles.toml"
    text = profiles.read_text()
    start = text.index("[profiles.cuda]\n")
    end = text.index("[profiles.cpu]\n")
    table = text[start:end].replace("[profiles.cuda]", "[profiles.cuda_sm90]").replace(
        "[profiles.cuda.", "[profiles.cuda_sm90.")
    table = re.sub(r'(?m)^cuda_arch = .*$', 'cuda_arch = "9.0"', table, count=1)
    profiles.write_text(text + "\n" + table)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    wrote = subprocess.run([sys.executable, "-m", "harness.release_set", "--write"], cwd=copy, env=env,
                           capture_output=True, text=True, timeout=300)
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    made = copy / "build_steps" / "release_sets" / "cuda_sm90.json"
    assert made.is_file(), wrote.stdout
    assert sorted(json.loads(made.read_text())["gates"]) == sorted(release_gates("cuda"))
    checked = _check(copy)
    assert checked.returncode == 0, checked.stdout + checked.stderr
